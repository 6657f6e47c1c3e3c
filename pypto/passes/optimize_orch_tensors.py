"""OptimizeOrchTensors: an orchestration loop that allocates a fresh output tensor for a kernel every
iteration, although the kernel only turns the loop-carried tensor into the next one, hands the
kernel the carried tensor itself as an ``InOut`` parameter instead (the reference's pattern 1,
"iter-arg reuse").

Requires: SSA, IncoreTileOps (kernels are outlined and hold tile ops). Produces: nothing new.

Before::

    for i, (x,) in pl.range(n, init_values=(buf,)):
        out = pl.tensor.create([64], pl.FP32)
        y = self.kernel(x, out)          # kernel(x: In, out: Out): loads x, ..., stores into out
        x_next = pl.yield_(y)

After::

    for i, (x,) in pl.range(n, init_values=(buf,)):
        y = self.kernel(x)               # kernel(x: InOut): loads x, ..., stores into x
        x_next = pl.yield_(y)

The per-iteration ``tensor.create`` disappears and the kernel writes its result over the carried
value, which nothing reads afterwards. The rewrite keeps every value unchanged, so it fires only
when that is provable (anything else is left as it is):

* the loop (``pl.range`` / ``pl.pipeline`` / while) yields the call's result for that Out parameter
  (the call's value itself, or its ``[i]`` element for a multi-result kernel) back into carried
  value ``x``, and ``x`` is passed as an ``In`` argument of the same call and read nowhere else in
  the loop body;
* ``x`` starts as a ``tensor.create`` of this function read by nothing but the loop (a parameter,
  or a tensor read after the loop, must keep its contents: the kernel now writes over it);
* the Out argument is a ``tensor.create`` of the loop body read only by this call, with the same
  shape and dtype as ``x``;
* the kernel is called once in the program (its signature changes), reads the In parameter only
  through ``tile.load``s at the top level of its body, all before the one top-level ``tile.store``
  into the Out parameter, which is what it returns for it; so every read of ``x`` happens before it
  is overwritten.

Not done here (they change nothing the simulator computes): the reference's stride patterns 2 and
4 (tensor views carry their parent's strides from the frontend), the assemble-loop rewrite
(pattern 3: FuseCreateAssembleToView covers the orchestration form) and the opt-in window
externalisation (pattern 5, ``windowize=True``).
"""
from __future__ import annotations

from pypto.ir.nodes import AssignStmt, Call, ForStmt, FuncCall, Program, ReturnStmt, TupleGetItem, Var, WhileStmt
from pypto.ir.types import TensorType
from pypto.ir.visit import Mutator, iter_exprs, iter_stmts
from pypto.language.enums import FunctionType, ParamDirection
from pypto.passes.context import PassContext

NAME = "OptimizeOrchTensors"
REQUIRES = ("SSA", "IncoreTileOps")
PRODUCES = ()


def run(program: Program, ctx: PassContext) -> Program:
    funcs = {f.name: f for f in program.functions}
    calls = _call_counts(program)
    merges: dict[str, tuple[int, int]] = {}    # kernel -> (Out param index, In param index)
    creates: set[int] = set()                  # ids of the tensor.create statements made dead
    for f in program.functions:
        if f.func_type == FunctionType.InCore:
            continue
        counts: dict[int, int] = {}
        for e in iter_exprs(f.body):
            if isinstance(e, Var):
                counts[id(e)] = counts.get(id(e), 0) + 1
        # tensors this function allocates and reads nowhere but as one loop's initial value: a
        # kernel may overwrite them (a parameter or a value read later must keep its contents)
        own = {id(s.var) for s in iter_stmts(f.body) if isinstance(s, AssignStmt) and isinstance(s.value, Call)
               and s.value.op == "tensor.create" and counts.get(id(s.var)) == 1}
        for s in iter_stmts(f.body):
            if isinstance(s, (ForStmt, WhileStmt)) and s.iter_args:
                _analyze_loop(s, funcs, calls, merges, creates, own)
    if not merges:
        return program
    out = []
    for f in program.functions:
        if f.name in merges:
            out.append(_merge_kernel(f, *merges[f.name]))
        elif f.func_type != FunctionType.InCore:
            out.append(_CallSites(merges, creates).function(f))
        else:
            out.append(f)
    return program.replace(functions=tuple(out))


def _call_counts(program: Program) -> dict[str, int]:
    n: dict[str, int] = {}
    for f in program.functions:
        for e in iter_exprs(f.body):
            if isinstance(e, FuncCall):
                n[e.func] = n.get(e.func, 0) + 1
    return n


def _same_tensor_type(a, b) -> bool:
    return (isinstance(a, TensorType) and isinstance(b, TensorType) and a.dtype == b.dtype
            and tuple(a.shape) == tuple(b.shape) and all(isinstance(d, int) for d in a.shape))


def _uses(v: Var, stmts) -> int:
    return sum(1 for e in iter_exprs(stmts) if e is v)


def _analyze_loop(loop, funcs, calls, merges, creates, own) -> None:
    body = loop.body
    if not body or type(body[-1]).__name__ != "YieldStmt":
        return
    yld = body[-1]
    made = {id(s.var): s for s in body if isinstance(s, AssignStmt) and isinstance(s.value, Call)
            and s.value.op == "tensor.create"}
    picks = {}   # id of the call's result var -> {return index: var holding it}
    for s in body:
        if isinstance(s, AssignStmt) and isinstance(s.value, TupleGetItem) and isinstance(s.value.value, Var):
            picks.setdefault(id(s.value.value), {})[s.value.index] = s.var
    for s in body:
        if not (isinstance(s, AssignStmt) and isinstance(s.value, FuncCall)):
            continue
        kern = funcs.get(s.value.func)
        if kern is None or kern.func_type != FunctionType.InCore or calls.get(kern.name) != 1 or kern.name in merges:
            continue
        args = s.value.args
        for o, (p, d) in enumerate(zip(kern.params, kern.directions)):
            if d != ParamDirection.Out or o >= len(args) or id(args[o]) not in made:
                continue
            t = args[o]
            ri = _returned_store(kern, o)
            if ri is None or _uses(t, body) != 1:
                continue
            res = s.var if len(kern.return_types) == 1 else picks.get(id(s.var), {}).get(ri)
            yi = next((j for j, v in enumerate(yld.values) if v is res), None) if res is not None else None
            if yi is None or yi >= len(loop.iter_args):
                continue
            x = loop.iter_args[yi]
            if id(loop.init_values[yi]) not in own:
                continue  # the carried tensor starts as a parameter or a value read elsewhere
            i = next((j for j, a in enumerate(args) if a is x), None)
            if i is None or kern.directions[i] != ParamDirection.In or _uses(x, body) != 1:
                continue
            if not (_same_tensor_type(x.type, t.type) and _same_tensor_type(kern.params[i].type, p.type)):
                continue
            if not _reads_before_write(kern, i, o):
                continue
            merges[kern.name] = (o, i)
            creates.add(id(made[id(t)]))
            break


def _returned_store(kern, o: int) -> int | None:
    """The index of the kernel's result that is its top-level ``tile.store`` into Out parameter
    ``o`` (None unless there is exactly one store into it, at the top level, returned once)."""
    p = kern.params[o]
    stores = [s for s in iter_stmts(kern.body) if isinstance(s, AssignStmt) and isinstance(s.value, Call)
              and s.value.op == "tile.store" and s.value.args[2] is p]
    if len(stores) != 1 or stores[0] not in kern.body or _uses(p, kern.body) != 1:
        return None
    ret = kern.body[-1]
    if not isinstance(ret, ReturnStmt):
        return None
    hits = [j for j, v in enumerate(ret.values) if v is stores[0].var]
    return hits[0] if len(hits) == 1 else None


def _reads_before_write(kern, i: int, o: int) -> bool:
    """Every read of In parameter ``i`` is a top-level ``tile.load`` placed before the store into
    Out parameter ``o`` (so writing the result over ``i`` cannot change what the kernel reads)."""
    p, q = kern.params[i], kern.params[o]
    loads = 0
    for s in kern.body:
        v = s.value if isinstance(s, AssignStmt) else None
        if isinstance(v, Call) and v.op == "tile.store" and v.args[2] is q:
            return loads == _uses(p, kern.body)
        if isinstance(v, Call) and v.op == "tile.load" and v.args[0] is p:
            loads += 1
    return False


def _merge_kernel(f, o: int, i: int):
    """Kernel ``f`` with Out parameter ``o`` dropped and In parameter ``i`` made InOut (its store
    into ``o`` now writes ``i``)."""
    m = Mutator()
    m.subst[id(f.params[o])] = f.params[i]
    body = m.stmts(f.body)
    dirs = list(f.directions)
    dirs[i] = ParamDirection.InOut
    keep = [j for j in range(len(f.params)) if j != o]
    return f.replace(params=tuple(f.params[j] for j in keep), directions=tuple(dirs[j] for j in keep), body=body)


class _CallSites(Mutator):
    """Drops the merged Out argument from each rewritten kernel's call, and its dead create."""

    def __init__(self, merges, creates):
        super().__init__()
        self.merges, self.creates = merges, creates

    def stmt(self, s):
        if id(s) in self.creates:
            return None
        return super().stmt(s)

    def visit_FuncCall(self, e: FuncCall):
        e = self.rebuild(e)
        if e.func in self.merges:
            o = self.merges[e.func][0]
            def shift(idx):  # argument indices of the task attributes follow the dropped argument
                return tuple(j - (j > o) for j in idx if j != o)

            e = e.replace(args=tuple(a for j, a in enumerate(e.args) if j != o), no_dep_args=shift(e.no_dep_args),
                          dump_args=shift(e.dump_args))
        return e
