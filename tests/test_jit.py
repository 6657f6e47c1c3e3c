"""The @pl.jit compile cache: one compile per (signature, platform)."""
import torch

import kernels as K
import pypto.language as pl
from pypto.runtime import RunConfig


def test_same_shapes_compile_once():
    k = pl.jit(K.bare_add.fn)  # a fresh JITFunction: an empty cache
    assert k.cache_info() == 0
    a, b = torch.randn(16, 32), torch.randn(16, 32)
    out = torch.zeros(16, 32)
    k(a, b, out)
    assert k.cache_info() == 1
    first = k.compile(a, b, out)
    out2 = torch.zeros(16, 32)
    k(torch.randn(16, 32), torch.randn(16, 32), out2)
    assert k.cache_info() == 1
    assert k.compile(a, b, out) is first
    torch.testing.assert_close(out, a + b)


def test_other_shape_compiles_again():
    k = pl.jit(K.bare_add.fn)
    k(torch.randn(16, 32), torch.randn(16, 32), torch.zeros(16, 32))
    k(torch.randn(32, 32), torch.randn(32, 32), torch.zeros(32, 32))
    assert k.cache_info() == 2
    k(torch.randn(32, 32), torch.randn(32, 32), torch.zeros(32, 32))
    assert k.cache_info() == 2


def test_other_dtype_compiles_again():
    k = pl.jit(K.bare_add.fn)
    k(torch.randn(16, 32), torch.randn(16, 32), torch.zeros(16, 32))
    h = torch.randn(16, 32).half()
    out = torch.zeros(16, 32).half()
    k(h, h, out)
    assert k.cache_info() == 2
    assert torch.equal(out, h + h)


def test_other_platform_compiles_again():
    k = pl.jit(K.add.fn)
    a, b = torch.randn(128, 128), torch.randn(128, 128)
    out = torch.zeros(128, 128)
    k(a, b, out, config=RunConfig(platform="a2a3sim"))
    assert k.cache_info() == 1
    k(a, b, out, config=RunConfig(platform="a5sim"))
    assert k.cache_info() == 2
    k(a, b, out, config=RunConfig(platform="a5sim"))
    assert k.cache_info() == 2
    torch.testing.assert_close(out, a + b)


def test_lower_does_not_touch_cache():
    k = pl.jit(K.add.fn)
    k.lower(torch.zeros(128, 128), torch.zeros(128, 128), torch.zeros(128, 128))
    assert k.cache_info() == 0


def test_lower_reuses_this_process_build_only_under_the_same_settings(monkeypatch):
    """lower() after compile() of the same signature returns that build's lowered program without
    running the pipeline again; another platform or verification level runs it (and gives an equal
    program where nothing differs)."""
    from pypto.driver import build
    from pypto.ir import structural_equal
    from pypto.passes.manager import VerificationLevel

    k = pl.jit(K.add.fn)
    args = (torch.zeros(128, 128), torch.zeros(128, 128), torch.zeros(128, 128))
    compiled = k.compile(*args)
    runs = []
    real = build.run_pipeline
    monkeypatch.setattr(build, "run_pipeline", lambda *a, **kw: runs.append(1) or real(*a, **kw))
    assert k.lower(*args) is compiled.lowered and runs == []
    a5 = k.lower(*args, config=RunConfig(platform="a5sim"))
    assert runs == [1] and a5 is not compiled.lowered
    again = k.lower(*args, config=RunConfig(verification_level=VerificationLevel.NONE))
    assert runs == [1, 1] and again is not compiled.lowered
    assert structural_equal(again, compiled.lowered)


def test_signature_mode_shares_cache_with_matching_call():
    k = pl.jit(K.add.fn)
    compiled = k.compile()
    assert k.cache_info() == 1
    k(torch.randn(128, 128), torch.randn(128, 128), torch.zeros(128, 128))
    assert k.cache_info() == 1
    assert k.compile() is compiled
