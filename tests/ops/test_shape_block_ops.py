"""``tensor.dim`` / ``tile.tensor_dim`` (extents) and the block-identity ops of multi-block tasks;
end-to-end use is in tests/runtime/test_blocks_and_dyn.py."""
import pytest

from pypto.errors import PlatformError
from pypto.ir.nodes import ConstInt, Var
from pypto.ir.types import DynDim, ScalarType, TensorType
from pypto.language.dtypes import FP32, INDEX, INT32
from pypto.ops.registry import Src, get_op
from pypto.ops.traits import Lockstep

COVERED_OPS = {"tensor.dim", "tile.tensor_dim", "tile.get_block_idx", "tile.get_block_num", "tile.get_subblock_idx",
               "system.available_cluster_count", "system.available_aiv_count"}


def test_tensor_dim_folds_static_extents_and_reads_dynamic_ones():
    op = get_op("tensor.dim")
    t = Var("t", TensorType((DynDim("M"), 128), FP32))
    assert op.fold(op.args((t, ConstInt(1)))) == 128
    assert op.fold(op.args((t, ConstInt(-1)))) == 128
    assert op.fold(op.args((t, ConstInt(0)))) is None          # dynamic: read at run time
    assert op.infer_type((t, ConstInt(0)), None) == ScalarType(INDEX)
    assert op.orch(op.args((Src("t"), Src("0")))) == "int(t.shape[0])"
    sim = get_op("tile.tensor_dim")
    assert sim.sim(sim.args((Src("t"), Src("0"))), None) == "int(t.shape[0])" and sim.trait(Lockstep) == Lockstep.PLAN


def test_tensor_dim_axis_errors():
    from pypto.errors import InvalidOperationError

    op = get_op("tensor.dim")
    t = Var("t", TensorType((4, 8), FP32))
    with pytest.raises(InvalidOperationError, match="axis 2 is out of range"):
        op.infer_type((t, ConstInt(2)), None)
    with pytest.raises(InvalidOperationError, match="axis must be a constant int"):
        op.infer_type((t, Var("i", ScalarType(INDEX))), None)


def test_block_ops_read_the_block_the_scheduler_passes():
    for name, src in (("tile.get_block_idx", "_block[0]"), ("tile.get_block_num", "_block[1]"),
                      # the vector lane of a cluster task (a third entry the cross-core runtime passes), 0 elsewhere
                      ("tile.get_subblock_idx", "(_block[2] if len(_block) > 2 else 0)")):
        op = get_op(name)
        assert op.sim(op.args(()), None) == src and op.ref(op.args(())) == src
        assert op.infer_type((), None) == ScalarType(INDEX) and op.trait(Lockstep) == Lockstep.PLAN


def test_available_core_counts():
    from pypto.backend.platforms import get_platform
    from pypto.ops import support

    for name, kind in (("system.available_cluster_count", "aic"), ("system.available_aiv_count", "aiv")):
        op = get_op(name)
        assert op.orch(op.args(())) == f"_rt.available_cores({kind!r})"
        assert op.infer_type((), None) == ScalarType(INT32)
    with pytest.raises(PlatformError, match="needs a device"):
        support.available_cores("aiv")
    tok = support.REFERENCE_PLATFORM.set("a5sim")
    try:
        assert support.available_cores("aiv") == get_platform("a5sim").num_aiv
        assert support.available_cores("aic") == get_platform("a5sim").num_aic
    finally:
        support.REFERENCE_PLATFORM.reset(tok)
