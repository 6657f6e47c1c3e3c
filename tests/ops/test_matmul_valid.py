"""A matmul of a partially valid operand (a ragged tail loaded with valid_shape) at tensor level:
its product keeps [lhs valid M, rhs valid N], so a store writes that region only (regression: the
tensor -> tile lowering built the product fully valid and the store wrote the padding rows)."""
import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig

ROWS, COLS, K, VALID_M = 16, 32, 32, 5


@pl.jit
def ragged_lhs(a: pl.Tensor[[VALID_M, K], pl.FP32], w: pl.Tensor[[COLS, K], pl.FP32],
               out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
    with pl.at(level=pl.Level.CORE_GROUP):
        a_tile = pl.slice(a, [ROWS, K], [0, 0], valid_shape=[VALID_M, K])
        acc = pl.matmul(a_tile, w[0:COLS, 0:K], b_trans=True, out_dtype=pl.FP32)
        out[0:ROWS, 0:COLS] = acc
    return out


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_ragged_lhs_product_is_stored_over_its_valid_rows_only(platform):
    g = torch.Generator().manual_seed(0)
    a = torch.randint(-4, 5, (VALID_M, K), generator=g).float()
    w = torch.randint(-4, 5, (COLS, K), generator=g).float()
    out = torch.full((ROWS, COLS), float("nan"))
    ragged_lhs(a, w, out, config=RunConfig(platform=platform))
    assert torch.equal(out[:VALID_M], a @ w.T)          # small integers: exact in fp32
    assert out[VALID_M:].isnan().all()                  # the padding rows are not written


VALID_N, VALID_MT = 20, 7


@pl.jit
def ragged_transposed(a: pl.Tensor[[K, VALID_MT], pl.FP32], w: pl.Tensor[[VALID_N, K], pl.FP32],
                      out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
    """Both operands transposed (a_trans, b_trans) and partial: a valid to VALID_MT of its ROWS
    columns (the product's rows), w to VALID_N of its COLS rows (the product's columns)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        a_tile = pl.slice(a, [K, ROWS], [0, 0], valid_shape=[K, VALID_MT])
        w_tile = pl.slice(w, [COLS, K], [0, 0], valid_shape=[VALID_N, K])
        acc = pl.matmul(a_tile, w_tile, a_trans=True, b_trans=True, out_dtype=pl.FP32)
        out[0:ROWS, 0:COLS] = acc
    return out


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_transposed_ragged_operands_keep_their_valid_extent(platform):
    """Regression: the transposed copy of a partial operand lost its valid shape, so the product
    was fully valid and its store wrote zeros over the output's columns VALID_N.. and rows
    VALID_MT.. (a silently wrong result where the caller's data lives there)."""
    g = torch.Generator().manual_seed(1)
    a = torch.randint(-4, 5, (K, VALID_MT), generator=g).float()
    w = torch.randint(-4, 5, (VALID_N, K), generator=g).float()
    out = torch.full((ROWS, COLS), float("nan"))
    ragged_transposed(a, w, out, config=RunConfig(platform=platform))
    assert torch.equal(out[:VALID_MT, :VALID_N], a.T @ w.T)
    assert out[VALID_MT:].isnan().all() and out[:, VALID_N:].isnan().all()
