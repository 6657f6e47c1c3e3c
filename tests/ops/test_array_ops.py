"""On-core array ops (pypto/ops/array_ops.py): type rules and the executors' source; end-to-end
(simulator vs reference, printed form, errors) in tests/test_array.py."""
import pytest

from pypto.errors import PyptoError, SimulationError
from pypto.ir.nodes import ConstFloat, ConstInt, Var
from pypto.ir.types import ArrayType, ScalarType
from pypto.language.dtypes import FP32, INDEX, INT32
from pypto.ops import support as _pto
from pypto.ops.registry import get_op

COVERED_OPS = {"array.create", "array.get_element", "array.update_element"}


def test_type_rules():
    arr = Var("arr", ArrayType(4, INT32))
    assert get_op("array.create").infer_type((4, INT32), None) == ArrayType(4, INT32)
    assert get_op("array.get_element").infer_type((arr, ConstInt(1)), None) == ScalarType(INT32)
    assert get_op("array.update_element").infer_type((arr, ConstInt(1), ConstInt(3, INT32)), None) == arr.type
    for bad in ((0, INT32), (4, FP32)):
        with pytest.raises(PyptoError):
            get_op("array.create").infer_type(bad, None)
    # INDEX (the machine word) goes into an integer array, as in the reference (stored truncated);
    # a float does not
    assert get_op("array.update_element").infer_type((arr, ConstInt(1), ConstInt(3, INDEX)), None) == arr.type
    with pytest.raises(PyptoError, match="INT32 scalar"):
        get_op("array.update_element").infer_type((arr, ConstInt(1), ConstFloat(3.0, FP32)), None)


def test_run_time_forms_are_in_place_and_bounds_checked():
    create, get, put = (get_op(n) for n in sorted(COVERED_OPS))
    assert create.ref(create.args(("4", "INT32"))) == "_pto.array_new(4, INT32)"
    assert put.ref(put.args(("a", "i", "v"))) == "_pto.array_set(a, i, v)"
    assert get.sim(get.args(("a", "i")), None) == "_pto.array_get(a, i)"
    a = [0] * 3
    b = _pto.array_set(a, 1, 9)
    assert b is a and a == [0, 9, 0] and _pto.array_get(b, 1) == 9
    with pytest.raises(SimulationError, match="index -1 is out of range"):
        _pto.array_set(a, -1, 1)
