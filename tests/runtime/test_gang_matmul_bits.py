"""A lockstep gang's matmul (``pypto.ops.support.core.gang_matmul_into``) runs as one ``torch.bmm``
into a padded product stack only because ATen then calls, per item, the very ``sgemm`` each task's
own ``torch.matmul`` calls. Pinned two ways: the BLAS calls themselves (MKL_VERBOSE: same calls,
same arguments, no ``sgemm_batch``) and the bits, on random, subnormal, inf, NaN and -0 inputs in
several shapes, operand dtypes and thread counts, against task-by-task ``matmul_into``."""
import os
import re
import subprocess
import sys

import pytest
import torch

from pypto.ops import support
from pypto.ops.support import core


def _rows(n, shape, dtype, pad_bytes=192):
    """``[n, *shape]`` rows of a byte memory: a gang's core-memory view (items not adjacent)."""
    width = torch.empty(0, dtype=dtype).element_size()
    numel = shape[0] * shape[1]
    mem = torch.zeros(n, numel * width + pad_bytes, dtype=torch.uint8)
    return mem[:, 64:64 + numel * width].view(dtype).view(n, *shape)


def _operand(n, shape, dtype, gen):
    x = torch.randn(n, *shape, generator=gen) * torch.exp2(torch.randint(-8, 8, (n, *shape), generator=gen).float())
    flat = x.view(-1)
    pick = torch.randint(0, flat.numel(), (max(1, flat.numel() // 8),), generator=gen)
    kinds = torch.randint(0, 5, pick.shape, generator=gen)
    tiny = torch.finfo(dtype).tiny if dtype.is_floating_point else 1.0
    specials = torch.tensor([tiny / 4, -tiny / 2, float("inf"), float("nan"), -0.0])
    flat[pick] = specials[kinds]
    out = _rows(n, shape, dtype)
    out.copy_(x.to(dtype))
    return out


def _bits(t):
    return t.contiguous().view(torch.int32)


SHAPES = [(16, 128, 128), (16, 128, 64), (128, 100, 7), (64, 128, 128), (32, 64, 256), (5, 33, 17), (8, 8, 7), (7, 8, 7),
          (1, 400, 1), (128, 16, 1)]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_gang_matmul_bits_equal_task_by_task(shape, dtype, threads):
    m, k, n_ = shape
    saved = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for seed, n in ((0, 2), (1, 5), (2, 48)):
            if n == 48 and m * k * n_ > 16 * 128 * 128 or n == 48 and threads == 2:
                continue
            gen = torch.Generator().manual_seed(seed * 100 + m + k + n_)
            lhs, rhs = _operand(n, (m, k), dtype, gen), _operand(n, (k, n_), dtype, gen)
            acc = _rows(n, (m, n_), torch.float32)
            acc.copy_(torch.randn(n, m, n_, generator=gen))
            for use_acc in (False, True):
                got, want = _rows(n, (m, n_), torch.float32), _rows(n, (m, n_), torch.float32)
                support.gang_matmul_into(got, lhs, rhs, acc if use_acc else None)
                for j in range(n):
                    support.matmul_into(want[j], lhs[j], rhs[j], acc[j] if use_acc else None)
                assert torch.equal(_bits(got), _bits(want)), (shape, dtype, threads, n, use_acc)
    finally:
        torch.set_num_threads(saved)


def test_the_gate_follows_the_dispatch():
    assert not core._bmm_is_per_item_sgemm(7, 8, 7)           # 392 multiply-adds: ATen's naive bmm loop
    if not torch.backends.mkl.is_available():
        assert not core._bmm_is_per_item_sgemm(16, 128, 128)
        return
    assert core._bmm_is_per_item_sgemm(8, 8, 7) and core._bmm_is_per_item_sgemm(16, 128, 128)
    old = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("medium")                # mkldnn / reduced-precision FP32 matmuls
    try:
        assert not core._bmm_is_per_item_sgemm(16, 128, 128)
    finally:
        torch.set_float32_matmul_precision(old)


_PROBE = r"""
import os, sys, torch
from pypto.ops import support
torch.set_num_threads(int(sys.argv[1]))
m, k, n_ = 16, 128, 128
mem = torch.zeros(3, 4 * m * k + 256, dtype=torch.uint8)
lhs = mem[:, 64:64 + 2 * m * k].view(torch.bfloat16).view(3, m, k); lhs.copy_(torch.randn(3, m, k))
mem2 = torch.zeros(3, 4 * k * n_ + 256, dtype=torch.uint8)
rhs = mem2[:, 64:64 + 2 * k * n_].view(torch.bfloat16).view(3, k, n_); rhs.copy_(torch.randn(3, k, n_))
dst = torch.zeros(3, m, n_)
sys.stdout.flush(); os.write(1, b"@@task\n")
for j in range(3):
    support.matmul_into(dst[j], lhs[j], rhs[j])
sys.stdout.flush(); os.write(1, b"@@gang\n")
support.gang_matmul_into(dst, lhs, rhs)
sys.stdout.flush(); os.write(1, b"@@end\n")
"""


@pytest.mark.skipif(not torch.backends.mkl.is_available(), reason="the trace is MKL's (MKL_VERBOSE)")
@pytest.mark.parametrize("threads", [1, pytest.param(2, marks=pytest.mark.slow)])   # a process each: 2 in CI
def test_gang_matmul_makes_the_tasks_own_sgemm_calls(threads):
    env = dict(os.environ, MKL_VERBOSE="1")
    out = subprocess.run([sys.executable, "-c", _PROBE, str(threads)], env=env, capture_output=True, text=True,
                         timeout=300, check=True).stdout
    task = out.split("@@task\n")[1].split("@@gang\n")[0]
    gang = out.split("@@gang\n")[1].split("@@end\n")[0]

    def calls(text):
        # the call and its value arguments (transposes, sizes, leading dimensions), pointers dropped
        return [(name, tuple(a for a in args.split(",") if not a.startswith("0x")))
                for name, args in re.findall(r"MKL_VERBOSE (\w+)\(([^)]*)\)", text)]

    assert calls(task) == [("SGEMM", ("N", "N", "128", "16", "128", "128", "128", "128"))] * 3
    assert calls(gang) == calls(task)
    # every matrix of the gang's calls 64-byte aligned, as the task's fresh buffers are
    for args in re.findall(r"MKL_VERBOSE SGEMM\(([^)]*)\)", gang):
        a = args.split(",")
        assert all(int(a[i], 16) % 64 == 0 for i in (6, 8, 11)), args


def test_bf16_to_fp32_is_the_same_shift_in_every_loop():
    """Why a gang's BF16 operands may be converted in one call: every BF16 pattern converts to its
    bits << 16 in torch's vectorised loop, in the scalar tail of a contiguous copy (lengths below the
    vector width) and in a strided copy; FP16 is converted member by member (core._SAME_BITS_ANYWHERE)."""
    pat = torch.arange(65536, dtype=torch.int32)
    want = pat << 16
    x = pat.to(torch.int16).view(torch.bfloat16)
    assert torch.equal(x.float().view(torch.int32), want)                       # vectorised body
    two = torch.empty(65536, 2, dtype=torch.bfloat16)
    two[:, 0] = x
    strided = torch.empty(65536)
    strided.copy_(two[:, 0])
    assert torch.equal(strided.view(torch.int32), want)
    for shift in range(7):                                                      # every pattern in a tail
        rows = x.roll(shift)[: 65536 // 7 * 7].view(-1, 7)
        got = torch.empty(rows.shape)
        for r in range(rows.shape[0]):
            got[r].copy_(rows[r])
        assert torch.equal(got.view(-1).view(torch.int32), want.roll(shift)[: 65536 // 7 * 7])
