"""The dead-scratch row reduction written straight into its destination
(pypto.ops.support.core._reduce_into_direct): same bits as the documented order, and the cases it
must leave to the general path."""
import pytest
import torch

from pypto.ops import support
from pypto.ops.support import core


def _bits(t):
    return t.view({1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def _tree_oracle(x):
    """The row tree of the documented order, element by element in Python: level by level the upper
    half is added onto the lower half (the middle element of an odd level carried), each add one
    rounding in x's dtype (a 0-d tensor op: no vector loop involved)."""
    out = torch.empty(x.shape[:-1] + (1,), dtype=x.dtype)
    for idx in torch.cartesian_prod(*[torch.arange(s) for s in x.shape[:-1]]).tolist() if x.dim() > 2 else \
            [[i] for i in range(x.shape[0])]:
        row = [x[tuple(idx)][j].clone() for j in range(x.shape[-1])]
        n = len(row)
        while n > 1:
            h = n // 2
            r = n - h
            for i in range(h):
                row[i] = row[i] + row[r + i]
            n = r
        out[tuple(idx)][0] = row[0]
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int64])
@pytest.mark.parametrize("n", [2, 3, 5, 8, 13, 128])
def test_direct_sum_is_the_tree_of_the_documented_order(dtype, n):
    g = torch.Generator().manual_seed(n)
    mem = torch.zeros(5, 2048, dtype=dtype)           # 5 cores' memories: gang views
    x = mem[:, 0:3 * n].view(5, 3, n)
    dst = mem[:, 1024:1027].view(5, 3, 1)
    if dtype.is_floating_point:
        x.copy_((torch.randn(x.shape, generator=g) * 10 ** torch.randint(-6, 7, x.shape, generator=g)).to(dtype))
        x[0, 0, 0] = float("inf")
        x[1, 1, n - 1] = float("nan")
        x[2, 2] = -0.0
    else:
        x.copy_(torch.randint(-2 ** 30, 2 ** 30, x.shape, generator=g, dtype=torch.int64).to(dtype))
    assert core._reduce_into_direct(dst, x, "sum")
    assert torch.equal(_bits(dst), _bits(core._reduce_last_reference(x, "sum", True)))
    if n <= 13:
        assert torch.equal(_bits(dst), _bits(_tree_oracle(x)))
    # through reduce_into with a dead scratch: the scratch untouched
    tmp = mem[:, 1536:1536 + 3 * n].view(5, 3, n)
    tmp.fill_(7)
    dst.fill_(1)
    support.reduce_into(dst, x, tmp, -1, "sum", clobber=False)
    assert torch.equal(_bits(dst), _bits(core._reduce_last_reference(x, "sum", True)))
    assert (tmp == 7).all()


def test_direct_sum_into_a_destination_over_its_input():
    """dst is written only after the last read of x: a result placed over the input's first column
    still gets the tree of the original values."""
    x = torch.randn(4, 8, 64)
    want = core._reduce_last_reference(x, "sum", True)
    dst = x[..., 0:1]
    assert core._reduce_into_direct(dst, x, "sum")
    assert torch.equal(_bits(dst), _bits(want))


def test_half_sums_take_the_general_path():
    x = torch.randn(4, 64).to(torch.bfloat16)
    dst = torch.zeros(4, 1, dtype=torch.bfloat16)
    assert not core._reduce_into_direct(dst, x, "sum")          # (their adds convert: layout matters)
    assert (dst == 0).all()
    support.reduce_into(dst, x, torch.zeros(4, 64, dtype=torch.bfloat16), -1, "sum", clobber=False)
    assert torch.equal(_bits(dst), _bits(core._reduce_last_reference(x, "sum", True)))


@pytest.mark.parametrize("kind", ["max", "min"])
def test_direct_extreme_and_its_fallbacks(kind):
    g = torch.Generator().manual_seed(3)
    mem = torch.zeros(6, 4096)
    x = mem[:, 0:512].view(6, 4, 128)
    dst = mem[:, 2048:2052].view(6, 4, 1)
    x.copy_(torch.randn(x.shape, generator=g) + (5 if kind == "max" else -5))
    ref = core._reduce_last_reference(x, kind, True)
    assert core._reduce_into_direct(dst, x, kind)
    assert torch.equal(_bits(dst), _bits(ref))
    # a zero extreme: the proof fails, False (the general path then writes every element of dst)
    x[2, 1] = -x[2, 1].abs() if kind == "max" else x[2, 1].abs()
    x[2, 1, 7] = -0.0
    x[2, 1, 9] = 0.0
    assert not core._reduce_into_direct(dst, x, kind)
    dst.fill_(123.0)
    support.reduce_into(dst, x, mem[:, 1024:1536].view(6, 4, 128), -1, kind, clobber=False)
    assert torch.equal(_bits(dst), _bits(core._reduce_last_reference(x, kind, True)))
    # a destination sharing bytes with the input: not taken, nothing written
    y = torch.randn(4, 128) + 5
    y_before = y.clone()
    assert not core._reduce_into_direct(y[:, 5:6], y, kind)
    assert torch.equal(y, y_before)


def _bytes(t):
    """The set of byte addresses t's elements occupy (the oracle of the disjointness test)."""
    es = t.element_size()
    idx = torch.zeros((), dtype=torch.int64)
    for n, s in zip(t.shape, t.stride()):
        idx = idx.unsqueeze(-1) + torch.arange(n) * s
    return {t.data_ptr() + int(e) * es + b for e in idx.reshape(-1).tolist() for b in range(es)}


def test_gang_views_of_two_shapes_are_disjoint_exactly_when_no_byte_is_shared():
    """numerics.cast._disjoint on gang views of different tile shapes (a reduction's [n, r, c]
    input and [n, r, 1] result): True only when no byte is shared, checked against the byte sets."""
    from pypto.numerics.cast import _disjoint
    mem = torch.zeros(5, 256)                      # 5 cores of 1 KiB
    g = torch.Generator().manual_seed(1)
    seen = {True: 0, False: 0}
    for _ in range(300):
        r1, c1, r2 = (int(v) for v in torch.randint(1, 5, (3,), generator=g))
        a0, b0 = (int(v) for v in torch.randint(0, 256 - 4 * 4, (2,), generator=g))
        a = mem[:, a0:a0 + r1 * c1].view(5, r1, c1)
        b = mem[:, b0:b0 + r2].view(5, r2, 1)
        got = _disjoint(a, b)
        truth = not (_bytes(a) & _bytes(b))
        assert got == truth or (not got and truth), (a0, r1, c1, b0, r2)   # never a wrong True
        assert got == truth                                                # and exact here
        seen[got] += 1
    assert seen[True] and seen[False]
