"""A ragged cube -> vector boundary the device cannot place on the two vector lanes is refused as
the reference refuses it (pypto.passes.lane_balance): box lanes 8 and 5 (13 of 16 rows) are
accepted only in an automatic pl.split kernel whose whole vector body derives from the boundary
(the reference re-partitions that one; our box partition gives the same values)."""
import pytest
import torch

import pypto.language as pl
from pypto.errors import PyptoError, SplitBoundaryError
from pypto.runtime import RunConfig

ROWS, COLS, K, H = 16, 64, 64, 8


def _data(valid_m, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randint(-3, 4, (valid_m, K), generator=g).float() / 4
    w = torch.randint(-3, 4, (COLS, K), generator=g).float() / 4
    return a, w


def _auto(valid_m, independent: bool):
    @pl.jit
    def kernel(a: pl.Tensor[[valid_m, K], pl.FP32], w: pl.Tensor[[COLS, K], pl.FP32],
               extra: pl.Tensor[[ROWS, COLS], pl.FP32], out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
               out2: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            a_tile = pl.slice(a, [ROWS, K], [0, 0], valid_shape=[valid_m, K])
            acc = pl.matmul(a_tile, w[0:COLS, 0:K], b_trans=True, out_dtype=pl.FP32)
            out[:] = pl.relu(acc)
            if independent:   # (a parse-time constant: the value exists in one variant only)
                out2[:] = pl.abs(extra)
        return out, out2

    return kernel


def _run(kernel, valid_m, platform):
    a, w = _data(valid_m)
    extra = -torch.arange(ROWS * COLS, dtype=torch.float32).reshape(ROWS, COLS)
    out, out2 = torch.full((ROWS, COLS), float("nan")), torch.full((ROWS, COLS), float("nan"))
    kernel(a, w, extra, out, out2, config=RunConfig(platform=platform))
    return a, w, extra, out, out2


@pytest.mark.parametrize("valid_m, independent", [(13, False), (15, True), (5, True), (16, True)])
def test_placeable_or_rebalanced_boundaries_run(valid_m, independent):
    a, w, extra, out, out2 = _run(_auto(valid_m, independent), valid_m, "a2a3sim")
    assert torch.equal(out[:valid_m], torch.relu(a @ w.T)) and out[valid_m:].isnan().all()
    if independent:
        assert torch.equal(out2, extra.abs())


def test_unbalanced_boundary_with_an_independent_value_is_refused():
    with pytest.raises(SplitBoundaryError) as info:
        _run(_auto(13, True), 13, "a2a3sim")
    e = info.value
    assert isinstance(e, ValueError) and isinstance(e, PyptoError)
    text = str(e)
    assert "(13 of a 16-wide dim 0) leaves the two AIV lanes 8 and 5 cells" in text
    assert "16 / 15" in text and "pl.tile.set_validshape" in text and "at most 8" in text


@pl.jit
def region_13(a: pl.Tensor[[13, K], pl.FP32], w: pl.Tensor[[COLS, K], pl.FP32],
              out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
    with pl.at(level=pl.Level.CORE_GROUP):
        a_tile = pl.slice(a, [ROWS, K], [0, 0], valid_shape=[13, K])
        acc = pl.matmul(a_tile, w[0:COLS, 0:K], b_trans=True, out_dtype=pl.FP32)
        for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            out[aiv_id * H: aiv_id * H + H, 0:COLS] = pl.aiv_shard(acc)
    return out


def test_explicit_region_takes_the_box_partition_and_refuses_8_and_5():
    with pytest.raises(SplitBoundaryError, match="leaves the two AIV lanes 8 and 5 cells"):
        region_13.lower(config=RunConfig(platform="a2a3sim"))
