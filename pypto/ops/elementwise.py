"""Elementwise arithmetic at tensor and tile level: add sub mul div maximum minimum (array and
scalar rhs: ``adds``, ..., ``maximums``, ``minimums``), and the unary ops exp neg abs log sqrt rsqrt
recip relu.

Numerics: FP16/BF16 operands are computed the way the vector unit does, in FP32 with one rounding
to the result type; torch's CPU kernels for half types do exactly that, so reference and simulator
share the same torch call (``ref`` and ``sim`` below) and agree bit for bit. For log sqrt rsqrt
recip, ``_pto.unary_f32`` makes the FP32 computation explicit (``fn(x.float()).to(dtype)``): torch's
CPU FP16 ``sqrt`` kernel is *not* computed that way (15 of the 65536 FP16 inputs differ), so the
contract is written out rather than inherited from torch. ``maximum``/``minimum`` propagate NaN
(``torch.maximum``); their scalar forms compare in the result dtype (``_pto.maximums``).
"""
from __future__ import annotations

from pypto.errors import Span
from pypto.ir.nodes import AssignStmt, Var
from pypto.ir.pysource import py_literal
from pypto.ir.types import TileType
from pypto.ops.builder import build
from pypto.ops.registry import OpArgs, OpDef, Param, register
from pypto.ops.rules import (TENSOR_ELEMENTWISE, TILE_ELEMENTWISE, arith_dtype, expect, promote, promote_scalar,
                              same_shape, scalar_dtype, with_dtype)
from pypto.errors import InvalidOperationError

# Array-array ops that take the wide unsigned dtypes (UINT16/32/64): the reference's type rule for
# tile.add / sub / mul / maximum / minimum accepts every integer dtype (its RNG tests subtract UINT32
# tiles on A5), and the result is exact (wrap-around modulo 2**w; unsigned order) -- see
# pypto.numerics.intarith. Their scalar forms and the other ops keep refusing them (no test or
# instruction needs them; TSUBS, e.g., takes INT8/16/32 and floats only).
_UNSIGNED_OK = ("add", "sub", "mul", "maximum", "minimum")
_WIDE_UNSIGNED = ("UINT16", "UINT32", "UINT64")
# Integer division (TDIV): INT16 / INT32 on A5 only, truncating toward zero (pypto.numerics.intarith)
_INT_DIV = ("INT16", "INT32")


def _div_platform_rule(arch: str, args: tuple):
    dt = args[0].type.dtype.name
    if dt in _INT_DIV and arch != "a5":
        return (f"integer division ({dt}) exists only on A5 (TDIV on {arch} takes FP16/FP32 only); "
                "cast the operands with pl.cast(x, pl.FP32), or run on a5sim")
    return None


def _binary_rule(op_name: str, float_only: bool):
    name = op_name.split(".")[1]

    def infer(a: OpArgs, span: Span):
        lhs, rhs = a.lhs.type, a.rhs.type
        same_shape(op_name, lhs, rhs, span)
        for t in (lhs, rhs):
            if not (name in _UNSIGNED_OK and t.dtype.name in _WIDE_UNSIGNED):
                arith_dtype(op_name, t.dtype, span)
        dtype = promote(lhs.dtype, rhs.dtype, op_name, span)
        if float_only:
            ok = dtype.is_float() or (name == "div" and dtype.name in _INT_DIV and lhs.dtype == rhs.dtype)
            expect(ok, op_name, f"needs float operands (or two INT16 / INT32 operands, A5), got {dtype.name}", span,
                   "cast the operands with pl.cast(x, pl.FP32)")
        return with_dtype(lhs, dtype)
    return infer


def _binary_src(name: str, torch_fn: str, a: OpArgs, dst: str | None) -> str:
    """ref (``dst`` None) / sim source of an array-array op: torch, or the exact integer helpers
    torch lacks (wide unsigned wrap-around, integer division)."""
    out = "" if dst is None else f", out={dst}"
    dts = {getattr(a.lhs.type, "dtype", None), getattr(a.rhs.type, "dtype", None)}
    names = {d.name for d in dts if d is not None}
    if name in _UNSIGNED_OK and names & set(_WIDE_UNSIGNED):
        if len(names) == 1:
            return f"_pto.wrap_binary({name!r}, {a.lhs}, {a.rhs}{out})"
        rdt = py_literal(promote(a.lhs.type.dtype, a.rhs.type.dtype))   # (a wider signed or float type)
        return f"{torch_fn}({a.lhs}.to({rdt}), {a.rhs}.to({rdt}){out})"
    if name == "div" and names <= set(_INT_DIV) and names:
        v = getattr(a.lhs.type, "valid_shape", None)
        valid = "None" if v is None else repr(list(v)) if all(isinstance(d, int) for d in v) else "()"
        return f"_pto.int_div({a.lhs}, {a.rhs}{out}, valid={valid})"
    return f"{torch_fn}({a.lhs}, {a.rhs}{out})"


def _scalar_rule(op_name: str, float_only: bool):
    tile = op_name.startswith("tile.")

    def infer(a: OpArgs, span: Span):
        dtype = promote_scalar(a.lhs.type.dtype, scalar_dtype(a.rhs.type))
        if tile or op_name.endswith(".subs"):
            # Tile level (TADDS / TMULS / TDIVS / TMAXS / TMINS / TSUBS): source and destination share
            # one element type and the scalar is converted to it (a float toward zero on an integer
            # tile), so the result keeps the tile's dtype, as the reference's type rule says. The
            # reference's tensor.subs keeps it too; its other tensor-level scalar ops promote (an
            # integer tensor with a float scalar gives FP32: _lower_scalar casts first).
            dtype = a.lhs.type.dtype
        if span is not None:   # (None: called from the codegen helper on an already checked call)
            arith_dtype(op_name, a.lhs.type.dtype, span)
        if float_only:
            ok = dtype.is_float() or (tile and dtype.name in _INT_DIV)
            expect(ok, op_name, f"needs a float operand{' (or an INT16 / INT32 tile, A5)' if tile else ''}, "
                   f"got {dtype.name}", span, "cast the operand with pl.cast(x, pl.FP32)")
        return with_dtype(a.lhs.type, dtype)
    return infer


def _scalar_src(name: str, torch_fn: str, helper: str | None, a: OpArgs, dst: str | None) -> str:
    """ref (``dst`` None) / sim source of a scalar-rhs op. An integer tile computes in its own dtype
    with the scalar converted to it first (``_pto.int_scalar_op``; ``divs``: integer division
    truncating toward zero, A5); other forms keep their torch call or ``_pto`` helper."""
    out = "" if dst is None else f", out={dst}"
    lt = a.lhs.type
    is_tile = isinstance(lt, TileType)
    if is_tile and not lt.dtype.is_float():
        if name == "div":
            v = lt.valid_shape
            valid = "None" if v is None else repr(list(v)) if all(isinstance(d, int) for d in v) else "()"
            return f"_pto.int_divs({a.lhs}, {a.rhs}{out}, valid={valid})"
        return f"_pto.int_scalar_op({name!r}, {a.lhs}, {a.rhs}{out})"
    if helper is not None:
        dt = py_literal(_scalar_rule(f"{'tile' if is_tile else 'tensor'}.{name}s", False)(a, None).dtype)
        return f"_pto.{helper}({a.lhs}, {a.rhs}, {dt}{out})"
    return f"{torch_fn}({a.lhs}, {a.rhs}{out})"


def _lower_scalar(name: str):
    """``tensor.<name>s`` -> ``tile.<name>s``; an integer tensor whose result the tensor rule promotes
    (a float scalar: FP32) is cast to that dtype first, so the tile op computes what the tensor op
    means (the tile op alone would keep the integer dtype)."""
    def lower(call, var, conv):
        x, s = call.args
        tile = conv.as_tile(x, call.span)
        stmts = []
        want = var.type.dtype
        if tile.type.dtype != want:
            ct = with_dtype(tile.type, want)
            cv = Var(f"{var.name}_cast", ct, call.span)
            stmts.append(AssignStmt(cv, build("tile.cast", call.span, x=tile, target_type=want, mode="rint"),
                                    call.span))
            tile = cv
        res = build(f"tile.{name}s", call.span, lhs=tile, rhs=conv.expr(s))
        nv = Var(var.name, res.type, var.span)
        stmts.append(AssignStmt(nv, res, call.span))
        return stmts, nv
    return lower


def _high_precision(op: str, scalar: bool):
    """``high_precision=`` on div / log / recip (the reference selects PTOAS's precise divide / log
    / reciprocal with it). The simulators always compute these the precise way (FP32 with one correctly rounded
    result), so both settings give the same bits; as in the reference a scalar divisor has no
    high-precision form and ``high_precision=True`` there is an error."""
    def adapt(args: list, kwargs: dict, span: Span):
        hp = kwargs.pop("high_precision", False)
        limit = 2 if op.endswith(("div", "divs")) else 1
        if len(args) > limit:
            hp = args.pop(limit)
        if not isinstance(hp, bool):
            raise InvalidOperationError(f"pl.{op}: high_precision must be True or False, got {hp!r}", span)
        if hp and scalar:
            raise InvalidOperationError(f"pl.{op}: high_precision=True needs a Tensor/Tile divisor; a scalar "
                                        "divisor has no high-precision form", span)
        return args, kwargs
    return adapt


def _define_binary(name: str, torch_fn: str, float_only: bool = False, scalar_fn: str | None = None) -> None:
    """Registers ``tensor.<name>``, ``tensor.<name>s``, ``tile.<name>``, ``tile.<name>s``.

    The four share one torch function; what differs is the operand kinds and the level. Array
    division also takes two INT16 / INT32 operands (A5's TDIV, truncating toward zero); ``divs``
    stays float-only.
    """
    for level in ("tensor", "tile"):
        for suffix, rhs_kind, rule in (("", level, _binary_rule), ("s", "scalar", _scalar_rule)):
            op = f"{level}.{name}{suffix}"
            ref, sim = (lambda a, n=name, f=torch_fn: _binary_src(n, f, a, None)), \
                (lambda a, dst, n=name, f=torch_fn: _binary_src(n, f, a, dst))
            if suffix:
                ref, sim = (lambda a, n=name, f=torch_fn, h=scalar_fn: _scalar_src(n, f, h, a, None)), \
                    (lambda a, dst, n=name, f=torch_fn, h=scalar_fn: _scalar_src(n, f, h, a, dst))
            register(OpDef(
                name=op,
                params=(Param("lhs", level), Param("rhs", rhs_kind)),
                infer=rule(op, float_only),
                ref=ref,
                sim=None if level == "tensor" else sim,
                dsl=name,
                operand_kinds=(level, rhs_kind),
                lowers_to=f"tile.{name}{suffix}" if level == "tensor" else None,
                lower=_lower_scalar(name) if level == "tensor" and suffix else None,
                traits=TILE_ELEMENTWISE if level == "tile" else TENSOR_ELEMENTWISE,
                doc=f"elementwise {name} ({'array' if not suffix else 'scalar'} rhs)",
                dsl_args=_high_precision(op, bool(suffix)) if name == "div" else None,
                platform_rule=_div_platform_rule if op in ("tile.div", "tile.divs") else None,
            ))


def _define_unary(name: str, torch_fn: str, float_only: bool, f32: bool = False) -> None:
    """Registers ``tensor.<name>`` and ``tile.<name>``; ``f32``: computed by ``_pto.unary_f32``."""
    for level in ("tensor", "tile"):
        op = f"{level}.{name}"

        def infer(a: OpArgs, span: Span, op=op):
            t = a.x.type
            arith_dtype(op, t.dtype, span)
            if float_only:
                expect(t.dtype.is_float(), op, f"needs a float operand, got {t.dtype.name}", span,
                       "cast the operand with pl.cast(x, pl.FP32)")
            return with_dtype(t, t.dtype)

        # tile.rsqrt: the reference's optional ``tmp`` (the device's scratch for the precise
        # rsqrt; kept as an operand the simulators never read)
        register(OpDef(
            name=op,
            params=(Param("x", level, aliases=("tile", "input")),)
            + ((Param("tmp", "tile", None),) if name == "rsqrt" and level == "tile" else ()),
            infer=infer,
            ref=(lambda a, n=name: f"_pto.unary_f32({n!r}, {a.x})") if f32 else
                (lambda a, f=torch_fn: f"{f}({a.x})"),
            sim=None if level == "tensor" else (
                (lambda a, dst, n=name: f"_pto.unary_f32({n!r}, {a.x}, out={dst})") if f32 else
                (lambda a, dst, f=torch_fn: f"{f}({a.x}, out={dst})")),
            dsl=name,
            operand_kinds=(level,),
            lowers_to=f"tile.{name}" if level == "tensor" else None,
            traits=TILE_ELEMENTWISE if level == "tile" else TENSOR_ELEMENTWISE,
            doc=f"elementwise {name}",
            dsl_args=_high_precision(op, False) if name in ("log", "recip") else
            (_rsqrt_precision(level) if name == "rsqrt" else None),
        ))


def _rsqrt_precision(level: str):
    """``pl.rsqrt(x, high_precision=)``: the reference takes it on tensors (its lowering then adds
    the scratch tile of the precise device path); on a tile the precise path is chosen by passing
    ``tmp``, and ``high_precision=True`` is an error there. The simulators compute rsqrt one way
    (FP32, one correctly rounded result) whatever is chosen, so the flag never changes a bit."""
    def adapt(args: list, kwargs: dict, span: Span):
        from pypto.errors import InvalidOperationError

        hp = kwargs.pop("high_precision", False)
        if level == "tensor" and len(args) > 1:
            hp = args.pop(1)
        if not isinstance(hp, bool):
            raise InvalidOperationError(f"pl.rsqrt: high_precision must be True or False, got {hp!r}", span)
        if hp and level == "tile":
            raise InvalidOperationError("pl.rsqrt: high_precision=True is for tensors; on a tile the precise "
                                        "form is chosen by passing a scratch tile", span,
                                        "write pl.tile.rsqrt(tile, tmp) with tmp = pl.tile.create(<tile's shape>, "
                                        "dtype=<its dtype>)")
        return args, kwargs
    return adapt


_define_binary("add", "torch.add")
_define_binary("sub", "torch.sub", scalar_fn="subs")
_define_binary("mul", "torch.mul")
_define_binary("div", "torch.div", float_only=True)
_define_unary("exp", "torch.exp", float_only=True)
_define_unary("neg", "torch.neg", float_only=False)
_define_unary("abs", "torch.abs", float_only=False)
_define_binary("maximum", "torch.maximum", scalar_fn="maximums")
_define_binary("minimum", "torch.minimum", scalar_fn="minimums")
_define_unary("log", "torch.log", float_only=True, f32=True)
_define_unary("sqrt", "torch.sqrt", float_only=True, f32=True)
_define_unary("rsqrt", "torch.rsqrt", float_only=True, f32=True)
_define_unary("recip", "torch.reciprocal", float_only=True, f32=True)
_define_unary("relu", "_pto.relu", float_only=False)
