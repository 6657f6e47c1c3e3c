"""The named crossings of a pl.split_aiv region (pypto/ops/aiv_split.py): type rules here; the
programs that run them (both simulators, against torch) are in tests/mixed/test_split_aiv.py."""
import pytest

from pypto.errors import InvalidOperationError
from pypto.ir.nodes import Var
from pypto.ir.types import TensorType, TileType
from pypto.language.dtypes import FP32, INDEX
from pypto.language.enums import MemorySpace
from pypto.ops import get_op
from pypto.ops.builder import build

COVERED_OPS = {"tile.aiv_shard", "tile.aic_gather", "tensor.aiv_shard", "tensor.aic_gather", "tile.split_aiv_lane"}


def _tile(shape, space=MemorySpace.Acc, valid=None):
    return Var("x", TileType(shape, FP32, space, valid))


@pytest.mark.parametrize("split, shard, gather", [(0, (16, 32), (16, 32)), (1, (8, 32), (32, 32)),
                                                 (2, (16, 16), (16, 64))])
def test_shard_halves_and_gather_doubles_the_split_axis(split, shard, gather):
    s = build("tile.aiv_shard", tile=_tile((16, 32)), split=split).type
    assert s.shape == shard and s.memory_space == MemorySpace.Vec
    g = build("tile.aic_gather", tile=_tile((16, 32), MemorySpace.Vec), split=split).type
    assert g.shape == gather and g.memory_space == MemorySpace.Mat
    t = build("tensor.aiv_shard", tile=Var("t", TensorType((16, 32), FP32)), split=split).type
    assert isinstance(t, TensorType) and t.shape == shard
    assert get_op("tensor.aiv_shard").lowers_to == "tile.aiv_shard"


@pytest.mark.parametrize("kwargs, words", [
    (dict(tile=_tile((15, 32)), split=1), "odd extent 15"),
    (dict(tile=_tile((16, 32), valid=(12, 32)), split=1), "only partly valid (12 of 16)"),
    (dict(tile=_tile((16, 32)), split=3), "split must be 0 (NONE)"),
    (dict(tile=_tile((2, 16, 32)), split=1), "2-D operand"),
])
def test_unsupported_boundaries_are_refused(kwargs, words):
    with pytest.raises(InvalidOperationError, match=words.replace("(", r"\(").replace(")", r"\)")):
        build("tile.aiv_shard", **kwargs)


def test_a_ragged_non_split_axis_is_carried():
    t = build("tile.aiv_shard", tile=_tile((16, 32), valid=(16, 20)), split=1).type
    assert t.shape == (8, 32) and t.valid_shape == (8, 20)


def test_the_region_head_is_an_index_lane():
    assert build("tile.split_aiv_lane", mode=2).type.dtype == INDEX
    with pytest.raises(InvalidOperationError):
        build("tile.split_aiv_lane", mode=5)


def _lane_var():
    from pypto.ir.types import ScalarType
    return Var("n", ScalarType(INDEX))


@pytest.mark.parametrize("valid, split, words", [
    # LEFT_RIGHT: the lanes' column extents would differ, and the transport pins the column width
    ((16, 20), 2, ["LEFT_RIGHT splits the column axis", "(20 of 32)", "mode=pl.SplitMode.UP_DOWN",
                   "pl.set_validshape"]),
    # UP_DOWN: a ragged split axis (per-lane rows) together with narrowed columns
    ((12, 20), 1, ["per-lane row extent (12 of 16", "narrowed column extent (20 of 32)", "pl.set_validshape(acc, 12, 32)"]),
    # a run-time narrowed column extent, in any mode (the column restore is static)
    ((16, "n"), 0, ["valid column extent (n of 32) is a run-time value"]),
    ((16, "n"), 1, ["valid column extent (n of 32) is a run-time value"]),
    # a run-time row extent with narrowed columns
    (("n", 20), 0, ["valid row extent (n of 16) is a run-time value"]),
])
def test_shard_refuses_what_the_boundary_cannot_carry(valid, split, words):
    """What the reference refuses at the cube -> vector crossing (a ValueError there): a
    SplitBoundaryError here, which is a PyptoError and a ValueError."""
    from pypto.errors import PyptoError, SplitBoundaryError

    v = tuple(_lane_var() if x == "n" else x for x in valid)
    with pytest.raises(SplitBoundaryError) as info:
        build("tile.aiv_shard", tile=_tile((16, 32), valid=v), split=split)
    assert isinstance(info.value, ValueError) and isinstance(info.value, PyptoError)
    text = str(info.value)
    for w in words:
        assert w in text, (w, text)


@pytest.mark.parametrize("valid, split", [((16, 32), 2), ((12, 32), 1), ((16, 20), 1), ((16, 20), 0), ((12, 20), 0)])
def test_shard_carries_full_columns_or_static_uniform_rows(valid, split):
    """Full columns cross in every mode; narrowed constant columns cross when the rows are a
    constant both lanes share (UP_DOWN over full rows, or NONE)."""
    kwargs = {}
    if split == 1 and valid[0] != 16:
        kwargs["valid_shape"] = [6, 32]   # the lane's share of a ragged row extent, as the lowering states it
    c = build("tile.aiv_shard", tile=_tile((16, 32), valid=valid), split=split, **kwargs)
    # the lane's half: rows under UP_DOWN (1), columns under LEFT_RIGHT (2), all of it under NONE (0)
    assert tuple(c.type.shape) == {0: (16, 32), 1: (8, 32), 2: (16, 16)}[split]


def test_gather_of_a_partial_lane_half_is_refused():
    from pypto.errors import SplitBoundaryError

    with pytest.raises(SplitBoundaryError) as info:
        build("tile.aic_gather", tile=_tile((8, 32), MemorySpace.Vec, valid=(5, 32)), split=1)
    text = str(info.value)
    assert "re-joins the two lanes positionally" in text and "(5 of 8)" in text and "[8, 13)" in text
    assert "pl.fillpad" in text
