"""Lowered Group function (a mixed kernel) -> the module of one cluster task.

A ``FunctionType.Group`` function calls one ``FunctionType.AIC`` function and one ``FunctionType.AIV``
function (in either order; each at most once) with its own parameters. Orchestration submits the
group as one task; the simulator runs it on one cluster: the AIC member on the cube core, the AIV
member on one vector core, or on both (``dual_aiv_dispatch`` on the AIV function: each lane runs
the body as written, telling itself apart by ``pl.tile.get_subblock_idx()``), each core with its own
buffers, the cores interleaved in
simulated time and talking only through the cross-core pipes (:mod:`pypto.runtime.cross_core`).

The module holds ``GROUP`` (the members, their argument maps and the lane count), an empty
``TILES`` (the members' tiles live in the cluster's memories, not the task core's) and
``kernel(v, *params, _block, _group)``, a generator handing the run to ``_group``, the cluster the
scheduler placed the task on.
"""
from __future__ import annotations

from pypto.codegen.common import PyNames
from pypto.errors import CodegenError
from pypto.ir.nodes import AssignStmt, EvalStmt, FuncCall, Function, Program, ReturnStmt, TupleGetItem, Var
from pypto.language.enums import FunctionType, SplitMode
from pypto.passes.param_writes import returned_params


def _split_code(v) -> int:
    if isinstance(v, SplitMode):
        return {SplitMode.NONE: 0, SplitMode.UP_DOWN: 1, SplitMode.LEFT_RIGHT: 2}[v]
    return int(v or 0)


def group_members(g: Function, program: Program) -> list[tuple[Function, FuncCall, str]]:
    """``(callee, call, core kind)`` of each member call of group ``g``, in body order; raises a
    located :class:`CodegenError` for a body that is not one AIC and one AIV call of parameters."""
    out = []
    results: set = set()   # vars a member call assigned: their tuple elements may be picked
    for s in g.body:
        call = s.value if isinstance(s, AssignStmt) else s.expr if isinstance(s, EvalStmt) else None
        if isinstance(s, ReturnStmt):
            continue
        if isinstance(call, TupleGetItem) and isinstance(call.value, Var) and id(call.value) in results:
            continue   # `r = r_ret[k]`: one of the values a member returns (its several Out parameters)
        if isinstance(s, AssignStmt) and isinstance(call, FuncCall):
            results.add(id(s.var))
        if not isinstance(call, FuncCall):
            raise CodegenError(f"Group function '{g.name}' may only call its AIC and AIV functions "
                               f"(and return)", s.span, "move other work into the AIC / AIV functions")
        callee = program.get_function(call.func)
        if callee.func_type not in (FunctionType.AIC, FunctionType.AIV):
            raise CodegenError(f"Group function '{g.name}' calls '{callee.name}', a {callee.func_type.name} "
                               f"function; a group's members are one AIC and one AIV function", call.span)
        kind = "aic" if callee.func_type == FunctionType.AIC else "aiv"
        if any(k == kind for _, _, k in out):
            raise CodegenError(f"Group function '{g.name}' calls two {kind.upper()} functions; a cluster "
                               f"runs one AIC and one AIV function", call.span)
        for a in call.args:
            if not (isinstance(a, Var) and any(a is p for p in g.params)):
                raise CodegenError(f"Group function '{g.name}': the arguments of '{callee.name}' must be the "
                                   f"group's parameters", call.span)
        out.append((callee, call, kind))
    if not out:
        raise CodegenError(f"Group function '{g.name}' calls no AIC / AIV function", g.span)
    return out


def aiv_lanes(g: Function, members) -> int:
    """How many vector cores run the AIV member: 2 under a split or ``dual_aiv_dispatch``, else 1."""
    aiv = next((f for f, _, k in members if k == "aiv"), None)
    if aiv is None:
        return 0
    if _split_code(aiv.attr("split")) and not aiv.attr("dual_aiv_dispatch"):
        # SplitVectorKernel stamps dual_aiv_dispatch on every split AIV function it halves
        raise CodegenError(f"AIV function '{aiv.name}' has attrs split={aiv.attr('split')!r} but was not split "
                           f"per lane (SplitVectorKernel did not run)", aiv.span)
    return 2 if aiv.attr("dual_aiv_dispatch") else 1


def group_returned_params(g: Function, program: Program) -> list[int]:
    """For each value the group returns, the index of the group parameter it is a version of
    (through the member call that returned it), -1 otherwise."""
    root: dict[int, int] = {id(p): i for i, p in enumerate(g.params)}
    parts: dict[int, list] = {}   # a member call's tuple result: the group parameter of each element
    for s in g.body:
        if isinstance(s, AssignStmt) and isinstance(s.value, FuncCall):
            callee = program.get_function(s.value.func)
            rp = [root.get(id(s.value.args[i]), -1) if i >= 0 else -1 for i in returned_params(callee)]
            if len(rp) == 1 and rp[0] >= 0:
                root[id(s.var)] = rp[0]
            elif len(rp) > 1:
                parts[id(s.var)] = rp
        elif (isinstance(s, AssignStmt) and isinstance(s.value, TupleGetItem)
              and isinstance(s.value.value, Var) and id(s.value.value) in parts):
            k = parts[id(s.value.value)]
            if 0 <= s.value.index < len(k) and k[s.value.index] >= 0:
                root[id(s.var)] = k[s.value.index]
        if isinstance(s, ReturnStmt):
            return [root.get(id(v), -1) if isinstance(v, Var) else -1 for v in s.values]
    return []


def generate_group(g: Function, program: Program) -> str:
    """Source of the cluster-task module of the lowered Group function ``g``."""
    members = group_members(g, program)
    index = {id(p): i for i, p in enumerate(g.params)}
    spec = [(f.name, k, [index[id(a)] for a in c.args], f"{c.span.file}:{c.span.line}") for f, c, k in members]
    names = PyNames()
    params = [names.define(p) for p in g.params]
    lanes = aiv_lanes(g, members)
    return "\n".join([
        f'"""Generated by pypto: mixed-kernel group {g.name!r} (one cluster task). Do not edit."""', "",
        "# (member function, core kind, group parameter index of each argument, call site)",
        f"GROUP = {{'name': {g.name!r}, 'members': {spec!r}, 'aiv_lanes': {lanes}}}",
        "TILES = []   # the members' tiles are in the cluster's core memories", "", "",
        f"def kernel(v, {''.join(p + ', ' for p in params)}_block=(0, 1), _group=None):",
        f'    """{g.name}({", ".join(params)}): runs the members on the cluster ``_group``."""',
        f"    return (yield from _group.run(GROUP, ({''.join(p + ', ' for p in params)}), _block))",
        "", f"KERNEL_NAME = {'group ' + repr(g.name)!r}", "",
    ])
