"""ConvertTensorToTileOps: tensor-level ops inside InCore functions become tile ops.

Requires: SplitIncoreOrch. Produces: IncoreTileOps — an InCore function holds no tensor compute op.

* Each tensor parameter consumed by a converted op is loaded whole, once, at function entry
  (``<param>_tile = tile.load(param, [0, ...], shape)``); no automatic chunking — tensor-level
  operands must fit on chip (the capacity check of AllocateMemoryAddr says so if they do not).
* ``tensor.<op>`` becomes its registered ``lowers_to`` tile op; ``tensor.assemble(dst, v, offs)``
  becomes ``tile.store(v_tile, offs, dst, atomic)`` (its ``atomic=`` attribute is forwarded).
* ``tensor.assemble`` into a value computed in the kernel (it lives in a tile) becomes
  ``tile.assemble`` (TINSERT) into that tile.
* A tensor version that only exists in global memory (written by an earlier store of the kernel)
  and is then read by a tensor op is loaded whole again right before that op.
* Loop-carried and if-phi values follow their inputs from tensor to tile type.
* An op whose registry entry has a ``lower`` hook lowers itself: ``lower(call, result_var,
  converter) -> (statements, tile_result_or_None)``; the converter offers ``as_tile(value, span)``
  (the tile holding a tensor value) and ``expr(value)``.
"""
from __future__ import annotations

from pypto.errors import CodegenError, UnsupportedFeatureError
from pypto.language.enums import AtomicType
from pypto.ir.nodes import (
    AssignStmt, Call, ConstInt, ForStmt, Function, IfStmt, MakeTuple, Program, Var, WhileStmt, YieldStmt,
)
from pypto.ir.types import TensorType, TileType
from pypto.ir.visit import Mutator, iter_stmts
from pypto.language.enums import KERNEL_TYPES
from pypto.language.enums import FunctionType
from pypto.ops.builder import build
from pypto.ops.registry import VALUE_KINDS, get_op, op_trait
from pypto.ops.traits import MemorySpaces
from pypto.passes import kernel_views
from pypto.passes.context import PassContext

NAME = "ConvertTensorToTileOps"
REQUIRES = ("SplitIncoreOrch",)
PRODUCES = ("IncoreTileOps",)


def run(program: Program, ctx: PassContext) -> Program:
    fresh = _fresh_params(program)
    return program.replace(functions=tuple(
        _convert(f, fresh.get(f.name, set())) if f.func_type in KERNEL_TYPES else f for f in program.functions))


def _fresh_params(program: Program) -> dict[str, set[int]]:
    """Per kernel, the ids of its tensor parameters that every call site fills with a fresh
    ``tensor.create`` read by nothing else (a GM workspace, e.g. the frontend's ``gm_buf`` for a
    ``pl.create_tensor`` at the top of a ``pl.at`` scope): their contents on entry are unspecified."""
    from pypto.ir.nodes import FuncCall
    from pypto.ir.visit import iter_exprs

    funcs = {f.name: f for f in program.functions}
    verdict: dict[tuple[str, int], bool] = {}
    for f in program.functions:
        if f.func_type in KERNEL_TYPES:
            continue
        created = {id(s.var) for s in iter_stmts(f.body) if isinstance(s, AssignStmt)
                   and isinstance(s.value, Call) and s.value.op == "tensor.create"}
        reads: dict[int, int] = {}
        for e in iter_exprs(f.body):
            if isinstance(e, Var):
                reads[id(e)] = reads.get(id(e), 0) + 1
        for e in iter_exprs(f.body):
            if isinstance(e, FuncCall) and e.func in funcs and funcs[e.func].func_type in KERNEL_TYPES:
                for j, a in enumerate(e.args):
                    ok = isinstance(a, Var) and id(a) in created and reads.get(id(a)) == 1
                    verdict[(e.func, j)] = verdict.get((e.func, j), True) and ok
    out: dict[str, set[int]] = {}
    for (name, j), ok in verdict.items():
        if ok and j < len(funcs[name].params):
            out.setdefault(name, set()).add(id(funcs[name].params[j]))
    return out


def _loaded_params(f: Function) -> list[Var]:
    """Tensor parameters whose *values* a tensor-level op reads, directly or through a loop-carried
    value. A parameter that is only a write destination (``out[...] = e``, ``pl.store(..., out)``,
    also when carried through a loop) is not loaded: it stays a global tensor."""
    params = {id(p): p for p in f.params if isinstance(p.type, TensorType)}
    read: set[int] = set()            # ids of Vars read as values by tensor ops
    carried: dict[int, list] = {}     # iter_arg id -> the init values it stands for
    for s in iter_stmts(f.body):
        if isinstance(s, AssignStmt) and isinstance(s.value, Call) and s.value.op.startswith("tensor."):
            op = get_op(s.value.op)
            if op.lower is not None:
                continue  # self-lowering ops load their own operands (e.g. matmul: into Mat)
            for i, (p, a) in enumerate(zip(op.params, s.value.args)):
                if s.value.op == "tensor.assemble" and i == 0:
                    continue
                if p.kind in VALUE_KINDS and isinstance(a, Var):
                    read.add(id(a))
        elif isinstance(s, (ForStmt, WhileStmt)):
            for it, v in zip(s.iter_args, s.init_values):
                if isinstance(v, Var):
                    carried[id(it)] = [v]
    # a read of a loop-carried value reads its initial value too (transitively through nested loops)
    frontier = list(read)
    while frontier:
        i = frontier.pop()
        for v in carried.get(i, ()):
            if id(v) not in read:
                read.add(id(v))
                frontier.append(id(v))
    return [p for p in f.params if id(p) in read and id(p) in params]


def _convert(f: Function, fresh: set[int] = frozenset()) -> Function:
    c = _Converter()
    c.subst = {}
    c.fresh = fresh
    entry = []
    for p in _loaded_params(f):
        shape = p.type.shape
        load = build("tile.load", p.span, tensor=p, offsets=[0] * len(shape), shapes=list(shape))
        t = Var(f"{p.name}_tile", load.type, p.span)
        entry.append(AssignStmt(t, load, p.span))
        c.tile_of[id(p)] = t
    body = kernel_views.prune(c.stmts(f.body), c.view_tiles)
    return f.replace(body=tuple(entry) + body)


class _Converter(Mutator):
    def __init__(self):
        super().__init__()
        self.tile_of: dict[int, Var] = {}
        self.pending: list | None = None   # loads to emit before the statement being converted
        self.reloaded: dict[int, Var] = {}  # id(global tensor version) -> the tile it was loaded into
        self.computed: set[int] = set()     # ids of tensor values computed by ops of this kernel (tiles)
        self.fresh: set[int] = set()        # ids of workspace parameters (see _fresh_params)
        self.home: dict[int, Var] = {}      # id(loop result carried as a tile) -> the tensor it started as
        self.views: dict[int, tuple] = {}   # id(tensor view of a global tensor) -> (root, offsets, axes)
        self.view_tiles: set[int] = set()   # ids of the tiles views were loaded into (pruned when unread)

    def as_tile(self, v, span):
        if isinstance(v, Var):
            if id(v) in self.tile_of:
                return self.tile_of[id(v)]
            if id(v) in self.reloaded:
                return self.reloaded[id(v)]
            if isinstance(v.type, TensorType):
                return self._reload(v, span)
        return self.expr(v)

    def _reload(self, v: Var, span):
        """A tensor version that lives only in global memory — the result of an earlier store into
        it in this kernel (``out[:] = e`` then ``pl.mul(out, 2)``) — read as a value: load it whole
        again, after the store (program order within the kernel; both executors run it so)."""
        shape = v.type.shape
        if self.pending is None or not all(isinstance(d, int) for d in shape):
            raise UnsupportedFeatureError(
                f"tensor '{v.name}' is read here after being written earlier in this kernel; that is supported "
                "only as the operand of a tensor op with a static shape", span,
                hint="load it explicitly: pl.load(t, offsets, shape)")
        load = build("tile.load", span, tensor=self.var(v), offsets=[0] * len(shape), shapes=list(shape))
        t = Var(f"{v.name}_tile", load.type, span)
        self.pending.append(AssignStmt(t, load, span))
        # (not in tile_of: the version itself stays the global tensor, e.g. as the value returned)
        self.reloaded[id(v)] = t
        return t

    def visit_AssignStmt(self, s: AssignStmt):
        self.pending = []
        try:
            out = self._assign(s)
        finally:
            pending, self.pending = self.pending, None
        if not pending:
            return out
        return [*pending, *(out if isinstance(out, (list, tuple)) else [out])]

    def visit_EvalStmt(self, s):
        """A tensor op used as a statement (``pl.debug_print(t)``): its ``lowers_to`` tile op on the
        operands' tiles."""
        v = s.expr
        if not (isinstance(v, Call) and v.op.startswith("tensor.")):
            return self.default_stmt(s)
        op = get_op(v.op, v.span)
        if op.lowers_to is None or op.writes is not None:
            return self.default_stmt(s)
        self.pending = []
        try:
            args = tuple(self.as_tile(a, v.span) if p.kind == "tensor" or (p.kind == "any" and isinstance(
                getattr(a, "type", None), TensorType)) else self.expr(a) for p, a in zip(op.params, v.args))
        finally:
            pending, self.pending = self.pending, None
        tile_op = get_op(op.lowers_to)
        call = Call(tile_op.name, args, tile_op.infer_type(args, v.span), v.span)
        return [*pending, s.replace(expr=call)]

    def _assign(self, s: AssignStmt):
        v = s.value
        if isinstance(v, Call) and v.op in ("tile.load", "tile.store"):
            rebased = kernel_views.rebase(self, s)   # an explicit access of a view: of its tensor
            if rebased is not None:
                return rebased
        if not (isinstance(v, Call) and v.op.startswith("tensor.")):
            return self.default_stmt(s)
        op = get_op(v.op, v.span)
        if v.op in ("tensor.slice", "tensor.reshape"):
            kernel_views.record(self, s)
            out = self._converted(s, v, op)
            if id(s.var) in self.views and id(s.var) in self.tile_of:
                self.view_tiles.add(id(self.tile_of[id(s.var)]))
            return out
        return self._converted(s, v, op)

    def _converted(self, s: AssignStmt, v: Call, op):
        if v.op == "tensor.assemble" and isinstance(v.args[0], Var) and id(v.args[0]) in self.computed:
            # assembling into a value computed in this kernel (it lives in a tile, not in global
            # memory): the tile form, TINSERT (tile.assemble) into that tile
            target, src, offs, atomic = v.args
            if atomic not in (None, AtomicType.None_):
                raise UnsupportedFeatureError(
                    f"atomic assemble into '{target.name}', a value computed in this kernel: atomic "
                    "accumulation exists only for stores into global memory", v.span)
            tgt, tile = self.tile_of[id(target)], self.as_tile(src, v.span)
            call = build("tile.assemble", v.span, target=tgt, src=tile, offset=self.expr(offs))
            nv = Var(s.var.name, call.type, s.var.span)
            self.tile_of[id(s.var)] = nv
            self.computed.add(id(s.var))
            return AssignStmt(nv, call, s.span)
        if v.op == "tensor.assemble":
            target, src, offs, atomic = v.args
            tile = self.as_tile(src, v.span)
            # the destination stays the global tensor (self.var: renaming only, never its tile copy)
            return s.replace(value=build("tile.store", v.span, tile=tile, offsets=self.expr(offs),
                                         tensor=self.var(target), atomic=atomic))
        if op.lower is not None:
            # an op that lowers to several tile ops (e.g. matmul: loads to Mat, moves, cube op)
            stmts, tile_result = op.lower(v, s.var, self)
            if tile_result is not None:
                self.tile_of[id(s.var)] = tile_result
                self.computed.add(id(s.var))
            return stmts
        if op.lowers_to is None:
            raise CodegenError(f"'{v.op}' cannot be used inside an InCore function", v.span)
        tile_op = get_op(op.lowers_to)
        args = []
        for p, a in zip(op.params, v.args):
            args.append(self.as_tile(a, v.span) if p.kind == "tensor" else self.expr(a))
        args = tuple(args)
        t = tile_op.infer_type(args, v.span)
        nv = Var(s.var.name, t, s.var.span)
        self.tile_of[id(s.var)] = nv
        self.computed.add(id(s.var))
        return AssignStmt(nv, Call(tile_op.name, args, t, v.span), s.span)

    def _carry(self, olds, news):
        out = []
        for old, new in zip(olds, news):
            if isinstance(new.type, TileType) and isinstance(old.type, TensorType):
                nv = Var(old.name, new.type, old.span)
                self.tile_of[id(old)] = nv
                out.append(nv)
            else:
                out.append(old)
        return tuple(out)

    def _snapshot(self):
        return dict(self.subst), dict(self.tile_of), dict(self.reloaded), set(self.computed)

    def _restore(self, snap):
        self.subst, self.tile_of, self.reloaded, self.computed = (type(x)(x) for x in snap)

    def _tile_carries(self, s, inits, body) -> list[int]:
        """Indices of the carried values that enter ``s`` as a global tensor but that its body
        (converted once, tentatively) yields as a tile: e.g. an accumulator in a
        ``pl.create_tensor`` workspace re-assigned from a matmul in the loop."""
        yields = body[-1].values if body and isinstance(body[-1], YieldStmt) else ()
        return [i for i, (v, y) in enumerate(zip(inits, yields))
                if isinstance(getattr(v, "type", None), TensorType) and isinstance(y, Var)
                and isinstance(self.tile_of.get(id(y), y).type, TileType)]

    @staticmethod
    def _result_space(y, body):
        """The memory space the op defining yielded value ``y`` puts its result in (through if
        phis: the then-branch's value), or None: e.g. Acc for a matmul accumulator."""
        defs, phis = {}, {}
        for st in iter_stmts(body):
            if isinstance(st, AssignStmt):
                defs[id(st.var)] = st.value
            elif isinstance(st, IfStmt) and st.then_body and isinstance(st.then_body[-1], YieldStmt):
                for rv, val in zip(st.return_vars, st.then_body[-1].values):
                    phis[id(rv)] = val
        for _ in range(64):
            if id(y) in phis:
                y = phis[id(y)]
                continue
            v = defs.get(id(y))
            ms = op_trait(v.op, MemorySpaces) if isinstance(v, Call) else None
            return ms.result if ms is not None else None
        return None

    def _tile_init(self, v: Var, span, space=None) -> tuple[Var, AssignStmt]:
        """The tile a tensor-valued loop init becomes: for a fresh workspace parameter (its contents
        are unspecified), a ``tile.create`` of its shape (no read of GM, so the loop's accumulator
        can live in Acc); for any other tensor, its current contents, loaded whole."""
        src = self.var(v)
        shape = src.type.shape
        if not all(isinstance(d, int) for d in shape):
            raise UnsupportedFeatureError(
                f"tensor '{v.name}' is carried through this loop as a tile; that needs a static shape", span)
        if id(v) in self.fresh:
            # in the space its loop's values live in (an accumulator: Acc, which GM cannot be loaded into)
            call = build("tile.create", span, shape=list(shape), dtype=src.type.dtype, target_memory=space)
        else:
            call = build("tile.load", span, tensor=src, offsets=[0] * len(shape), shapes=list(shape))
        t = Var(f"{v.name}_tile", call.type, span)
        return t, AssignStmt(t, call, span)

    def visit_ForStmt(self, s: ForStmt):
        inits = tuple(self.as_tile(v, s.span) if isinstance(v, Var) and id(v) in self.tile_of else self.expr(v)
                      for v in s.init_values)
        snap = self._snapshot()
        its = self._carry(s.iter_args, inits)
        body = self.stmts(s.body)
        retile = self._tile_carries(s, inits, body)
        pre: list = []
        if retile:  # convert the body again, with those carried values tiles from the start
            spaces = {i: self._result_space(body[-1].values[i], body) for i in retile}
            self._restore(snap)
            inits = list(inits)
            for i in retile:
                t, stmt = self._tile_init(s.init_values[i], s.span, spaces[i])
                pre.append(stmt)
                self.home[id(s.return_vars[i])] = self.var(s.init_values[i])
                inits[i] = t
            inits = tuple(inits)
            its = list(self._carry(s.iter_args, inits))
            for i in retile:
                # the carried value has the (unplaced) type of the values the body yields, whatever
                # space its placeholder init was created in (so the dump re-parses to the same types)
                its[i] = Var(its[i].name, TileType(tuple(its[i].type.shape), its[i].type.dtype), its[i].span)
                self.tile_of[id(s.iter_args[i])] = its[i]
            its = tuple(its)
            body = self.stmts(s.body)
        yields = body[-1].values if body and isinstance(body[-1], YieldStmt) else ()
        rvs = self._carry(s.return_vars, its)
        if yields:
            fixed = tuple(self.as_tile(y, s.span) if isinstance(y, Var) and id(y) in self.tile_of else y
                          for y in yields)
            body = body[:-1] + (body[-1].replace(values=fixed),)
        loop = s.replace(start=self.expr(s.start), stop=self.expr(s.stop), step=self.expr(s.step),
                         init_values=inits, iter_args=its, body=body, return_vars=rvs)
        return [*pre, loop] if pre else loop

    def visit_ReturnStmt(self, s):
        """A kernel result that is a loop-carried tensor turned tile is stored back into the global
        tensor the loop started from (the kernel returns that tensor, as before)."""
        out, vals = [], []
        for v in s.values:
            home = self.home.get(id(v)) if isinstance(v, Var) else None
            if home is None:
                vals.append(self.expr(v))
                continue
            st = build("tile.store", s.span, tile=self.tile_of[id(v)], offsets=[0] * len(home.type.shape),
                       tensor=home)
            r = Var(v.name, st.type, s.span)
            out.append(AssignStmt(r, st, s.span))
            vals.append(r)
        return [*out, s.replace(values=tuple(vals))]

    def visit_WhileStmt(self, s: WhileStmt):
        """As a ForStmt; the condition is read with the (re-typed) iter_args."""
        inits = tuple(self.as_tile(v, s.span) if isinstance(v, Var) and id(v) in self.tile_of else self.expr(v)
                      for v in s.init_values)
        its = self._carry(s.iter_args, inits)
        cond = self.expr(s.cond)
        body = self.stmts(s.body)
        yields = body[-1].values if body and isinstance(body[-1], YieldStmt) else ()
        rvs = self._carry(s.return_vars, its)
        if yields:
            fixed = tuple(self.as_tile(y, s.span) if isinstance(y, Var) and id(y) in self.tile_of else y
                          for y in yields)
            body = body[:-1] + (body[-1].replace(values=fixed),)
        return s.replace(cond=cond, init_values=inits, iter_args=its, body=body, return_vars=rvs)

    def visit_IfStmt(self, s: IfStmt):
        tb, eb = self.stmts(s.then_body), self.stmts(s.else_body)

        def fix(body):
            if body and isinstance(body[-1], YieldStmt):
                vals = tuple(self.tile_of.get(id(y), y) if isinstance(y, Var) else y for y in body[-1].values)
                return body[:-1] + (body[-1].replace(values=vals),), vals
            return body, ()
        tb, tv = fix(tb)
        eb, _ = fix(eb)
        rvs = self._carry(s.return_vars, tv) if tv else s.return_vars
        return s.replace(cond=self.expr(s.cond), then_body=tb, else_body=eb, return_vars=rvs)

    def expr(self, e):
        if isinstance(e, Var) and id(e) in self.tile_of and isinstance(e.type, TensorType):
            return self.tile_of[id(e)]
        return super().expr(e)
