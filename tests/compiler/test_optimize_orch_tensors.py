"""OptimizeOrchTensors (the reference's iter-arg reuse): a loop's per-iteration output tensor for a
kernel that turns the carried tensor into the next one becomes the carried tensor itself (InOut).

Oracle: the same program compiled without the pass (its result must be the same bits) and a torch
computation of the loop; the rewrite must not fire where it would change a value."""
import torch

import kernels_orch_tensors as K
from pypto import ir, passes
from pypto.ir.nodes import Call, FuncCall
from pypto.ir.visit import iter_exprs
from pypto.language.enums import ParamDirection
from pypto.passes import optimize_orch_tensors
from pypto.passes.pipeline import Pipeline


def _before(program):
    """The program as OptimizeOrchTensors receives it (the passes before it in PIPELINE)."""
    for make in (passes.convert_to_ssa, passes.simplify, passes.flatten_call_expr, passes.outline_incore_scopes,
                 passes.convert_tensor_to_tile_ops, passes.fuse_create_assemble_to_slice):
        program = make()(program)
    return program


def _creates(f):
    return sum(1 for e in iter_exprs(f.body) if isinstance(e, Call) and e.op == "tensor.create")


def test_the_out_parameter_becomes_the_carried_tensor():
    before = _before(K.IterReuse)
    after = passes.optimize_orch_tensors()(before)
    step = after.functions["step"]
    assert [p.name for p in step.params] == ["x"] and step.directions == (ParamDirection.InOut,)
    main_b, main_a = before.functions["main"], after.functions["main"]
    assert _creates(main_a) == _creates(main_b) - 1          # the per-iteration allocation is gone
    calls = [e for e in iter_exprs(main_a.body) if isinstance(e, FuncCall) and e.func == "step"]
    assert len(calls) == 1 and len(calls[0].args) == 1
    assert "OptimizeOrchTensors" in [p.NAME for p in passes.PIPELINE]
    assert_reparses = ir.python_print(after)
    from pypto.language import parse
    from pypto.ir import assert_structural_equal
    assert_structural_equal(parse(assert_reparses), after)


def test_values_unchanged(tmp_path):
    a = torch.randn(16, 64)
    want = torch.full((16, 64), 3.0)
    for _ in range(5):
        want = want * 0.5 + 1.0
    want = want + a
    outs = []
    for pipe in (None, Pipeline.default().drop("OptimizeOrchTensors")):
        res = torch.zeros(16, 64)
        compiled = ir.compile(K.IterReuse, tmp_path / str(len(outs)), dump_passes=False, passes=pipe)
        compiled(a, res)
        outs.append(res)
    assert torch.equal(outs[0], outs[1]) and torch.equal(outs[0], want)


def test_left_alone_when_a_value_would_change():
    # the carried tensor starts as the caller's input (it would be overwritten), or the kernel
    # stores before it loads (it would read its own output)
    for prog in (K.ParamCarried, K.StoreFirst):
        before = _before(prog)
        assert optimize_orch_tensors.run(before, None) is before, prog.name
