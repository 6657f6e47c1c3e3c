"""TaskId ops (orchestration only); end-to-end use is in tests/runtime/test_task_surfaces.py."""
from pypto.ops.registry import get_op

COVERED_OPS = {"tensor.task_id_array", "tensor.task_id_set", "tensor.task_dummy", "tensor.task_id_get"}


def test_task_id_array_orchestration_source():
    create = get_op("tensor.task_id_array")
    assert create.orch(create.args(("[4]", "None"))) == "_rt.task_id_array([4][0])"
    put = get_op("tensor.task_id_set")
    assert put.orch(put.args(("tids", "i", "tid"))) == "(tids.__setitem__(i, tid) or tids)"


def test_task_dummy_orchestration_source_and_type():
    from pypto.ir.types import ScalarType
    from pypto.language.dtypes import TASK_ID

    join = get_op("tensor.task_dummy")
    assert join.orch(join.args(("[t0, tids]",))) == "_rt.dummy([t0, tids])"
    assert join.ref(join.args(("[t0]",))) == "None"     # the reference runs tasks in program order
    assert join.infer_type(("[t0]",), None) == ScalarType(TASK_ID)


def test_task_id_get_reads_a_slot_and_refuses_a_bad_index():
    import pytest

    from pypto.errors import SimulationError
    from pypto.ops import support as _pto

    get = get_op("tensor.task_id_get")
    assert get.orch(get.args(("tids", "i"))) == "_pto.array_get(tids, i)"
    assert _pto.array_get(["t0", None], 0) == "t0" and _pto.array_get(["t0", None], 1) is None
    with pytest.raises(SimulationError, match="index 2 is out of range for an array of 2"):
        _pto.array_get(["t0", None], 2)
