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
