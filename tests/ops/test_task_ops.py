"""TaskId array ops (orchestration only); end-to-end use is in tests/runtime/test_task_surfaces.py."""
from pypto.ops.registry import get_op

COVERED_OPS = {"tensor.task_id_array", "tensor.task_id_set"}


def test_task_id_array_orchestration_source():
    create = get_op("tensor.task_id_array")
    assert create.orch(create.args(("[4]", "None"))) == "_rt.task_id_array([4][0])"
    put = get_op("tensor.task_id_set")
    assert put.orch(put.args(("tids", "i", "tid"))) == "(tids.__setitem__(i, tid) or tids)"
