"""The per-lane rewriting of a function body split between the two vector lanes (the reference's
``split_axis_utils``), shared by LowerAutoVectorSplit (the vector side of a mixed kernel under
``pl.split``) and SplitVectorKernel (a hand-written AIV function with a ``split`` attr).

:class:`Halver` (split axis ``d``: 0 rows for UP_DOWN, 1 columns for LEFT_RIGHT; ``h`` the half
extent of a tile's axis ``d``):

* ``lane = pl.tile.get_subblock_idx()`` is prepended (the vector core's lane, 0 or 1);
* ``tpop_from_aic`` pops the lane's half: shape halved on ``d``, split code the mode's;
* ``tile.load`` reads the lane's half: shape halved, offset ``+ lane * h`` on ``d``; a tile whose
  axis ``d`` is 1 (a broadcast row / column) is left whole;
* ``tile.store`` of a halved tile writes at offset ``+ lane * h`` on ``d``;
* ``tile.full`` / ``tile.create`` make the lane's half; every other op on a halved tile is typed
  again from its halved operands (an elementwise op gives a halved result);
* a valid extent ``V`` on axis ``d`` (a constant, or a run-time scalar) becomes the lane's share
  ``min(max(V, lane * h) - lane * h, h)``: lane 0 ``min(V, h)``, lane 1 the rest, clamped at 0;
* ``tpush_to_aic`` of a halved tile pushes the lane's half with the mode's split code (the cube
  joins the halves).

Refused with a located PassError (the per-lane form would compute something else): a reduction
over axis ``d`` of a halved tile (each lane would reduce its half only), an odd extent on ``d``,
``tile.ci`` / ``tile.random`` (their values depend on the position), and any other op with a
static shape argument applied to a halved tile (reshape, slice, ...).
"""
from __future__ import annotations

from pypto.errors import PassError
from pypto.ir.nodes import AssignStmt, BinOp, Call, ConstInt, Function, MakeTuple, Var
from pypto.ir.types import ScalarType, TileType
from pypto.ir.visit import Mutator
from pypto.language.dtypes import INDEX
from pypto.language.enums import SplitMode
from pypto.ops.registry import get_op, op_trait
from pypto.ops.traits import Reduction

CODE = {SplitMode.UP_DOWN: 1, SplitMode.LEFT_RIGHT: 2}   # a mode's split code on the pipe ops
_GENERATORS = ("tile.full", "tile.create")
_POSITIONAL = ("tile.ci", "tile.random")


def index_of(op, name: str) -> int:
    """Position of parameter ``name`` in ``op``'s schema (a Call's args follow it)."""
    return next(i for i, p in enumerate(op.params) if p.name == name)


def mode_of(v):
    if isinstance(v, SplitMode):
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return {0: SplitMode.NONE, 1: SplitMode.UP_DOWN, 2: SplitMode.LEFT_RIGHT}.get(v)
    return None


def as_index(v, span):
    return v if not isinstance(v, int) else ConstInt(v, INDEX, span)


def _bin(op, a, b, span):
    if isinstance(a, ConstInt) and isinstance(b, ConstInt):
        py = {"add": a.value + b.value, "mul": a.value * b.value, "sub": a.value - b.value,
              "min": min(a.value, b.value), "max": max(a.value, b.value)}
        return ConstInt(py[op], INDEX, span)
    return BinOp(op, a, b, ScalarType(INDEX), span)


class Halver(Mutator):
    """Rewrites one function body into its per-lane form (see the module doc); errors name
    ``pass_name``, the pass using it."""

    def __init__(self, f: Function, mode: SplitMode, pass_name: str = "SplitVectorKernel"):
        super().__init__()
        self.pass_name = pass_name
        self.f, self.mode, self.dim, self.code = f, mode, 0 if mode == SplitMode.UP_DOWN else 1, CODE[mode]
        self.lane = Var("subblock_idx", ScalarType(INDEX), f.span)
        self.halved: set = set()   # id of the Vars holding a lane's half

    # ---------------------------------------------------------------- helpers
    def _half(self, n: int, what: str, span) -> int:
        if n % 2:
            raise PassError(f"{self.pass_name}: '{self.f.name}' splits {self.mode.name} but {what} has an odd extent {n} on "
                            f"axis {self.dim}", span, "pad the tile to an even extent, or write the per-lane form "
                            "(attrs={'split_aiv': True})")
        return n // 2

    def _shift(self, h: int, span):
        """``lane * h``: the lane's offset on the split axis."""
        return _bin("mul", self.lane, ConstInt(h, INDEX, span), span)

    def _lane_valid(self, v, h: int, span):
        """A valid extent ``v`` of the whole axis -> the lane's share of it."""
        if isinstance(v, int) and v == 2 * h:
            return h
        v = as_index(v, span)
        start = self._shift(h, span)
        return _bin("min", _bin("sub", _bin("max", v, start, span), start, span), ConstInt(h, INDEX, span), span)

    def _halve_tuple(self, t: MakeTuple, span) -> MakeTuple:
        el = list(t.elements)
        n = el[self.dim].value
        el[self.dim] = ConstInt(self._half(n, "a tile", span), INDEX, span)
        return t.replace(elements=tuple(el))

    def _shift_tuple(self, t: MakeTuple, h: int, span) -> MakeTuple:
        el = list(t.elements)
        el[self.dim] = _bin("add", el[self.dim], self._shift(h, span), span)
        return t.replace(elements=tuple(el))

    def _valid_tuple(self, t, full: tuple, span):
        if t is None:
            return None
        el = list(t.elements)
        h = full[self.dim] // 2
        d = el[self.dim]
        el[self.dim] = as_index(self._lane_valid(d.value if isinstance(d, ConstInt) else d, h, span), span)
        return MakeTuple(tuple(el), span)

    def _retyped(self, c: Call, args: tuple) -> Call:
        t = get_op(c.op).infer_type(args, c.span)
        if isinstance(t, TileType) and t.memory_space is None and isinstance(c.type, TileType):
            t = t.with_(memory_space=c.type.memory_space)   # InferTileMemorySpace's decision stays
        return Call(c.op, args, t, c.span)

    def _is_halved(self, e) -> bool:
        return isinstance(e, Var) and id(e) in self.halved

    def _splits(self, t) -> bool:
        return isinstance(t, TileType) and len(t.shape) == 2 and t.shape[self.dim] != 1

    # ---------------------------------------------------------------- statements
    def visit_AssignStmt(self, s):
        c = self.expr(s.value)
        if not isinstance(c, Call):
            return s.replace(value=c) if c is not s.value else s
        new, halved = self.call(c, s.var.type)
        if new is c and c is s.value and not halved:
            return s
        t = new.type
        if isinstance(t, TileType) and isinstance(s.var.type, TileType):
            t = t.with_(memory_space=s.var.type.memory_space or t.memory_space)
        v = Var(s.var.name, t, s.var.span) if t != s.var.type else s.var
        if halved:
            self.halved.add(id(v))
        self.redefine(s.var, v)
        return s.replace(var=v, value=new)

    def visit_EvalStmt(self, s):
        c = self.expr(s.expr)
        if isinstance(c, Call):
            c, _ = self.call(c, None)
        return s.replace(expr=c) if c is not s.expr else s

    def visit_ForStmt(self, s):
        inits = tuple(self.expr(e) for e in s.init_values)
        iters = []
        for it, init in zip(s.iter_args, inits):
            t = getattr(init, "type", it.type)
            nv = Var(it.name, t, it.span) if isinstance(t, TileType) and t != it.type else it
            if self._is_halved(init):
                self.halved.add(id(nv))
            iters.append(self.redefine(it, nv))
        body = self.stmts(s.body)
        rets = []
        for rv, it in zip(s.return_vars, iters):
            nv = Var(rv.name, it.type, rv.span) if it.type != rv.type else rv
            if id(it) in self.halved:
                self.halved.add(id(nv))
            rets.append(self.redefine(rv, nv))
        return s.replace(start=self.expr(s.start), stop=self.expr(s.stop), step=self.expr(s.step),
                         iter_args=tuple(iters), init_values=inits, body=body, return_vars=tuple(rets))

    def visit_WhileStmt(self, s):
        if any(isinstance(it.type, TileType) for it in getattr(s, "iter_args", ())):
            raise PassError(f"{self.pass_name}: '{self.f.name}' carries a tile through a while loop, which the split does "
                            "not rewrite", s.span, "write the per-lane form (attrs={'split_aiv': True})")
        return self.default_stmt(s)

    # ---------------------------------------------------------------- calls
    def call(self, c: Call, annotated):
        """(the lane's form of ``c``, whether its result is a lane's half)."""
        op = get_op(c.op)
        a = dict(zip((p.name for p in op.params), c.args))
        args = list(c.args)
        span = c.span
        if c.op == "tile.tpop_from_aic":
            full = tuple(e.value for e in a["shape"].elements)
            if not self._splits(c.type):
                return c, False
            args[index_of(op, "shape")] = self._halve_tuple(a["shape"], span)
            args[index_of(op, "split")] = self.code
            args[index_of(op, "valid_shape")] = self._valid_tuple(a["valid_shape"], full, span)
            return self._retyped(c, tuple(args)), True
        if c.op == "tile.tpush_to_aic":
            if not self._is_halved(a["tile"]):
                # the cube's pop joins the two lanes' halves: a whole tile from each lane would not fit
                raise PassError(f"{self.pass_name}: '{self.f.name}' pushes a tile that is not split between the lanes "
                                f"(its axis {self.dim} is 1, or it is not derived from a split tile) to the cube, "
                                f"whose pop joins the lanes' halves", span,
                                "push a tile derived from a split load / pop, or write the per-lane form")
            args[index_of(op, "split")] = self.code
            return self._retyped(c, tuple(args)), False
        if c.op == "tile.load":
            if not self._splits(c.type):
                return c, False
            full = tuple(c.type.shape)
            h = self._half(full[self.dim], "the loaded tile", span)
            args[index_of(op, "offsets")] = self._shift_tuple(a["offsets"], h, span)
            args[index_of(op, "shapes")] = self._halve_tuple(a["shapes"], span)
            args[index_of(op, "valid_shape")] = self._valid_tuple(a["valid_shape"], full, span)
            return self._retyped(c, tuple(args)), True
        if c.op == "tile.store":
            if self._is_halved(a["tile"]):
                h = a["tile"].type.shape[self.dim]
                args[index_of(op, "offsets")] = self._shift_tuple(a["offsets"], h, span)
                return self._retyped(c, tuple(args)), False
            return c, False
        if c.op in _GENERATORS and self._splits(c.type):
            i = index_of(op, "shape")
            args[i] = self._halve_tuple(args[i], span)
            return self._retyped(c, tuple(args)), True
        if c.op in _POSITIONAL and self._splits(c.type):
            raise PassError(f"{self.pass_name}: {c.op} in '{self.f.name}' depends on the element position, which differs "
                            f"per lane after the {self.mode.name} split", span,
                            "compute it outside the split function, or write the per-lane form")
        if not any(self._is_halved(x) for x in c.args):
            return c, False
        red = op_trait(c.op, Reduction)
        if red is not None:
            x = next(x for x in c.args if self._is_halved(x))
            axis = red.axis % len(x.type.shape)
            if axis == self.dim:
                raise PassError(f"{self.pass_name}: {c.op} in '{self.f.name}' reduces axis {axis}, the {self.mode.name} "
                                f"split axis: each vector lane holds half of it", span,
                                "split the other way (pl.SplitMode.LEFT_RIGHT / UP_DOWN), or reduce on the cube "
                                "side / in a function without a split")
        if any(p.kind == "ints" for p in op.params if p.name not in ("valid_shape",)) and \
                isinstance(c.type, TileType):
            raise PassError(f"{self.pass_name}: {c.op} in '{self.f.name}' takes a static shape, which the {self.mode.name} "
                            f"split cannot halve for you", span,
                            "write the per-lane form (attrs={'split_aiv': True}: tiles and offsets per lane)")
        new = self._retyped(c, tuple(args))
        return new, isinstance(new.type, TileType) and self._splits(new.type)

    def function(self, f: Function) -> Function:
        body = self.stmts(f.body)
        lane = AssignStmt(self.lane, Call("tile.get_subblock_idx", (), ScalarType(INDEX), f.span), f.span)
        return f.replace(body=(lane,) + body)
