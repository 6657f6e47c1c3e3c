"""Issue 14: forms of the reference's programs that run unmodified (see kernels_ref_forms.py)."""
import torch

from kernels_ref_forms import DimAnnotatedInt64, StaticAndRunTimeExtents
from pypto import ir
from pypto.ir.nodes import AssignStmt, Call
from pypto.ir.visit import iter_stmts
from pypto.language.dtypes import DataType


def test_an_int64_annotation_of_tensor_dim_keeps_the_ops_index_type(tmp_path):
    (s,) = [s for s in iter_stmts(DimAnnotatedInt64.functions[0].body)
            if isinstance(s, AssignStmt) and isinstance(s.value, Call) and s.value.op == "tensor.dim"]
    assert s.var.type.dtype == DataType.INDEX and s.value.type.dtype == DataType.INDEX
    c = ir.compile(DimAnnotatedInt64, tmp_path, dump_passes=False)
    a, out = torch.randn(48, 64), torch.zeros(48, 64)
    c(a, out)
    assert torch.equal(out, a + 1)


def test_a_static_extent_and_a_callers_run_time_extent_meet_at_run_time(tmp_path):
    c = ir.compile(StaticAndRunTimeExtents, tmp_path, dump_passes=False)
    a, b, out = torch.randn(512), torch.randn(512), torch.zeros(16, 32)
    c(a, b, out)
    assert torch.equal(out, (a + b).reshape(16, 32))
