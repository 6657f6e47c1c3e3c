"""User errors leave the public entry points without the compiler's frames (issue 19)."""
import traceback

import pytest
import torch

import pypto.language as pl
from pypto.errors import InternalError, InvalidOperationError
from pypto.tracebacks import strip, user_facing


@pl.jit
def adds_a_string(a: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 32])
        u = pl.add(t, "x")
        out = pl.store(u, [0, 0], out)
    return out


def _files(e: BaseException) -> list[str]:
    return [f.filename for f in traceback.extract_tb(e.__traceback__)]


@pytest.mark.parametrize("entry", ["call", "compile", "lower"])
def test_a_user_error_keeps_only_user_frames_and_the_entry(entry, monkeypatch):
    monkeypatch.delenv("PYPTO_TRACEBACK", raising=False)
    args = (torch.ones(16, 32), torch.zeros(16, 32))
    fn = {"call": adds_a_string, "compile": adds_a_string.compile, "lower": adds_a_string.lower}[entry]
    with pytest.raises(InvalidOperationError) as e:
        fn(*args)
    files = _files(e.value)
    assert files[0] == __file__
    assert [f for f in files if f != __file__] == [strip.__code__.co_filename], files
    assert e.value.__cause__ is None and e.value.__suppress_context__
    # the message itself still locates the kernel line with a caret
    assert 'u = pl.add(t, "x")' in str(e.value) and "^^^" in str(e.value)


def test_pypto_traceback_full_keeps_every_frame(monkeypatch):
    monkeypatch.setenv("PYPTO_TRACEBACK", "full")
    with pytest.raises(InvalidOperationError) as e:
        adds_a_string(torch.ones(16, 32), torch.zeros(16, 32))
    assert any("/pypto/frontend/" in f for f in _files(e.value))


def test_an_internal_error_keeps_every_frame(monkeypatch):
    monkeypatch.delenv("PYPTO_TRACEBACK", raising=False)

    def deep():
        raise InternalError("a bug of ours")

    with pytest.raises(InternalError) as e:
        user_facing(deep)()
    assert any(f.name == "deep" for f in traceback.extract_tb(e.value.__traceback__))


def test_other_exceptions_pass_through_untouched():
    def boom():
        raise ValueError("not ours to filter")

    with pytest.raises(ValueError) as e:
        user_facing(boom)()
    assert any(f.name == "boom" for f in traceback.extract_tb(e.value.__traceback__))
