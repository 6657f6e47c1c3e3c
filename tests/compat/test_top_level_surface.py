"""Top-level names of ``pypto`` and the ``pypto.pypto_core`` adapters."""
import pytest

import pypto
from pypto.errors import PyptoError


def test_dtypes():
    from pypto import DT_BF16, DT_FP32, DataType
    import pypto.language as pl

    assert DT_FP32 is pl.FP32 and DataType.FP32 is pl.FP32 and DT_BF16 is pl.BF16 and pypto.DT_INDEX is pl.INDEX
    assert isinstance(pl.FP16, DataType)
    # the low-precision types exist too (issue 15)
    assert pypto.DT_FP4 is pl.FP4 and pypto.DT_FP8E4M3FN is pl.FP8E4M3FN and DataType.HF8 is pl.HF8
    with pytest.raises(AttributeError):
        pypto.DT_FP64  # noqa: B018 - the reference reserves FP64; neither has it


def test_log_levels_and_output(capsys):
    old = pypto.get_log_level()
    try:
        pypto.set_log_level(pypto.LogLevel.ERROR)
        assert pypto.get_log_level() is pypto.LogLevel.ERROR
        pypto.log_warn("hidden")
        pypto.log_error("shown")
        from pypto.pypto_core import _clear_thread_log_level, _set_thread_log_level

        _set_thread_log_level(pypto.LogLevel.DEBUG)
        pypto.log_debug("thread-level")
        assert pypto.get_log_level() is pypto.LogLevel.ERROR  # the thread override does not show here
        _clear_thread_log_level()
        pypto.log_info("hidden again")
    finally:
        pypto.set_log_level(old)
    err = capsys.readouterr().err
    assert "shown" in err and "thread-level" in err and "hidden" not in err
    with pytest.raises(ValueError, match="unknown log level"):
        pypto.set_log_level("LOUD")


def test_checks():
    pypto.check(True, "fine")
    with pytest.raises(ValueError, match="bad input"):
        pypto.check(False, "bad input")
    with pytest.raises(pypto.InternalError) as ei:
        pypto.internal_check(False, "broken invariant")
    assert isinstance(ei.value, RuntimeError) and isinstance(ei.value, PyptoError)
    assert issubclass(pypto.InternalError, pypto.Error)


def test_subpackages_as_attributes():
    assert pypto.testing.assert_close is not None
    assert pypto.pypto_core.passes.MemoryPlanner.PTOAS.name == "PTOAS"
    assert pypto.pypto_core.backend.BackendType is pypto.backend.BackendType
    assert pypto.pypto_core.ir.IRMutator is pypto.ir.IRMutator
    with pytest.raises(AttributeError, match="no counterpart"):
        pypto.pypto_core.codegen  # noqa: B018
    from pypto.pypto_core import testing

    with pytest.raises(pypto.InternalError) as ei:
        testing.raise_internal_error_with_span("at a place", "k.py", 3, 4)
    assert str(ei.value).startswith("k.py:3:") and "at a place" in str(ei.value)
