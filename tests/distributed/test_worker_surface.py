"""DistributedWorker's explicit surface: ``register(compiled)`` handles, ``run(compiled, ...)``, the
ambiguity of ``worker(*args)`` with several programs, resident tensors freed by ``close()``, and a
card-resident DeviceTensor passed to ``@pl.jit`` per-rank programs (a KV cache shared by two
programs)."""
import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.runtime import DistributedWorker, RunConfig

from tests.distributed import kernels_dist as K
from tests.distributed.kernels_dist import N

T = 32


@pl.jit.incore
def _write(p: pl.Tensor, kv: pl.Out[pl.Tensor]):
    t = pl.load(p, [0, 0], [T, T])
    return pl.store(pl.mul(t, 3.0), [0, 0], kv)


@pl.jit
def _write_chip(p: pl.Tensor, kv: pl.Out[pl.Tensor]):
    return _write(p, kv)


@pl.jit.host
def fill(p: pl.Tensor, kv: pl.Out[pl.Tensor]):
    return _write_chip(p, kv)


@pl.jit.incore
def _read(x: pl.Tensor, kv: pl.Tensor, o: pl.Out[pl.Tensor]):
    return pl.store(pl.sub(pl.load(kv, [0, 0], [T, T]), pl.load(x, [0, 0], [T, T])), [0, 0], o)


@pl.jit
def _read_chip(x: pl.Tensor, kv: pl.Tensor, o: pl.Out[pl.Tensor]):
    return _read(x, kv, o)


@pl.jit.host
def use(x: pl.Tensor, kv: pl.Tensor, o: pl.Out[pl.Tensor]):
    return _read_chip(x, kv, o)


def test_register_run_and_close():
    compiled = ir.compile(K.ProgramWithSubWorker, platform="a2a3sim", distributed_config=DistributedConfig(device_ids=[0, 1]))
    x, y, seen = torch.randn(2, 1, N), torch.zeros(2, 1, N), torch.zeros(1)
    rt = compiled.prepare()
    w = rt.alloc_tensor((4, 4), torch.float32, worker_id=1)
    assert len(rt._owned_tensors) == 1
    h = rt.register(compiled)
    assert h.compiled is compiled and not h.closed
    h(x, y, seen)
    assert torch.equal(y, x * 2.0)
    y.zero_()
    rt.run(compiled, x, y, seen)
    assert torch.equal(y, x * 2.0)
    other = ir.compile(K.ProgramWithSubWorker, platform="a2a3sim", distributed_config=DistributedConfig(device_ids=[0, 1]))
    with pytest.raises(ValueError, match="was not prepared"):
        rt.register(other)
    rt.close()
    assert rt._owned_tensors == [] and h.closed and w is not None
    with pytest.raises(RuntimeError, match="called after close"):
        rt.register(compiled)
    with pytest.raises(RuntimeError, match="called after close"):
        h(x, y, seen)


def test_two_programs_share_a_resident_tensor():
    cfg = RunConfig(platform="a2a3sim", distributed_config=DistributedConfig(device_ids=[0]))
    p, x, o = torch.randn(T, T), torch.randn(T, T), torch.zeros(T, T)
    fill_c = fill.compile(p, torch.zeros(T, T), config=cfg)
    use_c = use.compile(x, torch.zeros(T, T), o, config=cfg)
    rt = DistributedWorker([fill_c, use_c])
    try:
        with pytest.raises(TypeError, match="ambiguous"):
            rt(p, o)
        kv = rt.alloc_tensor((T, T), torch.float32)
        rt.run(fill_c, p, kv)
        for step in range(2):
            xs = x + step
            rt.run(use_c, xs, kv, o)
            assert torch.equal(o, p * 3.0 - xs)
    finally:
        rt.close()
    assert rt._owned_tensors == []


def test_the_reference_constructor_keywords_are_checked_never_ignored():
    cfg = RunConfig(platform="a2a3sim", distributed_config=DistributedConfig(device_ids=[0]))
    fill_c = fill.compile(torch.randn(T, T), torch.zeros(T, T), config=cfg)
    keep = torch.zeros(2)
    rt = DistributedWorker(fill_c, inherited_host_tensors=[keep], startup_timeout_s=5.0, persistent=True,
                           reset_persistent_windows=True)
    assert rt.inherited_host_tensors == (keep,) and rt.persistent and rt.reset_persistent_windows
    rt.close()
    # persistent workers reset their kept windows by default (the reference's rule); a reset
    # without persistence is its ValueError (tests/distributed/test_persistent_windows.py)
    rt = DistributedWorker(fill_c, persistent=True)
    assert rt.reset_persistent_windows
    rt.close()
    with pytest.raises(ValueError, match="requires persistent=True"):
        DistributedWorker(fill_c, reset_persistent_windows=True)
    with pytest.raises(TypeError, match="inherited_host_tensors"):
        DistributedWorker(fill_c, inherited_host_tensors=[1.0])
    with pytest.raises(TypeError, match="unexpected keyword"):
        DistributedWorker(fill_c, presistent=True)   # a typo is an error, not a silently ignored option
    with pytest.raises(TypeError, match="not both"):
        DistributedWorker(fill_c, callbacks={"x": print}, sub_worker_overrides={"x": print})
