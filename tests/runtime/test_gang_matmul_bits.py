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
shared = sys.argv[2] == "shared"
m, k, n_ = 16, 128, 128
def rows(n, shape, dtype):   # a gang's core-memory view: items 3 rows apart, 64-byte aligned
    nb = shape[0] * shape[1] * torch.empty(0, dtype=dtype).element_size()
    mem = torch.zeros(3 * n, nb + 4096, dtype=torch.uint8)
    return mem[0::3, 64:64 + nb].view(dtype).view(n, *shape)
dt = torch.float16 if shared else torch.bfloat16
lhs = rows(3, (m, k), dt); lhs.copy_(torch.randn(3, m, k))
rhs = rows(3, (k, n_), dt)
rhs.copy_(torch.randn(k, n_).expand(3, k, n_) if shared else torch.randn(3, k, n_))
# shared: the products go straight into the gang's accumulator rows; else into a contiguous stack
dst = rows(3, (m, n_), torch.float32) if shared else torch.zeros(3, m, n_)
sys.stdout.flush(); os.write(1, b"@@task\n")
for j in range(3):
    support.matmul_into(dst[j], lhs[j], rhs[j])
sys.stdout.flush(); os.write(1, b"@@gang\n")
support.gang_matmul_into(dst, lhs, rhs)
sys.stdout.flush(); os.write(1, b"@@end\n")
"""


@pytest.mark.skipif(not torch.backends.mkl.is_available(), reason="the trace is MKL's (MKL_VERBOSE)")
@pytest.mark.parametrize("threads", [1, pytest.param(2, marks=pytest.mark.slow)])   # a process each: 2 in CI
@pytest.mark.parametrize("mode", ["stack", "shared"])
def test_gang_matmul_makes_the_tasks_own_sgemm_calls(threads, mode):
    """``stack``: BF16 operands converted for the gang in one call, products into a padded stack;
    ``shared``: every task's right operand the same FP16 tile (converted once, one matrix given to
    every call) and the products straight into the gang's (non-adjacent, aligned) accumulator rows."""
    env = dict(os.environ, MKL_VERBOSE="1")
    out = subprocess.run([sys.executable, "-c", _PROBE, str(threads), mode], env=env, capture_output=True,
                         text=True, timeout=300, check=True).stdout
    task = out.split("@@task\n")[1].split("@@gang\n")[0]
    gang = out.split("@@gang\n")[1].split("@@end\n")[0]

    def calls(text):
        # the call and its value arguments (transposes, sizes, leading dimensions), pointers dropped
        return [(name, tuple(a for a in args.split(",") if not a.startswith("0x")))
                for name, args in re.findall(r"MKL_VERBOSE (\w+)\(([^)]*)\)", text)]

    assert calls(task) == [("SGEMM", ("N", "N", "128", "16", "128", "128", "128", "128"))] * 3
    assert calls(gang) == calls(task)
    # every matrix of the gang's calls 64-byte aligned, as the task's fresh buffers are
    gang_args = [args.split(",") for args in re.findall(r"MKL_VERBOSE SGEMM\(([^)]*)\)", gang)]
    for a in gang_args:
        assert all(int(a[i], 16) % 64 == 0 for i in (6, 8, 11)), a
    if mode == "shared":
        # (column-major BLAS: its first matrix is the right operand) one converted matrix for every
        # call, not a copy per item; the products at the accumulator rows' own addresses
        assert len({a[6] for a in gang_args}) == 1
        assert len({a[11] for a in gang_args}) == 3


def test_bf16_to_fp32_is_the_same_shift_in_every_loop():
    """Why a gang's BF16 operands may be converted in one call: every BF16 pattern converts to its
    bits << 16 in torch's vectorised loop, in the scalar tail of a contiguous copy (lengths below the
    vector width) and in a strided copy; FP16 only where no NaN is converted (core._NAN_PAYLOAD_ONLY)."""
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


def _plain(n, shape, dtype, gen, nan):
    """Random operands with subnormals, infs, -0 and (``nan``) NaNs of varied payloads."""
    x = torch.randn(n, *shape, generator=gen) * torch.exp2(torch.randint(-8, 8, (n, *shape), generator=gen).float())
    x = x.to(dtype)
    flat = x.view(-1)
    pick = torch.randint(0, flat.numel(), (max(1, flat.numel() // 16),), generator=gen)
    tiny = torch.finfo(dtype).tiny
    specials = [tiny / 4, -tiny / 2, float("inf"), float("-inf"), -0.0]
    flat[pick] = torch.tensor(specials, dtype=torch.float32)[torch.randint(0, len(specials), pick.shape,
                                                                           generator=gen)].to(dtype)
    if nan:
        bits = flat.view(torch.int16) if dtype != torch.float32 else flat.view(torch.int32)
        where = torch.randint(0, flat.numel(), (3,), generator=gen)
        # quiet and signalling NaNs with payloads, also in the last elements (a copy's scalar tail)
        bits[where] = torch.tensor({torch.float16: [0x7E00, 0x7C01, -0x0155],
                                    torch.bfloat16: [0x7FC0, 0x7F81, -0x003F],
                                    torch.float32: [0x7FC00000, 0x7F800001, -0x00155555]}[dtype], dtype=bits.dtype)
        bits[-1] = bits[where[0]]
    return x


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("shared", ["none", "lhs", "rhs", "both"])
def test_gang_matmul_shared_operands_and_direct_output(shared, dtype, threads):
    """Operands every task holds alike (converted once, one matrix repeated), FP16 stacks converted in
    one call (NaN-free) or member by member (with NaNs), products straight into non-adjacent aligned
    accumulator rows or through the padded stack: each task's own bits, NaN payloads included."""
    saved = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for (m, k, n_), n in (((32, 128, 256), 5), ((16, 33, 7), 3), ((5, 64, 16), 2)):
            for nan in (False, True):
                gen = torch.Generator().manual_seed(m * 7 + k + n_ + nan)
                lhs, rhs = _rows(n, (m, k), dtype), _rows(n, (k, n_), dtype)
                one_l, one_r = _plain(1, (m, k), dtype, gen, nan), _plain(1, (k, n_), dtype, gen, nan)
                lhs.copy_(one_l.expand(n, m, k) if shared in ("lhs", "both") else _plain(n, (m, k), dtype, gen, nan))
                rhs.copy_(one_r.expand(n, k, n_) if shared in ("rhs", "both") else _plain(n, (k, n_), dtype, gen, nan))
                want = torch.empty(n, m, n_)
                for j in range(n):
                    support.matmul_into(want[j], lhs[j], rhs[j])
                for direct in (True, False):
                    got = _rows(n, (m, n_), torch.float32) if direct else torch.empty(n, m, n_)
                    assert core._bmm_target(got) == direct
                    support.gang_matmul_into(got, lhs, rhs)
                    assert torch.equal(_bits(got), _bits(want)), (shared, dtype, threads, m, k, n_, nan, direct)
    finally:
        torch.set_num_threads(saved)


def test_same_items_compares_bits():
    x = _rows(4, (8, 12), torch.float16)
    x.copy_(torch.randn(8, 12).expand(4, 8, 12))
    assert core._same_items(x)
    x.view(torch.int16)[2, 7, 11] ^= 1                          # one bit of the last row of one item
    assert not core._same_items(x)
    x.view(torch.int16)[2, 7, 11] ^= 1
    x.view(torch.int16)[3, 0, 0] = 0x7E01 if x.view(torch.int16)[0, 0, 0] != 0x7E01 else 0x7E02
    assert not core._same_items(x)                              # first rows differ
    z = _rows(3, (2, 3), torch.float32)
    z.copy_(torch.tensor([[0.0, float("nan"), 1.0], [2.0, 3.0, 4.0]]).expand(3, 2, 3))
    assert core._same_items(z)                                   # NaN equals itself as bits
    z[1, 0, 0] = -0.0                                            # -0 is not 0
    assert not core._same_items(z)


def test_bmm_target_needs_aligned_non_adjacent_contiguous_items():
    assert core._bmm_target(_rows(3, (4, 16), torch.float32))
    assert not core._bmm_target(torch.empty(3, 4, 16))                      # contiguous: sgemm_batch
    assert not core._bmm_target(torch.empty(3, 4, 20)[:, :, :16])           # items not contiguous
    mem = torch.zeros(3, 1024, dtype=torch.uint8)
    assert not core._bmm_target(mem[:, 4:4 + 256].view(torch.float32).view(3, 4, 16))  # 4 bytes off
    assert not core._bmm_target(_rows(3, (4, 16), torch.float16))


def test_fp16_to_fp32_differs_only_in_nan_payloads():
    """Why a NaN-free FP16 gang operand may be converted in one call (core._NAN_PAYLOAD_ONLY): all
    65,536 patterns convert to the same bits in torch's vectorised loop, in the scalar tail of
    contiguous copies of every length up to 33, in a strided copy and in a copy split across two
    threads -- except NaNs, which stay NaN with payloads that differ between those loops."""
    pat = torch.arange(65536, dtype=torch.int32)
    x = pat.to(torch.int16).view(torch.float16)
    nan = torch.isnan(x)
    body = x.float().view(torch.int32)
    # the oracle: numpy's conversion (IEEE) for every non-NaN pattern
    import numpy as np
    want = torch.from_numpy(x.view(torch.int16).numpy().view(np.float16).astype(np.float32).view(np.int32))
    assert torch.equal(body[~nan], want[~nan])
    got = {}
    for length in range(1, 34):                                   # scalar tails of every length
        cut = 65536 // length * length
        rows = x.roll(length)[:cut].view(-1, length)
        out = torch.empty(rows.shape)
        for r in range(rows.shape[0]):
            out[r].copy_(rows[r])
        got[f"len{length}"] = (out.view(-1).view(torch.int32), pat.roll(length)[:cut])
    two = torch.empty(65536, 2, dtype=torch.float16)
    two[:, 0] = x
    strided = torch.empty(65536)
    strided.copy_(two[:, 0])
    got["strided"] = (strided.view(torch.int32), pat)
    saved = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        big = x.repeat(5)[1:]                                      # split at an odd element
        split = torch.empty(big.shape)
        split.copy_(big)
        got["threads"] = (split.view(torch.int32), pat.repeat(5)[1:])
    finally:
        torch.set_num_threads(saved)
    for name, (bits, src) in got.items():
        ok = ~nan[src.long()]
        assert torch.equal(bits[ok], want[src.long()][ok]), name
        assert bool(torch.isnan(bits[~ok].view(torch.float32)).all()), name
    # and the payloads do differ somewhere (else one call would be exact for NaNs too: see core)
    assert not torch.equal(got["len7"][0], body[got["len7"][1].long()])


def test_same_items_first_elements_then_every_bit():
    """The cheap no (items 0 and 1 differ in their first element) and the full compare behind it:
    first elements alike but a later item, a later row or a last element apart is still a no."""
    x = _rows(5, (4, 8), torch.bfloat16)
    x.copy_(torch.randn(4, 8).expand(5, 4, 8))
    assert core._same_items(x)
    bits = x.view(torch.int16)
    for where in ((1, 0, 0), (4, 0, 0), (4, 3, 7), (2, 1, 3)):
        bits[where] ^= 1
        assert not core._same_items(x), where
        bits[where] ^= 1
    assert core._same_items(x)
    assert core._same_items(x[:1]) and core._same_items(x[:2])     # one item: trivially alike
    assert core._same_items(torch.randn(4, 8).to(torch.bfloat16).expand(3, 4, 8))   # stride 0
    odd = _rows(3, (3, 5), torch.float16)                             # 15 halves: int16 compares
    odd.copy_(torch.randn(3, 5).expand(3, 3, 5))
    assert core._same_items(odd)
    odd.view(torch.int16)[2, 2, 4] ^= 1
    assert not core._same_items(odd)


def test_gang_buffer_views_are_cached_and_follow_a_grown_buffer():
    """The stacks' views are cached per (slot, n, rows, cols); a larger gang grows the buffer and the
    cached views of the old one are dropped (a smaller gang then uses the new buffer); slots never
    share memory; every item stays 64-byte aligned; the product slot stays non-contiguous."""
    rows, cols = 3, 40
    small = core._gang_buffer(1, 2, rows, cols)
    assert core._gang_buffer(1, 2, rows, cols) is small
    one, rep = core._gang_one(1, 4, rows, cols)
    assert core._gang_one(1, 4, rows, cols)[1] is rep and rep.stride(0) == 0 and rep.shape == (4, rows, cols)
    assert one.data_ptr() == small.data_ptr()
    big = core._gang_buffer(1, 100, rows, cols)                       # beyond the 48 items first allocated
    again = core._gang_buffer(1, 2, rows, cols)
    assert again is not small and again.data_ptr() == big.data_ptr()
    assert core._gang_one(1, 4, rows, cols)[0].data_ptr() == big.data_ptr()
    others = [core._gang_buffer(s, 100, rows, cols) for s in (0, 2)]
    spans = [(t.data_ptr(), t.data_ptr() + t.untyped_storage().nbytes()) for t in [big] + others]
    spans.sort()
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))      # three separate buffers
    for t in [big, again] + others:
        assert t.data_ptr() % 64 == 0 and t.stride(0) * 4 % 64 == 0 and t[0].is_contiguous()
    assert core._bmm_target(others[1]) and not others[1].is_contiguous()


def test_gang_matmul_bits_across_changing_gangs():
    """Gangs of changing sizes and shapes in one thread (the cached buffers grown, their cached views
    replaced, shared and distinct operands alternating in a slot): every product still each task's."""
    gen = torch.Generator().manual_seed(7)
    for n, (m, k, n_), shared in ((3, (16, 64, 32), "lhs"), (60, (16, 64, 32), "none"), (3, (16, 64, 32), "lhs"),
                                  (5, (4, 128, 64), "rhs"), (2, (16, 64, 32), "both"), (60, (16, 64, 32), "lhs"),
                                  (4, (16, 64, 32), "none")):
        lhs, rhs = _rows(n, (m, k), torch.bfloat16), _rows(n, (k, n_), torch.bfloat16)
        lhs.copy_(_plain(1, (m, k), torch.bfloat16, gen, True).expand(n, m, k) if shared in ("lhs", "both")
                  else _plain(n, (m, k), torch.bfloat16, gen, True))
        rhs.copy_(_plain(1, (k, n_), torch.bfloat16, gen, True).expand(n, k, n_) if shared in ("rhs", "both")
                  else _plain(n, (k, n_), torch.bfloat16, gen, True))
        acc = torch.randn(n, m, n_, generator=gen)
        for use_acc in (False, True):
            got, want = _rows(n, (m, n_), torch.float32), torch.empty(n, m, n_)
            support.gang_matmul_into(got, lhs, rhs, acc if use_acc else None)
            for j in range(n):
                support.matmul_into(want[j], lhs[j], rhs[j], acc[j] if use_acc else None)
            assert torch.equal(_bits(got), _bits(want)), (n, m, k, n_, shared, use_acc)


def test_the_gate_refuses_where_torch_will_not_tell():
    """With the mkldnn FP32 matmul precision set to bf16 the gate refuses (task by task), although
    torch then raises on the legacy ``get_float32_matmul_precision`` (legacy and per-backend settings
    mixed); the gang's products are still each task's own."""
    if not torch.backends.mkl.is_available():
        pytest.skip("the gate is MKL's")
    assert core._bmm_is_per_item_sgemm(16, 128, 128)
    torch.backends.mkldnn.matmul.fp32_precision = "bf16"
    try:
        assert not core._bmm_is_per_item_sgemm(16, 128, 128)
        gen = torch.Generator().manual_seed(3)
        lhs, rhs = _operand(3, (16, 64), torch.bfloat16, gen), _operand(3, (64, 32), torch.bfloat16, gen)
        got, want = _rows(3, (16, 32), torch.float32), torch.empty(3, 16, 32)
        support.gang_matmul_into(got, lhs, rhs)
        for j in range(3):
            support.matmul_into(want[j], lhs[j], rhs[j])
        assert torch.equal(_bits(got), _bits(want))
    finally:
        torch.backends.mkldnn.matmul.fp32_precision = "none"
    assert core._bmm_is_per_item_sgemm(16, 128, 128)


def test_same_items_views_are_cached_per_tensor_and_follow_changes():
    """_same_items' integer / numpy views are made once per operand tensor: they see its data as it
    changes, are made again for a tensor re-pointed in place (set_), and leave the cache when the
    tensor dies (they must not keep core memory alive)."""
    import gc
    x = _rows(3, (4, 8), torch.bfloat16)
    x.copy_(torch.randn(4, 8).expand(3, 4, 8))
    assert core._same_items(x)
    entry = core._ITEM_VIEWS[id(x)]
    x.view(torch.int16)[2, 3, 7] ^= 1                                  # data changed: seen
    assert not core._same_items(x) and core._ITEM_VIEWS[id(x)] is entry
    x.view(torch.int16)[2, 3, 7] ^= 1
    assert core._same_items(x)
    y = _rows(3, (4, 8), torch.bfloat16)
    y.copy_(torch.randn(3, 4, 8))
    x.set_(y.untyped_storage(), y.storage_offset(), y.shape, y.stride())   # re-pointed: views made again
    assert not core._same_items(x) and core._ITEM_VIEWS[id(x)] is not entry
    y.copy_(y[0].expand(3, 4, 8).clone())
    assert core._same_items(x)
    key = id(x)
    del x, entry
    gc.collect()
    assert key not in core._ITEM_VIEWS


def test_same_items_of_empty_operands():
    assert core._same_items(torch.empty(0, 4, 8, dtype=torch.bfloat16))
    assert core._same_items(torch.empty(3, 0, 8, dtype=torch.float16))


TRANSPOSED_SHAPES = [(4, 128, 128), (16, 128, 128), (1, 128, 128), (2, 33, 200), (3, 100, 77), (16, 64, 256), (5, 33, 17)]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("which", ["rhs", "lhs", "both"])
@pytest.mark.parametrize("shape", TRANSPOSED_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_transposed_operands_give_the_materialised_operands_bits(shape, which, threads):
    """A cube operand passed as a transposed view of its natural tile (the kernel generator's form of
    a transpose_view staged for the matmul, pypto.codegen.scratch.fused_transposes): task by task and
    as a gang (distinct items, and one item every member holds alike), the bits of the product of
    the materialised transposed tile (what the moved tile held), NaN payloads, infs, subnormals and
    -0 included; on shapes whose BLAS call with the transposed flag sums otherwise (M < 4 here) too,
    where the operand is materialised (core._transposed_same_bits)."""
    m, k, n_ = shape
    saved = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for n, shared, nan in ((3, False, False), (5, False, True), (4, True, True)):
            gen = torch.Generator().manual_seed(m + k + n_ + n)
            ta, tb = which in ("lhs", "both"), which in ("rhs", "both")
            ops = []
            for (r, c), t in (((m, k), ta), ((k, n_), tb)):
                nat = _rows(n, (c, r) if t else (r, c), torch.bfloat16)
                one = _plain(1, nat.shape[1:], torch.bfloat16, gen, nan)
                nat.copy_(one.expand(nat.shape) if shared else _plain(n, nat.shape[1:], torch.bfloat16, gen, nan))
                view = nat.transpose(-2, -1) if t else nat
                mat = _rows(n, (r, c), torch.bfloat16)
                mat.copy_(view)
                ops.append((view, mat))
            (lv, lm), (rv, rm) = ops
            want = torch.empty(n, m, n_)
            for j in range(n):
                support.matmul_into(want[j], lm[j], rm[j])   # the materialised tiles: today's form
            got = _rows(n, (m, n_), torch.float32)
            support.gang_matmul_into(got, lv, rv)
            assert torch.equal(_bits(got), _bits(want)), (shape, which, threads, n, shared, nan)
            for j in range(n):
                one = torch.empty(m, n_)
                support.matmul_into(one, lv[j], rv[j])
                assert torch.equal(_bits(one), _bits(want[j])), (shape, which, threads, j)
    finally:
        torch.set_num_threads(saved)


def test_transposed_layout_and_the_probe():
    """``_transposed`` recognises a transposed contiguous matrix (and a gang of them), not a vector or
    a natural tile; the probe's verdict is cached per shape and settings, and a refused shape
    materialises the operand (the same bits). On this build's MKL the Qwen3 decode layer's ``q @ k^T``
    shape takes the transposed call (the point of it); M = 1 does not."""
    x = torch.zeros(3, 8, 16)
    assert core._transposed(x.transpose(-2, -1)) and core._transposed(x[0].t())
    assert not core._transposed(x) and not core._transposed(torch.zeros(1, 8).t()) \
        and not core._transposed(torch.zeros(8, 1).t())
    if torch.backends.mkl.is_available() and torch.get_float32_matmul_precision() == "highest":
        assert core._transposed_same_bits(4, 128, 128, False, True)
        assert not core._transposed_same_bits(1, 128, 128, False, True)
    key = next(iter(core._TRANSPOSED_SAME))
    assert isinstance(core._TRANSPOSED_SAME[key], bool)
    saved = dict(core._TRANSPOSED_SAME)
    calls = []
    orig = core._probe_transposed
    try:
        core._TRANSPOSED_SAME.clear()
        core._probe_transposed = lambda *a: calls.append(a) or False
        gen = torch.Generator().manual_seed(5)
        nat = _plain(4, (128, 128), torch.bfloat16, gen, True)
        lhs = _plain(4, (4, 128), torch.bfloat16, gen, True)
        got, want = torch.empty(4, 4, 128), torch.empty(4, 4, 128)
        support.gang_matmul_into(got, lhs, nat.transpose(-2, -1))
        support.gang_matmul_into(got, lhs, nat.transpose(-2, -1))
        for j in range(4):
            support.matmul_into(want[j], lhs[j], nat[j].t().contiguous())
        assert torch.equal(_bits(got), _bits(want))
        assert calls == [(4, 128, 128, False, True)]   # once: cached
    finally:
        core._probe_transposed = orig
        core._TRANSPOSED_SAME.clear()
        core._TRANSPOSED_SAME.update(saved)
