"""TaskId ops (orchestration only); end-to-end use is in tests/runtime/test_task_surfaces.py."""
from pypto.ops.registry import get_op

COVERED_OPS = {"tensor.task_id_array", "tensor.task_id_set", "tensor.task_dummy"}


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
