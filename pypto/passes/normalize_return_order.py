"""NormalizeReturnOrder: an InCore function returns its Out/InOut parameters' final versions, the
i-th returned value belonging to the i-th Out/InOut parameter in parameter order.

Requires: SplitIncoreOrch, IncoreTileOps. Produces: ReturnParamsExplicit (checked by the verifier).

* Which parameter a returned value belongs to is found by following versions
  (:func:`pypto.ir.verifier.return_roots`): ``tile.store(..., p)`` / ``tensor.assemble(p, ...)``
  results, loop iter_args / return vars and if return vars.
* The returns are reordered; an Out/InOut parameter that is not returned is appended (its final
  top-level version, else the parameter itself). ``return_types`` follow.
* Every call site follows: the ``TupleGetItem`` indices of the call's result are remapped; a call
  whose single result becomes one of several is rewritten ``r = call`` ->
  ``r_ret = call; r = r_ret[k]``.
* A returned In parameter, unchanged (``return src``: the reference accepts it), is not a result of
  the kernel: it is dropped from the returns and every call site takes the argument it passed for
  that parameter instead (the same tensor, nothing to copy).
* Any other returned value that is not a version of an Out/InOut parameter is a compile error (an
  InCore function can only hand results back through its output tensors).
"""
from __future__ import annotations

from pypto.errors import PassError
from pypto.ir.nodes import (
    AssignStmt, ForStmt, FuncCall, Function, Program, ReturnStmt, TupleGetItem, Var, WhileStmt,
)
from pypto.ir.types import TupleType
from pypto.ir.verifier import return_roots
from pypto.ir.visit import Mutator
from pypto.language.enums import KERNEL_TYPES, ParamDirection
from pypto.passes.context import PassContext
from pypto.passes.inject_gm_pipe_buffer import PARAM as GM_PIPE_BUFFER
from pypto.ir.nodes import Call
from pypto.ops.registry import write_targets

NAME = "NormalizeReturnOrder"
REQUIRES = ("SplitIncoreOrch", "IncoreTileOps")
PRODUCES = ("ReturnParamsExplicit",)


def run(program: Program, ctx: PassContext) -> Program:
    remap: dict[str, tuple[list[int], int]] = {}   # func -> (new index of old result i, old count)
    funcs = []
    for f in program.functions:
        if f.func_type in KERNEL_TYPES:
            nf, perm = _normalize(f)
            if perm is not None:
                remap[f.name] = (perm, len(f.return_types))
            funcs.append(nf)
        else:
            funcs.append(f)
    program = program.replace(functions=tuple(funcs))
    if not remap:
        return program
    return _CallSites(remap, {f.name: f for f in program.functions}).program(program)


def _normalize(f: Function):
    # (the GM pipe workspace InjectGMPipeBuffer adds is scratch the kernel writes, not a result)
    outs = [p for p, d in zip(f.params, f.directions)
            if d in (ParamDirection.Out, ParamDirection.InOut) and p.name != GM_PIPE_BUFFER]
    ret_i = max((i for i, s in enumerate(f.body) if isinstance(s, ReturnStmt)), default=None)
    if ret_i is None:
        return f, None
    ret = f.body[ret_i]
    roots = return_roots(f)
    if len(roots) == len(outs) and all(r is p for r, p in zip(roots, outs)):
        return f, None
    ins = {id(p): j for j, (p, d) in enumerate(zip(f.params, f.directions)) if d == ParamDirection.In}
    for v, r in zip(ret.values, roots):
        if r is None and not (isinstance(v, Var) and id(v) in ins):
            # a user program (a reshape / new tensor returned as is), not a compiler fault: a
            # kernel's results are the global tensors it writes, which the caller passes in
            raise PassError(f"InCore function '{f.name}' returns '{getattr(v, 'name', v)}', which is neither "
                            "one of its Out/InOut parameters (after its stores) nor an In parameter passed "
                            "through unchanged: a kernel returns the tensors it writes", ret.span,
                            "add an output parameter (out: pl.Out[pl.Tensor[[...], dtype]]), write the value into "
                            "it (out = pl.assemble(out, value, [0, 0]) or pl.store) and return out")
    finals = _final_versions(f)
    values, perm = [], [0] * len(roots)
    for i, (v, r) in enumerate(zip(ret.values, roots)):
        if r is None:
            perm[i] = _Arg(ins[id(v)])   # an In parameter passed through: the caller's argument
    for k, p in enumerate(outs):
        hit = [i for i, r in enumerate(roots) if r is p]
        if hit:
            for i in hit[1:]:
                raise PassError(f"InCore function '{f.name}' returns parameter '{p.name}' twice", ret.span,
                                f"return '{p.name}' once (the caller can use the one result twice)")
            perm[hit[0]] = k
            values.append(ret.values[hit[0]])
        else:
            values.append(finals.get(id(p), p))
    new_ret = ret.replace(values=tuple(values))
    body = f.body[:ret_i] + (new_ret,) + f.body[ret_i + 1:]
    return f.replace(body=body, return_types=tuple(v.type for v in values)), perm


def _final_versions(f: Function) -> dict[int, Var]:
    """param id -> its last top-level version before the return."""
    target = write_targets()
    root = {id(p): p for p in f.params}
    final: dict[int, Var] = {}
    for s in f.body:
        pairs = []
        if isinstance(s, AssignStmt) and isinstance(s.value, Call) and s.value.op in target:
            pairs = [(s.var, s.value.args[target[s.value.op]])]
        elif isinstance(s, (ForStmt, WhileStmt)):
            pairs = list(zip(s.return_vars, s.init_values))
        for v, src in pairs:
            r = root.get(id(src)) if isinstance(src, Var) else None
            if r is not None:
                root[id(v)] = r
                final[id(r)] = v
    return final


class _Arg(int):
    """In a call-site permutation: the old result is the call's argument of this index."""


class _CallSites(Mutator):
    def __init__(self, remap, funcs):
        super().__init__()
        self.remap = remap
        self.funcs = funcs
        self.holders: dict[int, list[int]] = {}   # new holder var id -> perm

    def visit_AssignStmt(self, s: AssignStmt):
        value = self.expr(s.value)
        if not (isinstance(value, FuncCall) and value.func in self.remap):
            return s.replace(value=value) if value is not s.value else s
        perm, old_n = self.remap[value.func]
        g = self.funcs[value.func]
        rtypes = g.return_types
        call = value.replace(type=rtypes[0] if len(rtypes) == 1 else TupleType(rtypes))
        if old_n == 1 and isinstance(perm[0], _Arg):
            holder = Var(f"{s.var.name}_ret", call.type, s.span)
            return [AssignStmt(holder, call, s.span), s.replace(value=value.args[perm[0]])]
        if any(isinstance(k, _Arg) for k in perm):
            holder = self.redefine(s.var, Var(s.var.name, call.type, s.var.span))
            self.holders[id(holder)] = (perm, value.args, len(rtypes))
            return s.replace(var=holder, value=call)
        if len(rtypes) == 1:
            return s.replace(value=call)
        if old_n == 1:
            holder = Var(f"{s.var.name}_ret", call.type, s.span)
            return [AssignStmt(holder, call, s.span),
                    s.replace(value=TupleGetItem(holder, perm[0], s.var.type, s.span))]
        holder = self.redefine(s.var, Var(s.var.name, call.type, s.var.span))
        self.holders[id(holder)] = perm
        return s.replace(var=holder, value=call)

    def visit_TupleGetItem(self, e: TupleGetItem):
        e = self.rebuild(e)
        perm = self.holders.get(id(e.value)) if isinstance(e.value, Var) else None
        if isinstance(perm, tuple):   # results mixing kernel outputs and passed-through arguments
            perm, args, n = perm
            k = perm[e.index]
            if isinstance(k, _Arg):
                return args[k]
            return e.value if n == 1 else e.replace(index=k)
        return e.replace(index=perm[e.index]) if perm is not None else e

