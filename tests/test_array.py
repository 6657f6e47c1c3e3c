"""On-core scalar arrays (pl.Array, pypto/ops/array_ops.py): create / arr[i] / arr[i] = v /
get_element / update_element in kernels, simulator vs reference, printed form, located errors."""
import kernels_array as K
import pytest
import torch
from lang_harness import check_all

from pypto.errors import PyptoError, SimulationError
from pypto.ir import run_pipeline, structural_equal
from pypto.ir.types import ArrayType
from pypto.language import parse
from pypto.runtime import RunConfig

SRC = torch.arange(32, dtype=torch.float32).reshape(1, 32)


@pytest.mark.parametrize("row", [0, 7, 31])
def test_row_index_round_trips_through_an_array(row):
    idx = torch.zeros(1, 8, dtype=torch.int32)
    idx[0, 0] = row
    want = torch.zeros(32, 32)
    want[row] = SRC[0]
    check_all(K.array_row, (idx, SRC, torch.zeros(32, 32)), {2: want})


def test_array_written_and_read_in_loops():
    want = torch.zeros(32, 32)
    want[[0, 3, 6, 9]] = SRC[0]
    check_all(K.array_loop, (SRC, torch.zeros(32, 32)), {1: want})


def test_index_values_are_stored_converted_to_the_element_type():
    idx = torch.tensor([[0, 2, 2, 3, 2, 0, 1, 2]], dtype=torch.int32)
    want = torch.zeros(32, 32)
    for e, n in enumerate((2, 1, 4, 1)):
        want[8 * e + n] = SRC[0]
    want[31] = SRC[0]   # 2**32 + 3 truncated to INT32 is 3 (the device's index_cast), not saturated
    check_all(K.array_counts, (idx, SRC, torch.zeros(32, 32)), {2: want})


def test_every_stage_roundtrips():
    prog = K.array_row._specialize((torch.zeros(1, 8, dtype=torch.int32), SRC, torch.zeros(32, 32)), {}).program
    for stage, p in run_pipeline(prog, {"platform": "a2a3sim"}).stages:
        text = p.as_python()
        again = parse(text)
        assert structural_equal(p, again), f"after {stage}:\n{text}"
        assert again.as_python() == text
    assert "pl.Array[4, pl.INT32]" in text and "pl.array.update_element(" in text


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_index_past_the_end_is_located(platform):
    with pytest.raises(SimulationError) as e:
        K.array_oob(SRC, torch.zeros(32, 32), config=RunConfig(platform=platform))
    assert "index 2 is out of range for an array of 2" in str(e.value) and "kernels_array.py" in str(e.value)


def test_array_captured_by_a_scope_is_refused():
    with pytest.raises(PyptoError, match="made outside this pl.at scope") as e:
        K.array_escapes(SRC, torch.zeros(32, 32))
    assert "kernels_array.py" in str(e.value)


def _err(body: str) -> str:
    src = '''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[1, 32], pl.FP32], o: pl.Out[pl.Tensor[[1, 32], pl.FP32]]) -> pl.Tensor[[1, 32], pl.FP32]:
''' + body + "        return o\n"
    with pytest.raises(PyptoError) as e:
        parse(src)
    return str(e.value)


def test_type_errors_are_located():
    assert "integers or BOOL" in _err("        arr = pl.array.create(4, pl.FP32)\n")
    assert "must be a INT32 scalar" in _err("        arr = pl.array.create(4, pl.INT32)\n"
                                             "        x: pl.Scalar[pl.FP32] = 1.0\n        arr[0] = x\n")
    assert "must be a INT32 scalar" in _err("        arr = pl.array.create(4, pl.INT32)\n"
                                             "        x: pl.Scalar[pl.INT64] = 1\n        arr[0] = x\n")
    assert "one scalar index" in _err("        arr = pl.array.create(4, pl.INT32)\n        y = arr[0:2]\n")


def test_array_parameter_is_refused():
    src = '''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, arr: pl.Array[4, pl.INT32], o: pl.Out[pl.Tensor[[1, 32], pl.FP32]]) -> pl.Tensor[[1, 32], pl.FP32]:
        return o
'''
    with pytest.raises(PyptoError, match="cannot be a parameter"):
        parse(src)


def test_array_type_describes_itself():
    from pypto.ir.printer import print_type
    from pypto.ir.types import describe
    from pypto.language.dtypes import INT32

    assert describe(ArrayType(4, INT32)) == "Array[4, INT32]"
    assert print_type(ArrayType(4, INT32)) == "pl.Array[4, pl.INT32]"
