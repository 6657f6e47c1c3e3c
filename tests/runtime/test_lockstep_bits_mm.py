"""Lockstep gangs must not change a bit of the matmul variants (matmul_bias, gemv, gemv_acc,
gemv_bias, batch_matmul, batch_matmul_acc): many independent tasks, each on its own row block, run
with ``sim_lockstep`` off and on under one seed, outputs compared bit for bit (helpers and the
``threads`` fixture of test_lockstep_bits); inputs carry NaN, inf and -0. A loose check against
torch shows each computes the intended product."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from test_lockstep_bits import close, run_both, threads  # noqa: F401  (threads: the fixture)

# the gang record and its check run in one process (pytest-xdist: --dist loadgroup, scripts/test.sh);
# the autouse fixture notes each test as run (tests/runtime/lockstep_record.py)
pytestmark = pytest.mark.xdist_group("lockstep_record")
from lockstep_record import lockstep_recorder_ran  # noqa: E402,F401

FP32, FP16, BF16 = torch.float32, torch.float16, torch.bfloat16


@pl.jit
def k_mm_variants(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, n: pl.INDEX, m: pl.INDEX, k: pl.INDEX,
                  w: pl.INDEX, o_bias: pl.Out[pl.Tensor], o_gemv: pl.Out[pl.Tensor], o_gacc: pl.Out[pl.Tensor],
                  o_gbias: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            ta = pl.load(a, [i * m, 0], [m, k], target_memory=pl.Mem.Mat)
            tb = pl.load(b, [0, 0], [k, w], target_memory=pl.Mem.Mat)
            tc = pl.load(bias, [i, 0], [1, w], target_memory=pl.Mem.Mat)
            o_bias = pl.store(pl.matmul_bias(ta, tb, tc), [i * m, 0], o_bias)
            r = pl.load(a, [i * m, 0], [1, k], target_memory=pl.Mem.Mat)
            g = pl.tile.gemv(r, tb, acc_phase="partial")
            o_gemv = pl.store(g, [i, 0], o_gemv)
            r2 = pl.load(a, [i * m + 1, 0], [1, k], target_memory=pl.Mem.Mat)
            o_gacc = pl.store(pl.tile.gemv_acc(g, r2, tb, acc_phase="final"), [i, 0], o_gacc)
            o_gbias = pl.store(pl.gemv_bias(r2, tb, tc), [i, 0], o_gbias)
    return o_bias, o_gemv, o_gacc, o_gbias


@pl.jit
def k_bmm(a: pl.Tensor, b: pl.Tensor, n: pl.INDEX, m: pl.INDEX, k: pl.INDEX, w: pl.INDEX,
          o: pl.Out[pl.Tensor], o_acc: pl.Out[pl.Tensor]):
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            ta = pl.load(a, [i * 2, 0, 0], [2, m, k], target_memory=pl.Mem.Mat)
            tb = pl.load(b, [0, 0, 0], [2, k, w], target_memory=pl.Mem.Mat)
            c = pl.batch_matmul(ta, tb)
            o = pl.store(c, [i * 2, 0, 0], o)
            o_acc = pl.store(pl.tile.batch_matmul_acc(c, ta, tb), [i * 2, 0, 0], o_acc)
    return o, o_acc


def _inputs(seed, dtype, shape):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g).to(dtype)
    flat = x.view(-1)
    flat[3], flat[40], flat[77] = float("nan"), float("inf"), -0.0
    return x


@pytest.mark.parametrize("dtype", (FP16, BF16, FP32), ids=str)
def test_matmul_bias_and_gemv(threads, dtype):
    n, m, k, w = 32, 16, 128, 32
    a, b = _inputs(31, dtype, (n * m, k)), _inputs(32, dtype, (k, w))
    bias = _inputs(33, FP32, (n, w))

    def call(cfg):
        outs = [torch.zeros(n * m, w), torch.zeros(n, w), torch.zeros(n, w), torch.zeros(n, w)]
        k_mm_variants(a, b, bias, n, m, k, w, *outs, config=cfg)
        return outs

    (ob, og, oa, obb), _, _ = run_both(call)
    af, bf = a.float(), b.float()
    close(ob, af @ bf + bias.repeat_interleave(m, 0), 1e-3)
    close(og, af[::m] @ bf, 1e-3)
    close(oa, af[::m] @ bf + af[1::m] @ bf, 1e-3)
    close(obb, af[1::m] @ bf + bias, 1e-3)


@pytest.mark.parametrize("dtype", (FP16, FP32), ids=str)
def test_batch_matmul(threads, dtype):
    n, m, k, w = 24, 16, 32, 16
    a, b = _inputs(34, dtype, (2 * n, m, k)), _inputs(35, dtype, (2, k, w))

    def call(cfg):
        outs = [torch.zeros(2 * n, m, w), torch.zeros(2 * n, m, w)]
        k_bmm(a, b, n, m, k, w, *outs, config=cfg)
        return outs

    (o, oa), _, _ = run_both(call)
    want = a.float() @ b.float().repeat(n, 1, 1)
    close(o, want, 1e-3)
    close(oa, want + want, 1e-3)
