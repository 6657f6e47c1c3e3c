"""The ``simpler.worker.Worker`` manual dispatch of a CompiledProgram (pypto.driver.chip_surface)
gives what a direct call gives, in both calling conventions."""
import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig


@pl.jit
def mul_add(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.add(pl.mul(pl.load(a, [0, 0], [32, 32]), pl.load(b, [0, 0], [32, 32])), 1.0)
        pl.store(t, [0, 0], c)
    return c


def _compiled(a, b):
    cfg = RunConfig(platform="a2a3sim")
    mul_add(a, b, torch.zeros_like(a), config=cfg)
    return next(iter(mul_add._cache.values())), cfg


def _dispatch(compiled, *args, call_config=None):
    from simpler.worker import Worker

    w = Worker(level=2, device_id=0, platform=compiled.platform, runtime=compiled.runtime_name)
    w.init()
    try:
        orch_args, coerced, style = compiled.build_orch_args(*args, worker=w)
        cid = w.register(compiled.chip_callable)
        w.run(cid, orch_args, call_config or compiled.build_call_config())
        w.unregister(cid)
    finally:
        w.close()
    return coerced, style


def test_return_style_and_in_place():
    a, b = torch.randn(32, 32), torch.randn(32, 32)
    compiled, cfg = _compiled(a, b)
    want = a * b + 1.0
    coerced, style = _dispatch(compiled, a, b)
    assert style is True and torch.equal(coerced[compiled.output_indices[0]], want)
    c = torch.zeros(32, 32)
    coerced, style = _dispatch(compiled, a, b, c, call_config=compiled.build_call_config(cfg, aicpu_thread_num=3))
    assert style is False and coerced[2] is c and torch.equal(c, want)
    assert compiled.chip_callable is compiled.chip_callable
    assert compiled.build_call_config(cfg, aicpu_thread_num=3).aicpu_thread_num == 3
    assert isinstance(compiled.runtime_config, dict) and compiled.runtime_name


def test_refusals():
    from simpler.worker import Worker

    a, b = torch.randn(32, 32), torch.randn(32, 32)
    compiled, _ = _compiled(a, b)
    w, other = Worker(platform="a2a3sim"), Worker(platform="a2a3sim")
    w.init(); other.init()
    with pytest.raises(TypeError, match="arguments"):
        compiled.build_orch_args(a, worker=w)
    args, _, _ = compiled.build_orch_args(a, b, worker=other)
    cid = w.register(compiled.chip_callable)
    with pytest.raises(ValueError, match="not built for this worker"):
        w.run(cid, args)
    with pytest.raises(ValueError, match="not a registered"):
        w.run(cid + 1, args)
    with pytest.raises(RuntimeError, match="not initialized"):
        Worker(platform="a2a3sim").register(compiled.chip_callable)
    a5 = Worker(platform="a5sim")
    a5.init()
    with pytest.raises(ValueError, match="cannot run a program compiled for"):
        a5.register(compiled.chip_callable)
