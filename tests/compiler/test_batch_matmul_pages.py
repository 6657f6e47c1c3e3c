"""FlattenTileNdTo2D's per-batch form of a batch matmul that does not fit on chip
(pypto.passes.batch_matmul_pages), and AutoTileMatmulL0's transposed chunk extracts
(pypto.passes.transposed_extracts): the IR each produces, and the values on both simulators
against a float64 oracle."""
import tempfile

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.ir import run_pipeline
from pypto.ir.types import TileType
from pypto.ir.visit import iter_calls, iter_stmts
from pypto.ir.nodes import AssignStmt
from pypto.language.enums import MemorySpace as M

PLATFORMS = ["a2a3sim", "a5sim"]


def _bmm_program(B, M_, K, N, a_trans=False, b_trans=False, lhs_2d=False):
    """``c = a @ b`` with a: [B, M, K] (or [B, K, M] with a_trans; [M, K] with lhs_2d), b: [B, K, N]
    (or [B, N, K] with b_trans), c: [B, M, N], stored at offset 0."""
    a_shape = [M_, K] if lhs_2d else ([B, K, M_] if a_trans else [B, M_, K])
    b_shape = [B, N, K] if b_trans else [B, K, N]

    @pl.program
    class Bmm:
        @pl.function(type=pl.FunctionType.InCore)
        def bmm(self, a: pl.Tensor[a_shape, pl.FP32], b: pl.Tensor[b_shape, pl.FP32],
                c: pl.Out[pl.Tensor[[B, M_, N], pl.FP32]]) -> pl.Tensor[[B, M_, N], pl.FP32]:
            cm = pl.matmul(a, b, a_trans=a_trans, b_trans=b_trans, out_dtype=pl.FP32)
            out = pl.assemble(c, cm, offset=[0, 0, 0])
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[a_shape, pl.FP32], b: pl.Tensor[b_shape, pl.FP32],
                 c: pl.Out[pl.Tensor[[B, M_, N], pl.FP32]]) -> pl.Tensor[[B, M_, N], pl.FP32]:
            c = self.bmm(a, b, c)
            return c

    return Bmm, a_shape, b_shape


def _oracle(a, b, a_trans, b_trans):
    a, b = a.double(), b.double()
    if a_trans:
        a = a.transpose(-2, -1)
    if b_trans:
        b = b.transpose(-2, -1)
    return a @ b


def _stage(program, platform, name):
    res = run_pipeline(program, {"platform": platform})
    return dict(res.stages)[name]


def _kernel(prog, name="bmm"):
    return next(f for f in prog.functions if f.name == name)


def _ops(f):
    return [c.op for _, c in iter_calls(f.body)]


CASES = {  # (B, M, K, N, a_trans, b_trans, lhs_2d): each exceeds Mat, L0 or Acc as a whole-tile op
    "b_trans_over_mat": (4, 64, 128, 512, False, True, False),
    "a_trans_over_acc": (3, 128, 64, 256, True, False, False),
    "lhs_2d_broadcast": (3, 64, 64, 512, False, False, True),
}


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_per_batch_form_values(case, platform):
    B, M_, K, N, at, bt, l2 = CASES[case]
    prog, a_shape, b_shape = _bmm_program(B, M_, K, N, at, bt, l2)
    assert "tile.batch_matmul" not in _ops(_kernel(_stage(prog, platform, "FlattenTileNdTo2D")))
    g = torch.Generator().manual_seed(7)
    a, b = torch.randn(*a_shape, generator=g), torch.randn(*b_shape, generator=g)
    c = torch.zeros(B, M_, N)
    compiled = ir.compile(prog, output_dir=tempfile.mkdtemp(), platform=platform)
    compiled(a, b, c)
    want = _oracle(a, b, at, bt)
    # FP32 products summed in K chunks (AutoTileMatmulL0): within a few ulps of K-term sums
    assert torch.allclose(c.double(), want, rtol=1e-5, atol=1e-4), (c.double() - want).abs().max()


def test_per_batch_form_ir():
    prog, _, _ = _bmm_program(4, 64, 128, 512, b_trans=True)
    f = _kernel(_stage(prog, "a2a3sim", "FlattenTileNdTo2D"))
    ops = _ops(f)
    assert "tile.batch_matmul" not in ops
    assert ops.count("tile.matmul") == 4 and ops.count("tile.store") == 4 and ops.count("tile.transpose_view") == 4
    loads = [c for _, c in iter_calls(f.body) if c.op == "tile.load"]
    # one [rows, cols] page per operand and batch, at batch offset i; no whole [B * rows, cols] load
    assert sorted((c.args[0].name, c.args[1].elements[0].value) for c in loads) == \
        [("a", i) for i in range(4)] + [("b", i) for i in range(4)]
    assert {tuple(c.type.shape) for c in loads} == {(64, 128), (512, 128)}
    stores = [c for _, c in iter_calls(f.body) if c.op == "tile.store"]
    assert [c.args[1].elements[0].value for c in stores] == [0, 1, 2, 3]


def test_whole_tile_op_kept_when_it_fits():
    prog, _, _ = _bmm_program(2, 16, 80, 48, b_trans=True)
    ops = _ops(_kernel(_stage(prog, "a2a3sim", "FlattenTileNdTo2D")))
    assert ops.count("tile.batch_matmul") == 1 and "tile.matmul" not in ops


def _mat_tiles(f):
    return [s.var for s in iter_stmts(f.body) if isinstance(s, AssignStmt) and isinstance(s.var.type, TileType)
            and s.var.type.memory_space == M.Mat]


def test_transposed_chunks_read_the_natural_page():
    prog, _, _ = _bmm_program(4, 64, 128, 512, b_trans=True)
    f = _kernel(_stage(prog, "a2a3sim", "AutoTileMatmulL0"))
    ops = _ops(f)
    assert "tile.transpose_view" not in ops  # the [K, N] copies are gone ...
    right = [c for _, c in iter_calls(f.body) if c.op == "tile.extract" and c.args[3] == M.Right]
    # ... every Right chunk is a transposed extract of a [N, K] = [512, 128] page
    assert right and all(c.args[4] is True and tuple(c.args[0].type.shape) == (512, 128) for c in right)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_2d_b_trans_matmul_fits_mat(platform):
    """A 2-D ``pl.matmul(a, b, b_trans=True)`` whose [N, K] and [K, N] copies would exceed Mat
    together (544 KiB of 512) now compiles: only the natural [N, K] tile is in Mat."""
    M_, K, N = 64, 128, 512

    @pl.program
    class Mm:
        @pl.function(type=pl.FunctionType.InCore)
        def mm(self, a: pl.Tensor[[M_, K], pl.FP32], b: pl.Tensor[[N, K], pl.FP32],
               c: pl.Out[pl.Tensor[[M_, N], pl.FP32]]) -> pl.Tensor[[M_, N], pl.FP32]:
            cm = pl.matmul(a, b, b_trans=True, out_dtype=pl.FP32)
            out = pl.assemble(c, cm, offset=[0, 0])
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[M_, K], pl.FP32], b: pl.Tensor[[N, K], pl.FP32],
                 c: pl.Out[pl.Tensor[[M_, N], pl.FP32]]) -> pl.Tensor[[M_, N], pl.FP32]:
            c = self.mm(a, b, c)
            return c

    f = _kernel(_stage(Mm, platform, "AutoTileMatmulL0"), "mm")
    assert [tuple(v.type.shape) for v in _mat_tiles(f)] == [(64, 128), (512, 128)]
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(M_, K, generator=g), torch.randn(N, K, generator=g)
    c = torch.zeros(M_, N)
    ir.compile(Mm, output_dir=tempfile.mkdtemp(), platform=platform)(a, b, c)
    want = a.double() @ b.double().T
    assert torch.allclose(c.double(), want, rtol=1e-5, atol=1e-4), (c.double() - want).abs().max()


G, GB = 2, 4


@pl.jit
def grouped_bmm(a: pl.Tensor[[G * GB, 64, 128], pl.FP32], b: pl.Tensor[[G * GB, 512, 128], pl.FP32],
                c: pl.Out[pl.Tensor[[G * GB, 64, 512], pl.FP32]]):
    """Each group's [4, 64, 128] x [4, 512, 128]^T slices (not placed loads at run-time offsets
    g * 4) exceed Mat as whole operands: the pages are loaded at g * 4 + i."""
    for g in pl.range(G):
        with pl.at(level=pl.Level.CORE_GROUP):
            at = pl.slice(a, [GB, 64, 128], [g * GB, 0, 0])
            bt = pl.slice(b, [GB, 512, 128], [g * GB, 0, 0])
            cm = pl.matmul(at, bt, b_trans=True, out_dtype=pl.FP32)
            c = pl.assemble(c, cm, [g * GB, 0, 0])
    return c


@pytest.mark.parametrize("platform", PLATFORMS)
def test_per_batch_form_at_run_time_offsets(platform):
    from pypto.runtime import RunConfig

    g = torch.Generator().manual_seed(11)
    a, b = torch.randn(G * GB, 64, 128, generator=g), torch.randn(G * GB, 512, 128, generator=g)
    c = torch.zeros(G * GB, 64, 512)
    grouped_bmm(a, b, c, config=RunConfig(platform=platform))
    want = _oracle(a, b, False, True)
    assert torch.allclose(c.double(), want, rtol=1e-5, atol=1e-4), (c.double() - want).abs().max()
