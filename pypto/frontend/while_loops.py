"""``while`` loops: a plain ``while cond:`` and the reference's ``pl.while_`` / ``pl.cond`` form.

Both become a :class:`~pypto.ir.nodes.WhileStmt`; this module holds their parsing so that the
function parser (:mod:`pypto.frontend.parser`) only dispatches here.

* ``while cond:`` is parsed like a ``pl.range`` loop without ``init_values`` (pre-SSA): the body
  re-assigns the Vars of names bound before the loop, and ConvertToSSA turns the ones it re-assigns
  into iter_args that ``cond`` then reads. A Python constant the body re-binds (``i = 0`` before the
  loop) becomes a scalar Var first, or the condition would be folded once at compile time; a name
  first bound in the body and read after the loop gets an initial value as in ``pl.range``.
  ``break`` / ``continue`` are allowed (the reference's CtrlFlowTransform accepts them in a while):
  they are rewritten away as in ``pl.range`` (:mod:`pypto.frontend.loop_exits`) and a ``break``
  also ends the loop through the condition (``not _pl_brk and cond``), so no empty trips remain.
* ``for (a, b) in pl.while_(init_values=(x, y)):`` must start with ``pl.cond(c)`` and end with
  ``[ra, rb =] pl.yield_(...)`` (the reference's pattern). Names of the enclosing code re-bound in
  the body are carried implicitly after the explicit ones, as in ``pl.range(init_values=...)``.
  ``break`` / ``continue`` are refused there, as in a ``pl.range`` with ``init_values`` (the yield
  would have to be guarded too).

A condition that never becomes false does not hang: both executors stop the loop after
``RunConfig.max_while_iterations`` iterations (:func:`pypto.ops.support.while_limit`) with an
error located at the loop.
"""
from __future__ import annotations

import ast

from pypto.errors import ParserSyntaxError, ParserTypeError, UnsupportedFeatureError
from pypto.frontend import loop_exits
from pypto.ir.nodes import BinOp, ConstBool, ConstFloat, ConstInt, Expr, UnaryOp, Var, WhileStmt, YieldStmt
from pypto.ir.types import ScalarType, describe
from pypto.language.dtypes import BOOL


def _condition(fp, node: ast.expr, span) -> Expr:
    """The loop condition as a BOOL scalar expression (a non-BOOL scalar ``n`` means ``n != 0``)."""
    from pypto.frontend import parser as P

    c = fp.expr(node)
    if isinstance(c, bool):
        return ConstBool(c, fp.span(node))
    if isinstance(c, int) or isinstance(c, float):
        return ConstBool(bool(c), fp.span(node))
    if not isinstance(c, Expr) or not isinstance(c.type, ScalarType):
        raise ParserTypeError(f"a while condition must be a scalar, got {P._describe_static(c)}", fp.span(node),
                              "compare scalars, e.g. 'while i < n:'")
    from pypto.ir.nodes import Call, FuncCall
    from pypto.ir.visit import walk_expr

    if any(isinstance(x, (Call, FuncCall)) for x in walk_expr(c)):
        raise ParserTypeError("a while condition cannot call an op or function: it is evaluated before every "
                              "iteration", fp.span(node),
                              "compute the value into a scalar before the loop and again at the end of the body, "
                              "and test that scalar")
    if c.type.dtype != BOOL:
        dt = c.type.dtype
        zero = ConstFloat(0.0, dt, span) if dt.is_float() else ConstInt(0, dt, span)
        c = BinOp("ne", c, zero, ScalarType(BOOL), fp.span(node))
    return c


def parse_while(fp, node: ast.While, retry: bool = True) -> None:
    """A plain ``while cond: ...`` (see the module docstring)."""
    from pypto.frontend import parser as P

    span = fp.span(node)
    if node.orelse:
        raise UnsupportedFeatureError("'while ... else' is not supported in a kernel", span,
                                      "move the else part after the loop (with a flag if it depends on a break)")
    body_nodes = list(node.body)
    brk = False
    if loop_exits.find_exit(body_nodes) is not None:
        brk = loop_exits.has_break(body_nodes)
        if brk:
            fp.define(loop_exits.BRK, ConstBool(False, span), node)
        body_nodes = loop_exits.rewrite_body(body_nodes, node)
        if brk:   # the guard rewrite_body puts around the body is the condition's job here
            body_nodes = body_nodes[0].body
    assigned = P._assigned_names(body_nodes)
    # a Python constant re-bound in the body is a runtime value: a scalar Var before the loop
    for n in assigned:
        cur = fp.scope.get(n, P._UNBOUND)
        if isinstance(cur, (bool, int, float)) and not isinstance(cur, type):
            fp.define(n, fp._scalar_const(cur, None, node), node)
    cond = _condition(fp, node.test, span)
    if brk:
        flag = fp.scope[loop_exits.BRK]
        cond = BinOp("and", UnaryOp("not", flag, ScalarType(BOOL), span), cond, ScalarType(BOOL), span)
    outer = fp.scope
    fp.scope = outer.child()
    fp.frames.append((outer,))
    try:
        body = fp.parse_block(body_nodes)
    finally:
        fp.frames.pop()
    inner = fp.scope
    fp.scope = outer
    if retry:
        escaping = [n for n in P._assigned_names(node.body)
                    if n not in outer and isinstance(fp.last_bound.get(n), Var) and fp._read_after(n, node)]
        inits = {}
        for n in escaping:
            try:
                inits[n] = fp._undefined_value(n, fp.last_bound[n], outer, node)
            except P.ParserError:
                continue
        if inits:
            for n, v in inits.items():
                fp.define(n, v, node)
            parse_while(fp, node, retry=False)
            return
    for n, before in outer.items():
        after = inner.get(n, P._UNBOUND)
        if not isinstance(before, Var) or after is before or after is P._UNBOUND:
            continue
        raise ParserTypeError(f"Cannot reassign '{n}' with a different type: was {describe(before.type)}, "
                              f"got {P._describe_static(after)}{P._type_detail(before, after)}", span,
                              "a loop-carried value keeps its type; use a new name")
    for n in inner:
        if n not in outer:
            fp.loop_locals[n] = span
    fp.emit(WhileStmt(cond, (), (), tuple(body), (), span))


def parse_while_iter(fp, node: ast.For, call: ast.Call) -> None:
    """``for (a, b) in pl.while_(init_values=(x, y)): pl.cond(c) ... [ra, rb =] pl.yield_(...)``."""
    from pypto.frontend import parser as P

    span = fp.span(node)
    kw = {k.arg: k.value for k in call.keywords}
    init_node = kw.pop("init_values", None)
    if call.args or kw or init_node is None:
        raise ParserTypeError("pl.while_ takes only init_values=(...)", fp.span(call),
                              "for (x,) in pl.while_(init_values=(0,)):")
    exit_stmt = loop_exits.find_exit(node.body)
    if exit_stmt is not None:
        word = "break" if isinstance(exit_stmt, ast.Break) else "continue"
        raise UnsupportedFeatureError(f"'{word}' in a pl.while_ loop is not supported", fp.span(exit_stmt),
                                      "write a plain 'while cond:' loop (it carries values by re-assignment "
                                      "and allows break/continue), or fold the exit into pl.cond")
    t = node.target
    elts = t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]
    names = [e.id for e in elts if isinstance(e, ast.Name)]
    if len(names) != len(elts):
        raise ParserSyntaxError("the pl.while_ target must be names: for (a, b) in pl.while_(...)", fp.span(t))
    inits = [fp.expr(e) for e in (init_node.elts if isinstance(init_node, (ast.Tuple, ast.List)) else [init_node])]
    if len(names) != len(inits):
        raise ParserTypeError(f"{len(names)} carried names for {len(inits)} init_values", fp.span(t))
    inits = [P.to_expr(v, span) for v in inits]
    body_nodes = list(node.body)
    first = body_nodes[0] if body_nodes else None
    if not (isinstance(first, ast.Expr) and P._is_construct_call(first.value, fp.resolve_static, "cond")):
        raise ParserSyntaxError("a pl.while_ loop body must start with pl.cond(condition)",
                                fp.span(first) if first is not None else span, "pl.cond(x < 10)")
    last = body_nodes[-1]
    targets, yield_call = P._yield_parts(last, fp.resolve_static)
    if yield_call is None or len(body_nodes) < 2:
        raise ParserSyntaxError("a pl.while_ loop must end with 'x = pl.yield_(...)'", span)
    cond_call = first.value
    if len(cond_call.args) != 1 or cond_call.keywords:
        raise ParserTypeError("pl.cond takes one condition", fp.span(cond_call))
    outer = fp.scope
    fp.scope = outer.child()
    iter_args = [Var(n, fp.declared.pop(n, v.type), span) for n, v in zip(names, inits)]
    for n, it in zip(names, iter_args):
        fp.scope[n] = it
    fp.frames.append((outer,))
    try:
        cond = _condition(fp, cond_call.args[0], span)
        body = fp.parse_block(body_nodes[1:-1])
        saved, fp.block = fp.block, body
        values = [fp.yield_value(fp.expr(a), fp.span(a)) for a in yield_call.args]
        fp.block = saved
    finally:
        fp.frames.pop()
    inner = fp.scope
    fp.scope = outer
    for n, before in outer.items():
        after = inner.get(n, P._UNBOUND)
        if n in names or not isinstance(before, Var) or after is P._UNBOUND or after is before:
            continue
        raise ParserTypeError(f"Cannot reassign '{n}' with a different type: was {describe(before.type)}, "
                              f"got {P._describe_static(after)}{P._type_detail(before, after)}", span,
                              "a loop-carried value keeps its type; use a new name")
    for n in inner:
        if n not in outer and n not in names:
            fp.loop_locals[n] = span
    if len(values) != len(iter_args):
        raise ParserTypeError(f"pl.yield_ gives {len(values)} values for {len(iter_args)} carried values",
                              fp.span(last))
    for it, v in zip(iter_args, values):
        if P._strip_memref(v.type) != P._strip_memref(it.type):
            raise ParserTypeError(f"Cannot reassign '{it.name}' with a different type: was "
                                  f"{describe(it.type)}, got {describe(v.type)}{P._type_detail(it, v)}",
                                  fp.span(last))
    if targets and len(targets) != len(values):
        raise ParserTypeError("pl.yield_ targets and values differ in number", fp.span(last))
    rv_names = targets or [f"{n}_rv" for n in names]
    rvs = tuple(Var(n, fp.declared.pop(n, it.type), fp.span(last)) for n, it in zip(rv_names, iter_args))
    body.append(YieldStmt(tuple(values), fp.span(last)))
    fp.emit(WhileStmt(cond, tuple(iter_args), tuple(inits), tuple(body), rvs, span))
    for n, rv in zip(targets, rvs):
        fp.bind_result(n, rv, last)


def refuse_stray_cond(fp, node: ast.AST) -> None:
    """``pl.cond`` anywhere but first in a ``pl.while_`` body."""
    raise ParserSyntaxError("pl.cond must be the first statement of a pl.while_ loop body", fp.span(node),
                            "for (x,) in pl.while_(init_values=(0,)):\n    pl.cond(x < 10)")
