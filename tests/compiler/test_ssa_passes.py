"""ConvertToSSA and FlattenCallExpr: the frontend emits pre-SSA IR with nested calls, the two passes
make it SSA with one call per statement; the verifier checks SSA and NoNestedCalls."""
import pytest
import torch

import pypto.language as pl
from pypto.errors import (
    ParserError,
    ParserTypeError,
    Span,
    SSAViolationError,
    VerificationError,
)
from pypto.frontend.specialize import specialize
from pypto.ir import run_pipeline, structural_equal
from pypto.ir.nodes import (
    AssignStmt,
    Call,
    ConstBool,
    ForStmt,
    Function,
    IfStmt,
    Program,
    ReturnStmt,
    ScopeStmt,
    Var,
    YieldStmt,
)
from pypto.ir.types import ScalarType, TensorType
from pypto.ir.verifier import verify
from pypto.ir.visit import Mutator, iter_stmts, walk_expr
from pypto.language import parse
from pypto.language.dtypes import FP32, INDEX
from pypto.language.enums import FunctionType, ParamDirection
from pypto.passes import convert_to_ssa, flatten_call_expr
from pypto.passes.pipeline import Pipeline
from pypto.runtime import RunConfig



# ------------------------------------------------------------------------------------- kernels


@pl.jit
def straight(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.add(a, a)
        t = pl.mul(t, t)
        h = pl.cast(t, pl.FP16)
        h = pl.cast(h, pl.FP32)
        out[:] = pl.add(h, t)
    return out


@pl.jit
def carried(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.add(a, a)
        for i in pl.range(3):
            tmp = pl.mul(acc, 0.5)
            acc = pl.add(acc, tmp)
        out[:] = acc
    return out


@pl.jit
def nested_loops(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.mul(a, 0.0)
        for i in pl.range(2):
            for j in pl.range(3):
                acc = pl.add(acc, a)
        out[:] = acc
    return out


@pl.jit
def branches(a: pl.Tensor[[64, 128], pl.FP32], n: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.add(a, a)
        if n > 2:
            x = pl.mul(x, 3.0)
        if n > 4:
            y = pl.add(x, 1.0)
        else:
            y = pl.add(x, 2.0)
        out[:] = pl.add(x, y)
    return out


@pl.jit
def loop_if(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    """A carried value assigned in an if inside the loop; a scope-local value read after the scope."""
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.mul(a, 0.0)
        for i in pl.range(4):
            if i < 2:
                acc = pl.add(acc, a)
            else:
                acc = pl.sub(acc, pl.mul(a, 0.25))
        out[:] = acc
    return out


@pl.jit
def nested_calls(a: pl.Tensor[[64, 128], pl.FP32], b: pl.Tensor[[64, 128], pl.FP32],
                 out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(pl.add(a, b), pl.sub(pl.exp(a), b))
    return out


@pl.jit
def flat_calls(a: pl.Tensor[[64, 128], pl.FP32], b: pl.Tensor[[64, 128], pl.FP32],
               out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    """nested_calls written with one call per statement."""
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.add(a, b)
        e = pl.exp(a)
        d = pl.sub(e, b)
        m = pl.mul(s, d)
        out[:] = m
    return out


@pl.jit.inline
def bump(x: pl.Tensor, k: pl.Tensor):
    x = pl.add(x, k)
    return x


@pl.jit
def inline_nested(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    """An inline call nested in an op call, and one in a loop that re-assigns its argument's name."""
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.mul(bump(a, a), 1.0)
        for i in pl.range(2):
            acc = bump(acc, a)
        out[:] = acc
    return out


@pl.jit
def unrolled(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.mul(a, 0.0)
        for i in pl.unroll(3):
            t = pl.mul(a, 1.0)
            acc = pl.add(acc, t)
        out[:] = acc
    return out


@pl.jit
def tid_chain(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    """A TaskId re-bound in a loop: each task waits for the previous iteration's."""
    with pl.at(level=pl.Level.CORE_GROUP) as tid:
        out[:] = pl.mul(a, 0.0)
    for i in pl.range(3):
        with pl.at(level=pl.Level.CORE_GROUP, deps=[tid]) as tid:
            out[:] = pl.add(out, a)
    return out


def _data(*shapes):
    g = torch.Generator().manual_seed(1)
    return tuple(torch.randn(*s, generator=g) for s in shapes)


def _frontend(kernel, *args):
    return specialize(kernel, args, {}).program


def _loops(f):
    return [s for s in iter_stmts(f.body) if isinstance(s, ForStmt)]


def _ifs(f):
    return [s for s in iter_stmts(f.body) if isinstance(s, IfStmt)]


def _assigns(f):
    return [s for s in iter_stmts(f.body) if isinstance(s, AssignStmt)]


def _ssa_ok(program):
    verify(program, ["SSA"], None, "test")


# ------------------------------------------------------------------------------------- frontend: pre-SSA


def test_straight_line_rebinding_reuses_the_var():
    a, out = _data((64, 128), (64, 128))
    f = _frontend(straight, a, out).entry
    by_name = {}
    for s in _assigns(f):
        by_name.setdefault(s.var.name, []).append(s.var)
    assert len(by_name["t"]) == 2 and by_name["t"][0] is by_name["t"][1]     # same type: the same Var
    h16, h32 = by_name["h"]
    assert h16 is not h32 and h16.type.dtype != h32.type.dtype               # another type: a new Var
    out_param = f.params[1]
    assert any(s.var is out_param for s in _assigns(f))                      # out[:] = ... re-assigns the param
    with pytest.raises(VerificationError, match="property SSA.*defined more than once"):
        _ssa_ok(_frontend(straight, a, out))


def test_loop_without_init_values_is_a_plain_loop():
    a, out = _data((64, 128), (64, 128))
    f = _frontend(carried, a, out).entry
    (loop,) = _loops(f)
    assert loop.iter_args == () and loop.init_values == () and loop.return_vars == ()
    assert not any(isinstance(s, YieldStmt) for s in loop.body)
    acc = next(s.var for s in _assigns(f) if s.var.name == "acc")
    assert [s.var for s in loop.body if isinstance(s, AssignStmt)][-1] is acc  # the body re-assigns acc


def test_if_without_yield_assigns_in_branches():
    a, out = _data((64, 128), (64, 128))
    f = _frontend(branches, a, pl.RUNTIME, out).entry
    first, second = _ifs(f)
    assert first.return_vars == () and second.return_vars == ()
    x = next(s.var for s in _assigns(f) if s.var.name == "x")
    assert first.then_body[0].var is x and first.else_body == ()
    # y is defined in both branches: one Var, visible after the if
    assert second.then_body[0].var is second.else_body[0].var


def test_nested_calls_stay_nested_in_the_frontend():
    a, b, out = _data((64, 128), (64, 128), (64, 128))
    prog = _frontend(nested_calls, a, b, out)
    (assemble,) = [s for s in _assigns(prog.entry) if isinstance(s.value, Call)]
    inner = assemble.value.args[1]
    assert isinstance(inner, Call) and inner.op == "tensor.mul"
    assert [x.op for x in walk_expr(assemble.value) if isinstance(x, Call)] == \
        ["tensor.assemble", "tensor.mul", "tensor.add", "tensor.sub", "tensor.exp"]
    with pytest.raises(VerificationError, match="property NoNestedCalls.*call tensor.mul nested in the arguments of "
                                                "tensor.assemble"):
        verify(prog, ["NoNestedCalls"], None, "frontend")


def test_frontend_prints_and_parses_back():
    a, out = _data((64, 128), (64, 128))
    for prog in (_frontend(carried, a, out), _frontend(branches, a, pl.RUNTIME, out),
                 _frontend(loop_if, a, out), _frontend(straight, a, out), _frontend(inline_nested, a, out)):
        text = prog.as_python()
        again = parse(text)
        assert structural_equal(prog, again), text
        assert again.as_python() == text


# ------------------------------------------------------------------------------------- ConvertToSSA


def test_convert_to_ssa_carries_a_loop_value():
    a, out = _data((64, 128), (64, 128))
    prog = _frontend(carried, a, out)
    ssa = convert_to_ssa.run(prog)
    _ssa_ok(ssa)
    f = ssa.entry
    (loop,) = _loops(f)
    acc0 = next(s.var for s in _assigns(f) if s.var.name == "acc")
    assert len(loop.iter_args) == 1 and loop.init_values[0] is acc0
    assert isinstance(loop.body[-1], YieldStmt) and loop.body[-1].values[0] is loop.body[-2].var
    (rv,) = loop.return_vars
    assemble = next(s for s in _assigns(f) if isinstance(s.value, Call) and s.value.op == "tensor.assemble")
    assert assemble.value.args[1] is rv
    # tmp is loop-local: not carried
    assert [v.name for v in loop.iter_args] == ["acc"]
    text = ssa.as_python()
    assert "for i, (acc_1,) in pl.range(3, init_values=(acc,)):" in text and "acc_3 = pl.yield_(acc_2)" in text, text
    assert structural_equal(ssa, parse(text))


def test_convert_to_ssa_nested_loops():
    a, out = _data((64, 128), (64, 128))
    ssa = convert_to_ssa.run(_frontend(nested_loops, a, out))
    _ssa_ok(ssa)
    outer, inner = _loops(ssa.entry)
    assert len(outer.iter_args) == 1 and len(inner.iter_args) == 1
    assert inner.init_values[0] is outer.iter_args[0]
    assert outer.body[-1].values[0] is inner.return_vars[0]


def test_convert_to_ssa_phis():
    a, out = _data((64, 128), (64, 128))
    ssa = convert_to_ssa.run(_frontend(branches, a, pl.RUNTIME, out))
    _ssa_ok(ssa)
    first, second = _ifs(ssa.entry)
    x0 = next(s.var for s in _assigns(ssa.entry) if s.var.name == "x")
    # x assigned in the then branch only: the empty else branch yields the version from before
    assert [v.name for v in first.return_vars] == ["x"]
    assert first.else_body == (YieldStmt((x0,)),) or first.else_body[-1].values == (x0,)
    assert first.then_body[-1].values[0] is first.then_body[0].var
    # y defined in both branches: a phi; x's phi is read inside the second if
    assert [v.name for v in second.return_vars] == ["y"]
    assert second.then_body[0].value.args[0] is first.return_vars[0]
    assert "pl.yield_(" in ssa.as_python()


def test_convert_to_ssa_if_inside_loop_and_scope_is_transparent():
    a, out = _data((64, 128), (64, 128))
    ssa = convert_to_ssa.run(_frontend(loop_if, a, out))
    _ssa_ok(ssa)
    (scope,) = [s for s in iter_stmts(ssa.entry.body) if isinstance(s, ScopeStmt)]
    (loop,) = _loops(ssa.entry)
    (branch,) = _ifs(ssa.entry)
    assert len(loop.iter_args) == 1 and len(branch.return_vars) == 1
    assert loop.body[-1].values == branch.return_vars
    # the value computed in the scope is read after the loop, still inside the scope's body
    assert scope.body[-1].value.args[1] is loop.return_vars[0]


def test_convert_to_ssa_is_idempotent_and_keeps_ssa_input():
    a, out = _data((64, 128), (64, 128))
    for prog in (_frontend(carried, a, out), _frontend(branches, a, pl.RUNTIME, out), _frontend(loop_if, a, out),
                 _frontend(straight, a, out)):
        once = convert_to_ssa.run(prog)
        twice = convert_to_ssa.run(once)
        assert twice is once                                   # nothing to do: the very same program
        reparsed = parse(once.as_python())                     # an SSA dump parses to SSA as written
        assert convert_to_ssa.run(reparsed) is reparsed
        assert structural_equal(once, reparsed)


def test_frontend_results_match_every_stage():
    """The pre-SSA stages (frontend, InlineFunctions, UnrollLoops) execute under torch_codegen with the
    same results as the SSA ones."""
    (a,) = _data((64, 128))
    for kernel, want in ((carried, (a + a) * 1.5 ** 3), (loop_if, a + a - 0.25 * a - 0.25 * a),
                         (inline_nested, (a + a) + a + a), (unrolled, a * 3)):
        compiled = kernel.compile(a, torch.zeros(64, 128), config=RunConfig(dump_passes=True))
        report = compiled.validate_ir({"a": a, "out": torch.zeros(64, 128)}, {"out": want}, rtol=1e-5, atol=1e-5,
                                      verbose=False)
        assert report.passed, report.format()
        got = torch.zeros(64, 128)
        kernel(a, got)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def _forget_carry(program):
    """A planted bug: ConvertToSSA that forgets to carry one value (every iteration of the first loop
    restarts from the value before the loop)."""
    ssa = convert_to_ssa.run(program)

    class _Forget(Mutator):
        done = False

        def visit_ForStmt(self, s):
            if self.done or not s.iter_args:
                return self.default_stmt(s)
            self.done = True
            body = Mutator()
            body.subst[id(s.iter_args[0])] = s.init_values[0]
            return s.replace(body=body.stmts(s.body))

    return _Forget().program(ssa)


def BuggyConvertToSSA(program):
    return _forget_carry(program)


def test_planted_ssa_bug_is_named_by_validate_ir():
    a, out = _data((64, 128), (64, 128))
    pipe = Pipeline.default().replace("ConvertToSSA", BuggyConvertToSSA)
    compiled = carried.compile(a, out, config=RunConfig(passes=pipe, dump_passes=True))
    with pytest.raises(AssertionError) as e:
        compiled.validate_ir({"a": a, "out": torch.zeros(64, 128)}, {"out": (a + a) * 1.5 ** 3}, rtol=1e-5,
                             atol=1e-5, verbose=False)
    assert "first diverging pass: BuggyConvertToSSA" in str(e.value)
    assert "init_values=(acc,)" in str(e.value)          # the IR diff shows the loop the pass built


def test_dropping_convert_to_ssa_fails_ssa_verification():
    """Without ConvertToSSA nobody produces SSA; a pass that declares it gets it checked."""
    a, out = _data((64, 128), (64, 128))
    prog = _frontend(carried, a, out)

    from pypto.passes.manager import PassInfo

    pipe = Pipeline.default().replace("ConvertToSSA", PassInfo("ClaimsSSA", lambda p, ctx: p, (), ("SSA",)))
    with pytest.raises(VerificationError, match="after 'ClaimsSSA' for property SSA in function 'carried'"):
        run_pipeline(prog, {"platform": "a2a3sim"}, passes=pipe)
    result = run_pipeline(prog, {"platform": "a2a3sim"})
    assert [n for n, _ in result.stages][:5] == ["frontend", "InlineFunctions", "UnrollLoops", "AccWindows", "ConvertToSSA"]


def test_use_not_defined_on_every_path_is_an_error():
    """IR built by hand (the parser rejects this source): x is assigned in one branch only."""
    span = Span("k.py", 7, 4, 7, 20)
    n = Var("n", ScalarType(INDEX))
    a = Var("a", TensorType((64, 128), FP32))
    x = Var("x", a.type)
    use = Call("tensor.add", (x, a), a.type, span)
    y = Var("y", a.type)
    body = (IfStmt(ConstBool(True), (AssignStmt(x, a),), (), ()), AssignStmt(y, use, span), ReturnStmt((y,)))
    f = Function("k", (n, a), (ParamDirection.In, ParamDirection.In), (a.type,), body, FunctionType.Opaque)
    with pytest.raises(SSAViolationError, match="'x' is used here but is not defined on every path") as e:
        convert_to_ssa.run(Program("k", (f,)))
    assert e.value.span == span


def test_carried_type_mismatch_is_an_error():
    """IR built by hand: a Var defined as FP32 carried through a loop that assigns it an FP16 value."""
    span = Span("k.py", 4, 8, 4, 30)
    a = Var("a", TensorType((64, 128), FP32))
    h = Var("h", TensorType((64, 128), pl.FP16))
    x = Var("x", a.type)
    loop = ForStmt(Var("i", ScalarType(INDEX)), pl_const(0), pl_const(2), pl_const(1), (), (),
                   (AssignStmt(h, Call("tensor.cast", (a, pl.FP16, 2), h.type)), AssignStmt(x, h, span)), ())
    f = Function("k", (a,), (ParamDirection.In,), (a.type,), (AssignStmt(x, a), loop, ReturnStmt((x,))))
    with pytest.raises(SSAViolationError, match="loop-carried value 'x' has type .*FP32.* but is assigned a value "
                                                "of type .*FP16") as e:
        convert_to_ssa.run(Program("k", (f,)))
    assert e.value.span == span


def pl_const(v):
    from pypto.ir.nodes import ConstInt

    return ConstInt(v, INDEX)


# ------------------------------------------------------------------------------------- parse-time errors


def test_parse_time_errors_keep_their_spans():
    def err(src, exc, match):
        with pytest.raises(exc, match=match) as e:
            parse(src, filename="<ssa-errors>")
        return e.value

    head = ("import pypto.language as pl\n@pl.program\nclass p:\n    @pl.function\n"
            "    def f(self, a: pl.Tensor[[64], pl.FP32], n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64], pl.FP32]:\n")
    e = err(head + "        x = pl.add(a, a)\n        for i in pl.range(2):\n            x = pl.cast(x, pl.FP16)\n"
                   "        return a\n", ParserTypeError, "Cannot reassign 'x' with a different type")
    assert (e.span.line, e.span.col) == (7, 8) and "loop-carried value keeps its type" in e.hint
    # a name first bound in a loop and read after it is carried (tests/test_forms.py); one whose
    # type has no initial value to give it stays local to the loop: reading it after is an error there
    e = err(head + "        for i in pl.range(2):\n            y = pl.load(a, [0], [64], valid_shape=[32])\n"
                   "        return pl.store(y, [0], a)\n",
            ParserError, "'y' is defined inside the loop body only and is not visible after it")
    assert (e.span.line, e.span.col) == (8, 24) and "assign 'y' before the loop" in e.hint
    e = err(head + "        if n > 1:\n            y = pl.add(a, a)\n        return y\n", ParserError,
            "name 'y' is not defined")
    assert e.span.line == 8
    e = err(head + "        x = pl.add(a, a)\n        if n > 1:\n            x = pl.cast(x, pl.FP16)\n"
                   "        return a\n", ParserTypeError, "Cannot reassign 'x' with a different type")
    assert e.span.line == 7
    # a round trip through another type inside the loop is fine: the loop carries x as FP32
    prog = parse(head + "        x = pl.add(a, a)\n        for i in pl.range(2):\n            x = pl.cast(x, pl.FP16)\n"
                        "            x = pl.cast(x, pl.FP32)\n        return x\n")
    (loop,) = _loops(convert_to_ssa.run(prog).functions[0])
    assert len(loop.iter_args) == 1 and loop.iter_args[0].type.dtype == FP32


# ------------------------------------------------------------------------------------- FlattenCallExpr


def test_flatten_call_expr_hoists_in_evaluation_order():
    a, b, out = _data((64, 128), (64, 128), (64, 128))
    prog = flatten_call_expr.run(convert_to_ssa.run(_frontend(nested_calls, a, b, out)))
    verify(prog, ["SSA", "NoNestedCalls"], None, "test")
    stmts = [s for s in _assigns(prog.entry)]
    assert [s.value.op for s in stmts] == ["tensor.add", "tensor.exp", "tensor.sub", "tensor.mul",
                                           "tensor.assemble"]
    assert [s.var.name for s in stmts[:4]] == ["add__tmp_v0", "exp__tmp_v1", "sub__tmp_v2", "mul__tmp_v3"]
    assert stmts[2].value.args[0] is stmts[1].var and stmts[3].value.args == (stmts[0].var, stmts[2].var)
    assert flatten_call_expr.run(prog) is prog                         # nothing nested: unchanged
    text = prog.as_python()
    assert structural_equal(prog, parse(text))


def test_flatten_call_expr_scalar_expressions_and_loop_bounds():
    src = ("import pypto.language as pl\n@pl.program\nclass p:\n    @pl.function\n"
           "    def f(self, a: pl.Tensor[[64, 64], pl.INDEX], o: pl.Tensor[[64, 64], pl.FP32]) -> "
           "pl.Tensor[[64, 64], pl.FP32]:\n"
           "        for i in pl.range(a[0, 0] + 1):\n"
           "            if a[1, 1] > 3:\n"
           "                o = pl.tensor.adds(o, 1.0)\n"
           "        return o\n")
    prog = flatten_call_expr.run(convert_to_ssa.run(parse(src)))
    verify(prog, ["SSA", "NoNestedCalls"], None, "test")
    f = prog.functions[0]
    assert isinstance(f.body[0], AssignStmt) and f.body[0].value.op == "tensor.read"
    (loop,) = _loops(f)
    assert loop.stop.lhs is f.body[0].var
    assert loop.body[0].value.op == "tensor.read" and isinstance(loop.body[1], IfStmt)


def test_nested_calls_give_bit_identical_results():
    a, b, out = _data((64, 128), (64, 128), (64, 128))
    for plat in ("a2a3sim", "a5sim"):
        x, y = torch.zeros(64, 128), torch.zeros(64, 128)
        nested_calls(a, b, x, config=RunConfig(platform=plat))
        flat_calls(a, b, y, config=RunConfig(platform=plat))
        assert torch.equal(x, y)
        torch.testing.assert_close(x, (a + b) * (torch.exp(a) - b), rtol=1e-5, atol=1e-5)
    lowered_nested = nested_calls.lower(a, b, out)
    lowered_flat = flat_calls.lower(a, b, out)
    assert [s.value.op for s in _assigns(lowered_nested.functions[0]) if isinstance(s.value, Call)] == \
        [s.value.op for s in _assigns(lowered_flat.functions[0]) if isinstance(s.value, Call)]


def test_nested_call_after_flatten_fails_verification():
    a, b, out = _data((64, 128), (64, 128), (64, 128))

    class _Nest(Mutator):
        def visit_AssignStmt(self, s):
            if isinstance(s.value, Call) and s.value.op == "tensor.assemble":
                inner = s.value.args[1]
                return s.replace(value=s.value.replace(args=(s.value.args[0], Call(
                    "tensor.muls", (inner, pl_float(1.0)), inner.type, s.span), *s.value.args[2:])))
            return self.default_stmt(s)

    def Renest(program):
        return _Nest().program(program)

    pipe = Pipeline.default().insert_after("FlattenCallExpr", Renest)
    with pytest.raises(VerificationError, match=r"after 'Renest' for property NoNestedCalls in function "
                                                r"'nested_calls': call tensor.muls nested in the arguments of "
                                                r"tensor.assemble") as e:
        run_pipeline(_frontend(nested_calls, a, b, out), {"platform": "a2a3sim"}, passes=pipe)
    assert "pl.tensor.assemble(out, pl.tensor.muls(" in str(e.value)
    assert e.value.span.line > 0


def pl_float(v):
    from pypto.ir.nodes import ConstFloat

    return ConstFloat(v, FP32)


def test_nested_calls_validate_at_every_stage():
    """The frontend stage (nested calls, pre-SSA) runs under torch_codegen like every later one."""
    a, b, out = _data((64, 128), (64, 128), (64, 128))
    compiled = nested_calls.compile(a, b, out, config=RunConfig(dump_passes=True))
    frontend = (compiled.output_dir / "passes_dump" / "00_frontend.py").read_text()
    assert "pl.tensor.mul(pl.tensor.add(a, b), pl.tensor.sub(pl.tensor.exp(a), b))" in frontend
    report = compiled.validate_ir({"a": a, "b": b, "out": torch.zeros(64, 128)},
                                  {"out": (a + b) * (torch.exp(a) - b)}, rtol=1e-5, atol=1e-5, verbose=False)
    assert report.passed and all(not s.changed for s in report.stages[1:]), report.format()


def test_unroll_loops_printed_form_with_init_values():
    """UnrollLoops still expands the explicit SSA form a dump prints for a not-yet-expanded loop."""
    from pypto.passes import unroll_loops

    src = ("import pypto.language as pl\n@pl.program\nclass p:\n    @pl.function\n"
           "    def f(self, a: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:\n"
           "        for i, (acc,) in pl.unroll(3, init_values=(a,)):\n"
           "            t: pl.Tensor[[64], pl.FP32] = pl.tensor.add(acc, a)\n"
           "            acc_rv = pl.yield_(t)\n"
           "        return acc_rv\n")
    prog = convert_to_ssa.run(unroll_loops.run(parse(src), None))
    _ssa_ok(prog)
    f = prog.functions[0]
    adds = _assigns(f)
    assert not _loops(f) and len(adds) == 3
    assert adds[0].value.args[0] is f.params[0] and adds[1].value.args[0] is adds[0].var
    assert f.body[-1].values[0] is adds[2].var


def test_unroll_loops_on_pre_ssa_reassigns_the_outer_var():
    a, out = _data((64, 128), (64, 128))
    stages = dict(run_pipeline(_frontend(unrolled, a, out), {"platform": "a2a3sim"}).stages)
    f = stages["UnrollLoops"].entry
    assert not _loops(f)
    accs = [s.var for s in _assigns(f) if s.var.name == "acc"]
    ts = [s.var for s in _assigns(f) if s.var.name == "t"]
    assert len(accs) == 4 and all(v is accs[0] for v in accs)       # every copy re-assigns acc
    assert len(ts) == 3 and len({id(v) for v in ts}) == 3           # t is local: one Var per copy
    ssa = stages["ConvertToSSA"].entry
    assert len({id(s.var) for s in _assigns(ssa)}) == len(_assigns(ssa))


def test_task_id_rebound_in_a_loop_is_carried():
    a, out = _data((64, 128), (64, 128))
    prog = _frontend(tid_chain, a, out)
    first, second = [s for s in iter_stmts(prog.entry.body) if isinstance(s, ScopeStmt)]
    assert second.task_id is first.task_id and second.deps == (first.task_id,)   # pre-SSA: one Var
    ssa = convert_to_ssa.run(prog)
    _ssa_ok(ssa)
    (loop,) = _loops(ssa.entry)
    assert [v.name for v in loop.iter_args] == ["tid", "out"] and loop.init_values[0] is first.task_id
    inner = next(s for s in loop.body if isinstance(s, ScopeStmt))
    assert inner.deps == (loop.iter_args[0],) and loop.body[-1].values[0] is inner.task_id
    compiled = tid_chain.compile(a, out, config=RunConfig(dump_passes=True, verification_level="roundtrip"))
    assert compiled.validate_ir({"a": a, "out": torch.zeros(64, 128)}, {"out": a * 3}, rtol=1e-6, atol=1e-6,
                                verbose=False).passed
    got = torch.zeros(64, 128)
    tid_chain(a, got)
    torch.testing.assert_close(got, a * 3, rtol=1e-6, atol=1e-6)
