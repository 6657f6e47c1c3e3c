"""Calls between functions: explicit return parameters (:func:`return_roots`), call directions
and their runtime tags, the compiler's task-dependency edges."""
from __future__ import annotations

from pypto.ir.nodes import (
    AssignStmt, Call, ForStmt, FuncCall, Function, IfStmt, Program, ReturnStmt, ScopeStmt, Var, WhileStmt,
    YieldStmt
)
from pypto.ir.tags import NO_DEP, SCALAR, TENSOR_TAGS, WRITING_TAGS
from pypto.ir.types import describe, ScalarType, TensorType
from pypto.ir.visit import child_stmts, iter_stmts, task_sites, use_exprs, walk_expr
from pypto.language.enums import FunctionType, ParamDirection, TASK_TYPES
from pypto.ir.verifier.registry import function_prop, prop


def return_roots(f: Function) -> list:
    """For each value ``f`` returns, the Out/InOut parameter it is a version of (or ``None``).

    A version of a tensor parameter ``p`` is ``p`` itself, the result of ``tile.store(..., p)`` /
    ``tensor.assemble(p, ...)`` of a version, a loop's iter_arg / return var initialised from a
    version, or an if's return var whose yields are versions of the same parameter.
    """
    root: dict[int, Var] = {id(p): p for p, d in zip(f.params, f.directions)
                            if d in (ParamDirection.Out, ParamDirection.InOut)}
    from pypto.ops.registry import write_targets

    target = write_targets()

    def of(v):
        return root.get(id(v)) if isinstance(v, Var) else None

    def walk(stmts):
        for s in stmts:
            if isinstance(s, AssignStmt):
                if isinstance(s.value, Call) and s.value.op in target:
                    r = of(s.value.args[target[s.value.op]])
                    if r is not None:
                        root[id(s.var)] = r
                elif isinstance(s.value, Var) and of(s.value) is not None:
                    root[id(s.var)] = of(s.value)
            elif isinstance(s, (ForStmt, WhileStmt)):
                for it, init, rv in zip(s.iter_args, s.init_values, s.return_vars):
                    if of(init) is not None:
                        root[id(it)] = root[id(rv)] = of(init)
                walk(s.body)
            elif isinstance(s, IfStmt):
                walk(s.then_body)
                walk(s.else_body)
                ty = s.then_body[-1] if s.then_body and isinstance(s.then_body[-1], YieldStmt) else None
                ey = s.else_body[-1] if s.else_body and isinstance(s.else_body[-1], YieldStmt) else None
                if ty is not None and ey is not None:
                    for rv, a, b in zip(s.return_vars, ty.values, ey.values):
                        if of(a) is not None and of(a) is of(b):
                            root[id(rv)] = of(a)
            elif isinstance(s, ScopeStmt):
                walk(s.body)

    walk(f.body)
    rets = [s for s in f.body if isinstance(s, ReturnStmt)]
    return [of(v) for v in rets[-1].values] if rets else []


@function_prop("ReturnParamsExplicit")
def _return_params(f: Function, program: Program, ctx) -> list:
    """In an InCore function the i-th returned value is a version of the i-th Out/InOut parameter
    (in parameter order), and every Out/InOut parameter is returned."""
    bad = []
    if f.func_type != FunctionType.InCore:  # AIC / AIV group members write Out params the group returns
        return bad
    outs = [p for p, d in zip(f.params, f.directions) if d in (ParamDirection.Out, ParamDirection.InOut)]
    roots = return_roots(f)
    ret = next((s for s in reversed(f.body) if isinstance(s, ReturnStmt)), None)
    if len(roots) != len(outs) or any(r is not p for r, p in zip(roots, outs)):
        want = ", ".join(p.name for p in outs) or "nothing"
        got = ", ".join(r.name if r is not None else "?" for r in roots) or "nothing"
        bad.append((f, ret, f"returns versions of ({got}) but its Out/InOut parameters are ({want})"))
    return bad


# ----------------------------------------------------------------------------- CallDirections


def _signatures(program: Program) -> tuple:
    """What CallDirections reads of a callee: name, directions and each parameter's kind of type."""
    return tuple((g.name, g.directions, tuple(type(p.type) for p in g.params)) for g in program.functions)


def _task_signatures(program: Program) -> tuple:
    """What CallDirectionsResolved reads of a callee: :func:`_signatures` and its function type."""
    return tuple((g.name, g.func_type, g.directions, tuple(type(p.type) for p in g.params))
                 for g in program.functions)


@function_prop("CallDirections", reads=_signatures)
def _call_directions(f: Function, program: Program, ctx) -> list:
    """Every function call passes as many arguments as the callee has parameters; an Out/InOut
    parameter receives a tensor; a scalar goes only to a scalar parameter (and a tensor or tile
    only to a parameter of its own kind)."""
    funcs = {f.name: f for f in program.functions}
    bad = []
    for s in iter_stmts(f.body):
        for e in use_exprs(s):
            for c in walk_expr(e):
                if not isinstance(c, FuncCall) or c.func not in funcs:
                    continue
                g = funcs[c.func]
                if len(c.args) != len(g.params):
                    bad.append((f, s, f"call of '{g.name}' passes {len(c.args)} arguments for "
                                      f"{len(g.params)} parameters"))
                    continue
                for a, p, d in zip(c.args, g.params, g.directions):
                    at = getattr(a, "type", None)
                    if d in (ParamDirection.Out, ParamDirection.InOut) and not isinstance(at, TensorType):
                        bad.append((f, s, f"call of '{g.name}': {d.name} parameter '{p.name}' receives "
                                          f"{describe(at) if at is not None else repr(a)}, not a tensor"))
                    elif isinstance(at, ScalarType) != isinstance(p.type, ScalarType) or \
                            isinstance(at, TensorType) != isinstance(p.type, TensorType):
                        bad.append((f, s, f"call of '{g.name}': parameter '{p.name}' "
                                          f"({describe(p.type)}) receives {describe(at)}"))
    return bad


@function_prop("CallDirectionsResolved", reads=_task_signatures)
def _call_directions_resolved(f: Function, program: Program, ctx) -> list:
    """Every call of an InCore function from an Orchestration function carries its runtime tags
    (``FuncCall.arg_directions``, DeriveCallDirections): one per argument; a scalar parameter gets
    ``SCALAR``; a tensor one ``INPUT`` / ``INOUT`` / ``OUTPUT_EXISTING`` / ``NO_DEP``, ``NO_DEP``
    exactly for the ``no_dep_args``; an ``In`` parameter never a writing tag (``INOUT`` /
    ``OUTPUT_EXISTING``), an ``Out`` / ``InOut`` one never ``INPUT`` (nor ``InOut`` ``OUTPUT_EXISTING``).
    An argument carrying compiler edges (``compiler_dep_edges``, AutoDeriveTaskDependencies) had its
    lookup replaced: it is ``NO_DEP`` for an ``In`` parameter and ``OUTPUT_EXISTING`` otherwise."""
    funcs = {f.name: f for f in program.functions}
    bad = []
    if f.func_type != FunctionType.Orchestration:
        return bad
    for s in iter_stmts(f.body):
        for e in use_exprs(s):
            for c in walk_expr(e):
                g = funcs.get(c.func) if isinstance(c, FuncCall) else None
                if g is None or g.func_type not in TASK_TYPES:
                    continue
                tags = c.arg_directions
                if len(tags) != len(c.args):
                    bad.append((f, s, f"call of '{g.name}' has {len(tags)} runtime tags for {len(c.args)} "
                                      f"arguments"))
                    continue
                derived = {i for i, _ in c.compiler_dep_edges}
                for i, (t, p, d) in enumerate(zip(tags, g.params, g.directions)):
                    where = f"call of '{g.name}': argument {i} ('{p.name}', {d.name})"
                    if i in derived and not isinstance(p.type, ScalarType):
                        want = NO_DEP if d == ParamDirection.In else "OUTPUT_EXISTING"
                        if t != want or i in c.no_dep_args:
                            bad.append((f, s, f"{where} carries compiler edges, so its tag must be {want} "
                                              f"(and it is not a no_dep argument), got {t}"))
                    elif isinstance(p.type, ScalarType):
                        if t != SCALAR:
                            bad.append((f, s, f"{where} is a scalar but tagged {t}, not SCALAR"))
                    elif t not in TENSOR_TAGS:
                        bad.append((f, s, f"{where} is a tensor but tagged {t!r}"))
                    elif (t == NO_DEP) != (i in c.no_dep_args):
                        bad.append((f, s, f"{where} tagged {t} but it is "
                                          f"{'' if i in c.no_dep_args else 'not '}a no_dep argument"))
                    elif d == ParamDirection.In and t in WRITING_TAGS:
                        bad.append((f, s, f"{where} is only read but tagged {t}"))
                    elif d != ParamDirection.In and t == "INPUT":
                        bad.append((f, s, f"{where} is written but tagged INPUT"))
                    elif d == ParamDirection.InOut and t == "OUTPUT_EXISTING":
                        bad.append((f, s, f"{where} is read and written but tagged OUTPUT_EXISTING"))
    return bad


@prop("TaskDependenciesDerived")
def _task_dependencies_derived(program: Program, ctx) -> list:
    """Every compiler edge (``FuncCall.compiler_dep_edges``, AutoDeriveTaskDependencies) of an
    orchestration task call names a tensor argument of the call (each at most once) and producer
    sites of the *same* orchestration function that are earlier task calls, not manual, and always
    submitted before the consumer: in the consumer's statement list or an enclosing one, before the
    statement holding the consumer (a call in another branch, or in a loop the consumer is not in,
    may not have run, or may have run several times). Manual calls carry no edges."""
    funcs = {f.name: f for f in program.functions}
    bad: list = []
    for f in program.functions:
        if f.func_type == FunctionType.Orchestration:
            _check_dep_edges(f, f.body, task_sites(f, funcs), funcs, set(), set(), bad)
    return bad


def _check_dep_edges(f: Function, stmts, sites: dict, funcs: dict, visible: set, manual_sites: set,
                     bad: list) -> None:
    """One statement list of :func:`_task_dependencies_derived`; ``visible`` holds the sites
    submitted (once) before it on every path, ``manual_sites`` the manual calls seen so far."""
    visible = set(visible)
    for s in stmts:
        calls = [c for e in use_exprs(s) for c in walk_expr(e) if isinstance(c, FuncCall) and id(c) in sites]
        for c in calls:
            site = sites[id(c)]
            if c.manual:
                manual_sites.add(site)
                if c.compiler_dep_edges:
                    bad.append((f, s, f"manual call of '{c.func}' carries compiler edges"))
            params = funcs[c.func].params
            seen_args: set = set()
            for i, producers in c.compiler_dep_edges:
                if not 0 <= i < len(c.args) or i in seen_args or isinstance(params[i].type, ScalarType):
                    bad.append((f, s, f"call of '{c.func}' (site {site}): compiler edge on argument {i}, "
                                      f"which is not a distinct tensor argument"))
                seen_args.add(i)
                for k in producers:
                    if k >= site or k not in visible or k in manual_sites:
                        bad.append((f, s, f"call of '{c.func}' (site {site}): compiler edge on argument {i} to "
                                          f"site {k}, which is not an earlier non-manual task always submitted "
                                          f"before it"))
        for body in child_stmts(s):
            _check_dep_edges(f, body, sites, funcs, visible, manual_sites, bad)
        visible.update(sites[id(c)] for c in calls)
