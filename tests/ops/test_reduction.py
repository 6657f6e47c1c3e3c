"""Reductions (row_* / col_* sum max min): order, padding, sim == reference, error bounds, errors.

Orders (``pypto/ops/reduction.py``): with a tmp tile a binary tree (pairwise halving, odd middle
element carried), without one sequential left to right; the tensor level is sequential. The
oracles below re-implement both orders independently in numpy float32 (no float64).

Bounds of the reference against float64 (the exact sum ``S`` of the tile's elements, ``A`` the
sum of their magnitudes, ``u`` the unit roundoff of the dtype: 2**-24 FP32, 2**-11 FP16, 2**-8
BF16), the classical a-priori bounds of recursive summation (Higham, Accuracy and Stability of
Numerical Algorithms, §4.2), each addition rounding once to the dtype:

* sequential, ``n`` terms: ``|ref - S| <= gamma(n - 1) * A``
* tree, ``n`` terms: ``|ref - S| <= gamma(ceil(log2 n)) * A``
* with ``gamma(k) = k u / (1 - k u)``; plus half an ULP of the final rounding for the test's
  comparison of the float64 value with the dtype result (included in ``gamma``'s ``k`` + 1).
* max / min: exact (0 ULP): the result is an element of the (padded) tile.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import kernels_red as K
from kernel_templates import filename
import ops_harness as H
from pypto.errors import InvalidOperationError
from pypto.ir import structural_equal
from pypto.language import parse

OPS = tuple(f"{f}_{k}" for f in ("row", "col") for k in ("sum", "max", "min"))
COVERED_OPS = {f"{lvl}.{op}" for lvl in ("tensor", "tile") for op in OPS}
DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int32)
UNIT = {torch.float32: 2.0 ** -24, torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}


def _data(seed, shape, dtype):
    if dtype == torch.int32:
        return H.make_data(seed, shape, dtype, "int")
    return H.make_data(seed, shape, dtype, "normal")


def _out_shape(op, shape):
    return (shape[0], 1) if op.startswith("row") else (1, shape[1])


def _check(kernel, args, platform):
    sim = H.run_sim(kernel, args, platform)[-1]
    ref = H.run_ref(kernel, args)[-1]
    H.assert_same_bits(sim, ref, f"{kernel.__name__} on {platform}")
    return ref


# -- independent numpy float32 oracles ---------------------------------------------------------

_NP = {"sum": np.add, "max": np.maximum, "min": np.minimum}


def np_sequential(x: np.ndarray, kind: str) -> np.ndarray:
    """Left to right along the last axis, in x's dtype (numpy rounds every op to float32)."""
    f = _NP[kind]
    acc = x[:, 0].copy()
    for j in range(1, x.shape[1]):
        acc = f(acc, x[:, j])
    return acc


def np_tree(x: np.ndarray, kind: str) -> np.ndarray:
    """Pairwise halving: the upper half onto the lower half, an odd middle element carried."""
    f = _NP[kind]
    cur = [x[:, j].copy() for j in range(x.shape[1])]
    while len(cur) > 1:
        n = len(cur)
        h = n // 2
        nxt = [f(cur[i], cur[n - h + i]) for i in range(h)]
        if n % 2:
            nxt.append(cur[h])
        cur = nxt
    return cur[0]


def np_pairs_tree(x: np.ndarray, kind: str) -> np.ndarray:
    """The column tree (pto-isa TCOLSUM with tmp): adjacent pairs ``2i, 2i+1``; an odd level's
    last element is added onto the first result; ``n -> n // 2``."""
    f = _NP[kind]
    cur = [x[:, j].copy() for j in range(x.shape[1])]
    while len(cur) > 1:
        n = len(cur)
        nxt = [f(cur[2 * i], cur[2 * i + 1]) for i in range(n // 2)]
        if n % 2:
            nxt[0] = f(nxt[0], cur[n - 1])
        cur = nxt
    return cur[0]


def test_oracles_differ_from_each_other():
    """The two oracles are different orders (otherwise the order tests below prove nothing)."""
    x = np.array([[1.0, 2.0 ** -24, 2.0 ** -24, 2.0 ** -24]], dtype=np.float32)
    # sequential: each tiny term is lost against 1.0; tree: (1 + t) + (t + t) keeps 2t
    assert np_sequential(x, "sum")[0] == np.float32(1.0)
    assert np_tree(x, "sum")[0] > np.float32(1.0)


# -- (b) order: 4096-wide FP32 row sums ---------------------------------------------------------

WIDE_SEED = 0  # deterministic; the test asserts that the two orders differ on this input


def test_wide_row_sum_orders_differ_and_match_oracles():
    x = H.make_data(WIDE_SEED, (4, 4096), torch.float32)
    out = torch.zeros(4, 1)
    xn = x.numpy()
    for platform in H.PLATFORMS:
        tree = _check(K.wide_tree_row_sum, [x, out], platform)
        seq = _check(K.wide_seq_row_sum, [x, out], platform)
        H.assert_same_bits(tree[:, 0], torch.from_numpy(np_tree(xn, "sum")), "tree vs numpy tree oracle")
        H.assert_same_bits(seq[:, 0], torch.from_numpy(np_sequential(xn, "sum")), "seq vs numpy sequential oracle")
        assert not torch.equal(H.bits(tree), H.bits(seq)), "tree and sequential sums agree on every row"
    # the tensor-level form is the sequential order
    t = _check(K.t_row_sum, [x, out], "a2a3sim")
    H.assert_same_bits(t[:, 0], torch.from_numpy(np_sequential(xn, "sum")), "tensor row_sum is sequential")
    # and both stay within their bounds of the exact sum
    exact = x.double().sum(1)
    mag = x.double().abs().sum(1)
    u = UNIT[torch.float32]
    for got, k in ((tree[:, 0], math.ceil(math.log2(4096))), (seq[:, 0], 4095)):
        g = (k + 1) * u / (1 - (k + 1) * u)
        assert ((got.double() - exact).abs() <= g * mag).all()


@pytest.mark.parametrize("op", OPS)
def test_tile_orders_match_oracles_fp32(op):
    """Every op, both orders, on a [16, 64] FP32 tile: equal to the numpy oracle of its order."""
    x = H.make_data(7, (16, 64), torch.float32, "wide" if not op.endswith("sum") else "normal")
    s = torch.zeros(16, 64)
    out = torch.zeros(_out_shape(op, (16, 64)))
    kind = op.split("_")[1]
    xn = x.numpy() if op.startswith("row") else x.numpy().T.copy()
    for platform in H.PLATFORMS:
        tree = _check(getattr(K, "tree_" + op), [x, s, out], platform).flatten()
        seq = _check(getattr(K, "seq_" + op), [x, out], platform).flatten()
        oracle = np_tree if op.startswith("row") else np_pairs_tree
        H.assert_same_bits(tree, torch.from_numpy(oracle(xn, kind)), f"{op} tree")
        H.assert_same_bits(seq, torch.from_numpy(np_sequential(xn, kind)), f"{op} sequential")


def test_odd_widths_carry_the_middle_element():
    """Widths 40 -> 20 -> 10 -> 5 -> 3: the odd levels of the row tree carry the middle element;
    the column tree (40 -> 20 -> 10 -> 5 -> 2 -> 1) folds an odd level's last row onto its first."""
    x = H.make_data(33, (8, 40), torch.float32, "normal")  # 6 of 8 rows depend on the carry
    for platform in H.PLATFORMS:
        got = _check(K.odd_tree_row_sum, [x, torch.zeros(8, 1)], platform)
        H.assert_same_bits(got[:, 0], torch.from_numpy(np_tree(x.numpy(), "sum")), "odd row tree")
        got = _check(K.odd_tree_col_sum, [x.T.contiguous(), torch.zeros(1, 8)], platform)
        H.assert_same_bits(got[0], torch.from_numpy(np_pairs_tree(x.numpy(), "sum")), "odd col tree")
        assert not torch.equal(got[0], torch.from_numpy(np_tree(x.numpy(), "sum"))), "the orders agree here"


def test_larger_tmp_tile_gives_the_tree_result():
    x = H.make_data(3, (16, 64), torch.float32)
    out = torch.zeros(16, 1)
    for platform in H.PLATFORMS:
        a = _check(K.big_tmp_row_sum, [x, torch.zeros(32, 128), out], platform)
        b = _check(K.tree_row_sum, [x, torch.zeros(16, 64), out], platform)
        H.assert_same_bits(a, b, "tmp [32, 128] vs [16, 64]")


# -- (a) the padding pitfall ------------------------------------------------------------------

def test_padding_participates_in_row_max():
    """Seed symptom: row maxima all 0.0 over a valid_shape load of all-negative data; after
    fillpad(min) the true row max; a full tile is right either way. Both platforms and the
    reference (torch_codegen)."""
    x = -torch.rand(64, 64, generator=torch.Generator().manual_seed(1)) - 0.25  # all < 0
    out = torch.zeros(64, 1)
    true_valid = x[:, :40].max(dim=1, keepdim=True).values
    true_full = x.max(dim=1, keepdim=True).values
    for platform in H.PLATFORMS:
        padded = _check(K.padded_row_max, [x, out], platform)
        assert torch.equal(padded, torch.zeros(64, 1)), "padding did not participate"
        filled = _check(K.fillpad_row_max, [x, out], platform)
        H.assert_same_bits(filled, true_valid, "row_max after fillpad(min)")
        assert (filled < 0).all()
        H.assert_same_bits(_check(K.full_row_max, [x, out], platform), true_full, "full tile")
        H.assert_same_bits(_check(K.full_fillpad_row_max, [x, out], platform), true_full, "full tile + fillpad")
    ref = H.run_ref(K.padded_row_max, [x, out])[-1]
    assert torch.equal(ref, torch.zeros(64, 1))


# -- (c) per op: sim == reference, full and partial tiles, all dtypes --------------------------

# every op in the fast tier on FP32; the other dtypes are slow (CI runs them all)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", [pytest.param(d, id=str(d), marks=() if d == torch.float32 else pytest.mark.slow)
                                   for d in DTYPES])
def test_sim_equals_ref(op, dtype):
    for i, platform in enumerate(H.PLATFORMS):
        seed = 100 + 10 * DTYPES.index(dtype) + i
        a = _data(seed, (16, 64), dtype)
        s = _data(seed + 1, (16, 64), dtype)  # scratch contents must not matter
        init = _data(seed + 2, _out_shape(op, (16, 64)), dtype)
        for prefix in ("tree_", "ptree_"):
            _check(getattr(K, prefix + op), [a, s, init], platform)
        for prefix in ("seq_", "pseq_"):
            _check(getattr(K, prefix + op), [a, init], platform)
        shape = (5, 23)
        _check(getattr(K, "t_" + op), [_data(seed, shape, dtype), _data(seed, _out_shape(op, shape), dtype)],
               platform)


@pytest.mark.parametrize("op", OPS)
def test_partial_result_valid_region_and_padding(op):
    """Partial kernels store only the valid rows / columns; the padding (zero) participates."""
    a = H.make_data(5, (16, 64), torch.float32, "normal") - 10.0  # all negative
    init = torch.full(_out_shape(op, (16, 64)), 7.0)
    for platform in H.PLATFORMS:
        out = _check(getattr(K, "ptree_" + op), [a, torch.zeros(16, 64), init], platform).flatten()
        n = K.VR if op.startswith("row") else K.VC
        assert torch.equal(out[n:], torch.full_like(out[n:], 7.0)), "written outside the valid region"
        padded = torch.zeros(16, 64)
        padded[:K.VR, :K.VC] = a[:K.VR, :K.VC]
        dim = 1 if op.startswith("row") else 0
        if op.endswith("max"):
            assert torch.equal(out[:n], torch.zeros(n)), "max over zero padding of negative data is 0"
        elif op.endswith("min"):
            assert torch.equal(out[:n], padded.min(dim).values[:n])
        else:
            assert torch.allclose(out[:n], padded.sum(dim)[:n], atol=1e-3)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", H.FLOAT_DTYPES, ids=str)
def test_reference_within_bound_of_float64(op, dtype):
    """Reference vs float64: sums within gamma(k) * sum|x| (k = n-1 sequential, ceil(log2 n)
    tree); max/min exact."""
    a = H.make_data(11, (16, 64), dtype, "normal")
    s = torch.zeros(16, 64, dtype=dtype)
    init = torch.zeros(_out_shape(op, (16, 64)), dtype=dtype)
    dim = 1 if op.startswith("row") else 0
    n = a.shape[dim]
    x64 = a.double()
    for kernel, k in ((getattr(K, "tree_" + op), math.ceil(math.log2(n))), (getattr(K, "seq_" + op), n - 1)):
        args = [a, s, init] if kernel.__name__.startswith("tree") else [a, init]
        got = H.run_ref(kernel, args)[-1].flatten().double()
        if op.endswith("sum"):
            u = UNIT[dtype]
            g = (k + 1) * u / (1 - (k + 1) * u)
            err = (got - x64.sum(dim)).abs()
            bound = g * x64.abs().sum(dim)
            assert (err <= bound).all(), f"{kernel.__name__} {dtype}: max err {err.max()} > bound"
        else:
            want = x64.amax(dim) if op.endswith("max") else x64.amin(dim)
            assert torch.equal(got, want)


def test_bound_check_can_fail():
    """The bound above is not vacuous: a sum off by one part in 2**10 of the magnitudes fails it."""
    x = H.make_data(11, (1, 64), torch.float32).double()
    u = UNIT[torch.float32]
    g = 7 * u / (1 - 7 * u)
    wrong = x.sum() + x.abs().sum() * 2.0 ** -10
    assert not ((wrong - x.sum()).abs() <= g * x.abs().sum())


def test_int32_sum_wraps_identically():
    a = torch.full((16, 64), 2 ** 30, dtype=torch.int32)
    init = torch.zeros(16, 1, dtype=torch.int32)
    for platform in H.PLATFORMS:
        out = _check(K.tree_row_sum, [a, torch.zeros_like(a), init], platform)
        assert torch.equal(out, torch.zeros(16, 1, dtype=torch.int32))  # 64 * 2**30 = 2**36 wraps to 0
        _check(K.seq_row_sum, [a, init], platform)


# -- printing / parsing ------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["tree_row_sum", "seq_row_max", "ptree_col_min", "pseq_col_sum", "t_row_sum",
                                  "fillpad_row_max"])
def test_roundtrip(name):
    """The printed tile forms (``pl.tile.row_sum(x)`` without tmp: sequential) parse back."""
    kernel = getattr(K, name)
    args = [torch.zeros(64, 64) if name == "fillpad_row_max" else torch.zeros(16, 64)]
    if name.startswith(("tree", "ptree")):
        args.append(torch.zeros(16, 64))
    args.append(torch.zeros(64, 1) if name == "fillpad_row_max" else
                torch.zeros(_out_shape(name.split("_", 1)[1], (16, 64))))
    program = kernel.lower(*args)
    text = program.as_python()
    reparsed = parse(text)
    assert structural_equal(program, reparsed), text
    assert reparsed.as_python() == text
    if name.startswith(("seq", "t_")):
        assert f"pl.tile.{name.split('_', 1)[1]}(" in text and "tmp_tile" not in text


# -- (d) errors --------------------------------------------------------------------------------

@pytest.mark.parametrize("kernel,op", [(K.err_row_sum_no_tmp, "row_sum"), (K.err_row_max_no_tmp, "row_max"),
                                       (K.err_row_min_no_tmp, "row_min"), (K.err_row_sum_kw_none, "row_sum")])
def test_row_reduction_on_tile_requires_tmp(kernel, op):
    with pytest.raises(InvalidOperationError) as e:
        kernel.lower(torch.zeros(16, 64), torch.zeros(16, 1))
    msg = str(e.value)
    assert (f"pl.{op}: Tile inputs require tmp_tile with the same dtype and rank as the input, and every "
            "dimension at least as large") in msg
    assert filename(kernel) + ":" in msg  # carries the span (of its generated source)


@pytest.mark.parametrize("kernel,args", [
    (K.err_small_tmp, (torch.zeros(16, 64), torch.zeros(16, 64), torch.zeros(16, 1))),
    (K.err_small_tmp_explicit_col, (torch.zeros(16, 64), torch.zeros(16, 64), torch.zeros(1, 64))),
    (K.err_tmp_dtype, (torch.zeros(16, 64), torch.zeros(16, 1))),
    (K.err_tmp_rank, (torch.zeros(16, 64), torch.zeros(1024), torch.zeros(16, 1))),
], ids=["undersized", "undersized-explicit-col", "dtype", "rank"])
def test_bad_tmp_tile_rejected(kernel, args):
    with pytest.raises(InvalidOperationError) as e:
        kernel.lower(*args)
    assert "Tile inputs require tmp_tile with the same dtype and rank as the input" in str(e.value)


def test_tensor_reduction_rejects_tmp():
    with pytest.raises(InvalidOperationError, match="tmp_tile is not supported for Tensor operands"):
        K.err_tensor_tmp.lower(torch.zeros(16, 64), torch.zeros(16, 64), torch.zeros(16, 1))


def test_col_reduction_on_tile_may_omit_tmp():
    """``pl.col_sum(tile)`` needs no scratch (sequential), unlike the row forms."""
    from pypto.ops.registry import get_op

    assert get_op("tile.col_sum").dsl_check is None and get_op("tile.row_sum").dsl_check is not None
