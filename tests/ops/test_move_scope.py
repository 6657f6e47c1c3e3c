"""InferTileMemorySpace's operand moves are scoped to the block that makes them: a Mat tile moved
to Left / Right in one branch of an ``if`` is moved again in the other (the other branch used to
read the first one's move, a Var never assigned on its path: the L0 contents of an earlier
iteration, a silently wrong result)."""
import pytest
import torch

import kernels_move_scope as K
import ops_harness as H
from pypto.runtime import RunConfig


@pytest.mark.parametrize("platform", H.PLATFORMS)
def test_each_branch_moves_its_own_operands(platform):
    g = torch.Generator().manual_seed(3)
    a = torch.randint(-3, 4, (16, 1024), generator=g, dtype=torch.int8)
    b = torch.randint(-3, 4, (1024, 256), generator=g, dtype=torch.int8)
    out = torch.zeros(16, 256, dtype=torch.int32)
    K.split_k_int8(a, b, out, config=RunConfig(platform=platform))
    assert torch.equal(out, a.int() @ b.int())   # integer accumulation: exact
    text = K.split_k_int8.lower(a, b, out, config=RunConfig(platform=platform)).as_python()
    # each of the two stage copies moves its chunk in both branches
    assert text.count("= pl.tile.move(at") == 4, text


def test_ssa_verifier_keeps_branches_apart():
    """A Var defined in the then branch is not visible in the else branch (the SSA property used to
    let the else branch read it, so the bad move above went unreported)."""
    from pypto.ir.nodes import AssignStmt, BinOp, ConstInt, Function, IfStmt, Program, ReturnStmt, Var, YieldStmt
    from pypto.ir.types import ScalarType
    from pypto.ir.verifier import PROPERTIES
    from pypto.language.dtypes import BOOL, INDEX

    s = ScalarType(INDEX)
    x, y, phi = Var("x", s), Var("y", s), Var("phi", s)

    def prog(else_reads):
        then = (AssignStmt(x, BinOp("add", ConstInt(1), ConstInt(2), s)), YieldStmt((x,)))
        other = (AssignStmt(y, BinOp("add", else_reads, ConstInt(1), s)), YieldStmt((y,)))
        br = IfStmt(BinOp("lt", ConstInt(0), ConstInt(1), ScalarType(BOOL)), then, other, (phi,))
        return Program("p", (Function("f", (), (), (s,), (br, ReturnStmt((phi,)))),))

    assert PROPERTIES["SSA"](prog(ConstInt(5)), None) == []
    bad = PROPERTIES["SSA"](prog(x), None)
    assert any("'x' is used before it is defined" in msg for _, _, msg in bad)
