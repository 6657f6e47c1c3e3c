"""ExpandMixedKernel: one pl.at scope with cube and vector work becomes AIC + AIV + Group on a2a3."""
import pytest
import torch

import pypto.ir as ir
import pypto.language as pl
from pypto.debug.torch_codegen import torch_codegen
from pypto.ir.types import TileType
from pypto.ir.visit import iter_stmts
from pypto.ir.nodes import AssignStmt, Call, EvalStmt
from pypto.language.enums import FunctionType, MemorySpace

from tests.mixed import kernels_auto as A
from tests.mixed import kernels_mixed as K

CUBE = {MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc}


def _ops(f):
    out = []
    for s in iter_stmts(f.body):
        e = s.value if isinstance(s, AssignStmt) else s.expr if isinstance(s, EvalStmt) else None
        if isinstance(e, Call):
            out.append(e.op)
    return out


def _spaces(f):
    return {s.var.type.memory_space for s in iter_stmts(f.body)
            if isinstance(s, AssignStmt) and isinstance(s.var.type, TileType)}


def test_vec_to_cube_splits_into_members_that_each_touch_one_core_kind():
    c = ir.compile(A.VecToCube, platform="a2a3sim")
    low = c.lowered
    kinds = {f.name: f.func_type for f in low.functions}
    assert kinds["main_incore_0"] == FunctionType.Group
    aic, aiv = low.functions["main_incore_0_aic"], low.functions["main_incore_0_aiv"]
    assert kinds[aic.name] == FunctionType.AIC and kinds[aiv.name] == FunctionType.AIV
    assert _spaces(aic) <= CUBE and _spaces(aiv) == {MemorySpace.Vec}
    assert _ops(aiv).count("tile.tpush_to_aic") == 2 and _ops(aic).count("tile.tpop_from_aiv") == 2
    assert _ops(aic).count("tile.tfree_to_aiv") == 2
    a, b = torch.randn(A.M, A.K), torch.randn(A.K, A.M)
    out = torch.zeros(A.M, A.M)
    c(a, b, out)
    torch.testing.assert_close(out.double(), (a.double() * 2) @ (b.double() - 1), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_cube_to_vec_in_a_loop_matches_torch(platform):
    c = ir.compile(A.CubeToVecLoop, platform=platform)
    mixed = any(f.func_type == FunctionType.Group for f in c.lowered.functions)
    # a2a3 has no on-chip Acc -> Vec: a mixed kernel; a5 moves it on chip, one kernel
    assert mixed == (platform == "a2a3sim")
    a, b, bias = torch.randn(A.M, A.K), torch.randn(A.K, A.N), torch.randn(A.M, A.N)
    out = torch.zeros(A.M, A.N)
    c(a, b, bias, out)
    torch.testing.assert_close(out.double(), torch.relu(a.double() @ b.double() + bias.double()),
                               rtol=1e-5, atol=1e-4)


def test_expanded_dump_reparses_and_the_reference_executor_runs_it():
    c = ir.compile(A.CubeToVecLoop, platform="a2a3sim")
    text = c.lowered.as_python()
    assert pl.parse(text).as_python() == text
    ns: dict = {}
    exec(compile(torch_codegen(c.lowered), "<ref>", "exec"), ns)
    a, b, bias = torch.randn(A.M, A.K), torch.randn(A.K, A.N), torch.randn(A.M, A.N)
    out = torch.zeros(A.M, A.N)
    ns["main"](a, b, bias, out)
    sim = torch.zeros(A.M, A.N)
    c(a, b, bias, sim)
    assert torch.equal(out, sim)


def test_reference_executor_deadlock_raises_instead_of_hanging():
    from pypto.errors import SimulationError

    ns: dict = {}
    exec(compile(torch_codegen(K.PopsTwice), "<ref>", "exec"), ns)
    with pytest.raises(SimulationError, match="deadlock in the reference executor"):
        ns["main"](torch.randn(K.D, K.D), torch.zeros(K.D, K.D))


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_loop_carried_vector_accumulator_of_matmuls_bit_exact(platform):
    # the loop has cube work (the matmuls) and vector work (the accumulator): the AIC copy of the loop
    # must not carry the Vec accumulator, whose initial value only the AIV side computes (it was an
    # SSA error after ExpandMixedKernel: the reference's qwen3 decode scope-3 output projection)
    from tests.mixed import kernels_carry as C

    c = ir.compile(C.CarriedVectorAccumulator, platform=platform)
    if platform == "a2a3sim":
        from pypto.backend.platforms import get_platform
        from pypto.passes import PIPELINE
        from pypto.passes.context import PassContext
        from pypto.passes.manager import run_passes

        names = [p.NAME for p in PIPELINE]
        prog = run_passes(C.CarriedVectorAccumulator, PIPELINE[:names.index("ExpandMixedKernel") + 1],
                          PassContext(platform=get_platform(platform)), verification_level="roundtrip").program
        aic_loop = next(s for s in prog.functions["block_aic"].body if type(s).__name__ == "ForStmt")
        aiv_loop = next(s for s in prog.functions["block_aiv"].body if type(s).__name__ == "ForStmt")
        assert aic_loop.iter_args == () and len(aiv_loop.iter_args) == 1
    g = torch.Generator().manual_seed(0)
    # small integers in BF16: products and 256-term sums are exact in FP32
    a = torch.randint(-3, 4, (C.B, C.H), generator=g).bfloat16()
    w = torch.randint(-3, 4, (C.H, C.H), generator=g).bfloat16()
    r = torch.randint(-3, 4, (C.B, C.H), generator=g).bfloat16()
    out = torch.full((C.B, C.H), float("nan"))
    c(a, w, r, out)
    assert torch.equal(out, a.float() @ w.float() + r.float())
