"""Issue 14: forms of the reference's programs that run unmodified (see kernels_ref_forms.py)."""
import pytest
import torch

from kernels_ref_forms import DimAnnotatedInt64, StaticAndRunTimeExtents, shifted_rows
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


def test_a_3d_tile_with_a_run_time_valid_middle_extent_flattens_and_computes():
    from kernels_ref_forms import chunked_add_3d

    for b, s in ((3, 20), (2, 16), (1, 5)):          # tails of 4, none, 5 rows
        x, out = torch.randn(b, s, 128), torch.zeros(b, s, 128)
        chunked_add_3d(x, out)
        assert torch.equal(out, x + 1), (b, s)
    lowered = chunked_add_3d.lower(torch.randn(3, 20, 128), torch.zeros(3, 20, 128))
    (load,) = [s.value for f in lowered.functions for s in iter_stmts(f.body)
               if isinstance(s, AssignStmt) and isinstance(s.value, Call) and s.value.op == "tile.load"]
    assert list(load.type.shape) == [8, 128] and load.type.valid_shape[0].name == "n"


def test_a_flattened_access_that_would_run_into_the_next_batch_is_an_error():
    from pypto.errors import SimulationError
    from kernels_ref_forms import chunk_overrun_3d

    x, out = torch.randn(2, 16, 128), torch.zeros(2, 16, 128)
    chunk_overrun_3d(x, out)                            # 16 rows: every chunk is whole
    assert torch.equal(out, x + 1)
    with pytest.raises(SimulationError, match="run past a leading dimension"):
        chunk_overrun_3d(torch.randn(2, 20, 128), torch.zeros(2, 20, 128))   # rows 16..23 of batch 0
    from pypto.ops.support import core

    t = torch.arange(2 * 20 * 4, dtype=torch.float32).reshape(2, 20, 4)
    assert torch.equal(core.load(t, [1, 12, 0], [8, 4]), t[1, 12:20])   # the last rows of batch 1
    with pytest.raises(SimulationError, match="run past a leading dimension"):
        core.load(t, [0, 16, 0], [8, 4])    # rows 16..23 of batch 0: 4 of them are batch 1's


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_slice_bounds_with_one_run_time_base_have_a_static_extent(platform):
    from pypto.runtime import RunConfig

    x = torch.randn(8, 64)
    out = torch.zeros(8, 64)
    shifted_rows(x, out, config=RunConfig(platform=platform, sim_seed=0))
    want = torch.zeros(8, 64)
    for r in range(6):   # the second scope of each iteration rewrites the row the first one wrote
        want[r + 1] = x[r + 1] + 1.0
    assert torch.equal(out, want)
