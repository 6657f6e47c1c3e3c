"""Specialisation: scalar constants, pl.RUNTIME, the compile cache key, pl.dynamic dims."""
import kernels_lang as K
import pytest
import torch
from lang_harness import check_all

import pypto.language as pl
from pypto.ir.nodes import IfStmt
from pypto.ir.types import DynDim
from pypto.ir.visit import iter_stmts
from pypto.language.program import parse
from pypto.runtime import RunConfig


def _fresh(kernel):
    kernel._cache.clear()
    return kernel


def test_each_scalar_value_is_its_own_artifact():
    k = _fresh(K.scaled)
    a = torch.randn(64, 64)
    check_all(k, (a, 2.0, torch.zeros(64, 64)), {2: a * 2.0})
    check_all(k, (a, 1.0, torch.zeros(64, 64)), {2: a + 1.0})
    c2 = k.compile(a, 2.0, torch.zeros(64, 64))
    c1 = k.compile(a, 1.0, torch.zeros(64, 64))
    assert c1 is not c2 and c1.output_dir != c2.output_dir
    assert k.cache_info() == 4  # two scalars x two platforms
    assert k.compile(a, 2.0, torch.zeros(64, 64)) is c2


def test_if_over_a_scalar_parameter_folds():
    prog = K.scaled.lower(torch.zeros(64, 64), 3.0, torch.zeros(64, 64))
    assert not any(isinstance(s, IfStmt) for f in prog.functions for s in iter_stmts(f.body))
    assert all(p.name != "s" for p in prog.entry.params)


def test_runtime_scalar_stays_a_parameter():
    k = _fresh(K.runtime_n)
    compiled = k.compile(n=pl.RUNTIME)
    assert "n" in compiled.param_names
    a = torch.randn(256, 64)
    for n in (2, 4):
        out = torch.zeros(256, 64)
        compiled(a, n, out)
        want = torch.zeros(256, 64)
        want[:n * 64] = a[:n * 64] * 2
        torch.testing.assert_close(out, want)
    assert k.cache_info() == 1


def test_runtime_in_a_real_call_is_a_type_error():
    with pytest.raises(TypeError, match="RUNTIME"):
        K.runtime_n(torch.zeros(256, 64), pl.RUNTIME, torch.zeros(256, 64))


def test_cache_key_shapes_dtypes_platform():
    k = _fresh(K.diamond)
    z = lambda *s, dt=torch.float32: torch.zeros(*s, dtype=dt)
    k.compile(z(64, 64), z(64, 64), z(64, 64), z(64, 64))
    k.compile(z(64, 64), z(64, 64), z(64, 64), z(64, 64))
    assert k.cache_info() == 1
    k.compile(z(64, 64), z(64, 64), z(64, 64), z(64, 64), config=RunConfig(platform="a5sim"))
    assert k.cache_info() == 2


def test_cache_key_shape_and_dtype():
    @pl.jit
    def any_add(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(a, a)
        return out

    any_add.compile(torch.zeros(64, 64), torch.zeros(64, 64))
    any_add.compile(torch.zeros(32, 64), torch.zeros(32, 64))
    assert any_add.cache_info() == 2
    any_add.compile(torch.zeros(32, 64, dtype=torch.float16), torch.zeros(32, 64, dtype=torch.float16))
    assert any_add.cache_info() == 3


def test_cache_key_includes_source():
    from pypto.frontend.specialize import specialize

    spec = specialize(K.diamond, (torch.zeros(64, 64),) * 4, {})
    srcs = dict(spec.key[0])
    assert set(srcs) == {"diamond", "k_scale", "k_add"}
    other = specialize(K.transitive, (torch.zeros(64, 64),) * 2, {})
    assert dict(other.key[0])["transitive"] != srcs["diamond"]


def test_dynamic_dim_does_not_recompile():
    k = _fresh(K.drive)
    for rows in (32, 96):
        x = torch.randn(rows, 64)
        for plat in ("a2a3sim", "a5sim"):
            out = torch.zeros(rows, 64)
            k(x, out, config=RunConfig(platform=plat))
            torch.testing.assert_close(out[:32], x[:32] * 2)
            assert (out[32:] == 0).all()
    assert k.cache_info() == 2  # one per platform, not per extent


def test_dynamic_dim_in_cache_key_and_printed_ir():
    from pypto.frontend.specialize import specialize

    spec = specialize(K.drive, (torch.zeros(32, 64), torch.zeros(32, 64)), {})
    assert spec.key[1][0] == ("tensor", (None, 64), "torch.float32")
    t = spec.program.entry.params[0].type
    assert t.shape == (DynDim("M"), 64)
    text = spec.program.as_python()
    assert 'M = pl.dynamic("M")' in text and "pl.Tensor[[M, 64], pl.FP32]" in text
    assert parse(text).entry.params[0].type == t
    lowered = K.drive.lower(torch.zeros(96, 64), torch.zeros(96, 64))
    assert parse(lowered.as_python()).entry.params[0].type == t


def test_dynamic_dim_rejects_bad_name():
    with pytest.raises(ValueError):
        pl.dynamic("not a name")


_EXAMPLES = __import__("pathlib").Path(__file__).resolve().parent.parent / "examples" / "language"


@pytest.mark.parametrize("name", sorted(p.stem for p in _EXAMPLES.glob("[a-z]*.py")))
def test_language_example_runs(name):
    """Each examples/language script asserts against torch on both platforms and exits 0 (its one run,
    shared with tests/test_examples.py)."""
    from inproc import run_example

    r = run_example(_EXAMPLES / f"{name}.py")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[PASS]" in r.stdout
