"""Op binding (a mixin of :class:`pypto.frontend.parser.FunctionParser`): a ``pl.<op>(...)`` call
resolved to its registry definition (:func:`pypto.ops.registry.dsl_candidates`) and its arguments
converted to the schema's parameter kinds, scalar casts, and the operands and yielded values."""
from __future__ import annotations

import ast
from typing import Any

from pypto.errors import (
    InternalError, InvalidOperationError, ParserError, ParserTypeError, PyptoError, Span, UnsupportedFeatureError,
)
from pypto.ir.nodes import AssignStmt, Call, ConstInt, Expr, FuncCall, MakeTuple, UnaryOp, Var
from pypto.ir.types import DynDim, DynExpr, RtDim, ScalarType, TensorType
from pypto.language.constructs import DslOp
from pypto.language.dtypes import LOW_PRECISION, TASK_ID, DataType
from pypto.language.enums import KERNEL_TYPES, MemorySpace
from pypto.numerics.cast import normalize_mode
from pypto.ops.registry import REQUIRED, dsl_candidates, get_op
from pypto.frontend import rank_views
from pypto.frontend.dyn_values import orchestration_dim_read
from pypto.frontend.parse_values import _MODE_INT, _describe_static, _is_static, _is_task_ids, kind_of, to_expr


class OpBinding:
    """``pl.<op>`` calls bound to the registry (methods moved whole from ``FunctionParser``; they use
    its state and helpers through ``self``)."""

    def scalar_cast(self, args: list, kwargs: dict, span: Span) -> Expr:
        """``pl.cast(s, target_type, mode="round")`` of a scalar: a ``cast:<mode>`` UnaryOp with
        the tile cast's semantics (rounding mode, saturation)."""
        names = ("input", "target_type", "mode")
        bound = dict(zip(names, args))
        for k, v in kwargs.items():
            k = {"dtype": "target_type", "x": "input"}.get(k, k)
            if k not in names or k in bound:
                raise InvalidOperationError(f"pl.cast of a scalar: unexpected or repeated argument '{k}'", span)
            bound[k] = v
        dtype, mode = bound.get("target_type"), bound.get("mode", "round")
        if not isinstance(dtype, DataType) or dtype == TASK_ID:
            raise InvalidOperationError(f"pl.cast: target_type must be a dtype like pl.INT32, got "
                                        f"{_describe_static(dtype)}", span)
        if dtype.name in LOW_PRECISION:   # the scalar unit has no low-precision registers
            raise InvalidOperationError(f"pl.cast of a scalar to {dtype.name}: low-precision types exist only "
                                        "as tile / tensor elements", span, "cast a tile instead, e.g. "
                                        f"pl.cast(tile, pl.{dtype.name})")
        try:
            mode = normalize_mode(mode)
        except Exception as e:
            raise InvalidOperationError(f"pl.cast: {e}", span) from None
        x = to_expr(bound["input"], span)
        if x.type == ScalarType(dtype):
            return x
        return UnaryOp(f"cast:{mode}", x, ScalarType(dtype), span)

    def op_call(self, fn: DslOp, args: list, kwargs: dict, span: Span, node: ast.AST) -> Expr:
        if fn.name in ("aiv_shard", "aic_gather"):
            # the crossing takes the mode of its region (the explicit pl.tile.<op>(t, split=n) form
            # states it, as the printer writes it)
            if not self.split_aiv_modes:
                raise ParserError(f"pl.{fn.name} names a crossing of a pl.split_aiv region and is only valid "
                                  "inside one, which supplies its split mode", span,
                                  f"for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN): ... pl.{fn.name}(x)")
            if "split" in kwargs or len(args) > 1:
                raise ParserTypeError(f"pl.{fn.name}(x) takes its split mode from the enclosing pl.split_aiv "
                                      "region; do not pass one", span)
            kwargs = {**kwargs, "split": _MODE_INT[self.split_aiv_modes[-1]]}
        if fn.name == "cast" and args and kind_of(args[0]) == "scalar":
            return self.scalar_cast(args, kwargs, span)
        if "." in fn.name:
            op = get_op(fn.name, span)
        else:
            cands = dsl_candidates(fn.name)
            if not cands:
                raise UnsupportedFeatureError(f"pl.{fn.name} is not implemented yet", span)
            kinds = tuple(kind_of(a) for a in args)
            op = None
            for c in cands:
                n = len(c.operand_kinds)
                if kinds[:n] == c.operand_kinds:
                    op = c
                    break
            if op is None:
                # the reference's positional order of an op (e.g. sels(mask, src, tmp, scalar))
                for c in cands:
                    if c.dsl_args is None:
                        continue
                    try:
                        a2, k2 = c.dsl_args(list(args), dict(kwargs), span)
                    except PyptoError:
                        continue
                    if tuple(kind_of(a) for a in a2)[:len(c.operand_kinds)] == c.operand_kinds:
                        op, args, kwargs = c, a2, k2
                        break
            if op is None:
                n = max(len(c.operand_kinds) for c in cands)
                got = ", ".join(_describe_static(a) for a in args[:n])
                if "tensor" in kinds[:n] and "tile" in kinds[:n]:
                    raise InvalidOperationError(f"pl.{fn.name}: cannot mix Tensor and Tile arguments ({got})", span,
                                                "load tensors into tiles with pl.load, or keep to tensors")
                if kinds[:1] == ("scalar",) and n > 1:
                    raise InvalidOperationError(f"pl.{fn.name}: a scalar operand must be on the right ({got})",
                                                span)
                forms = sorted({", ".join(k.capitalize() for k in c.operand_kinds) for c in cands
                                if c.operand_kinds})
                want = " or ".join(f"({f}, ...)" for f in forms) if forms else "Tensor or Tile operands"
                hint = "load the tensor into a tile first: pl.load(t, offsets, shape)" \
                    if "tensor" in kinds[:n] and any(c.operand_kinds[:1] == ("tile",) for c in cands) else None
                raise InvalidOperationError(f"pl.{fn.name} takes {want}, got ({got})", span, hint)
            if op.dsl_check is not None:
                op.dsl_check(args, kwargs, span)
        if op.name == "tensor.create" and self.hoist_to is not None and self.block is self.hoist_to[1]:
            # a global tensor created at the top level of a pl.at scope (a kernel's GM workspace):
            # allocated by the orchestration code just before the task, and passed to it
            call = self.make_call(op.name, args, kwargs, span, node)
            buf = Var("gm_buf", call.type, span)
            self.hoist_to[0].append(AssignStmt(buf, call, span))
            return buf
        if op.name == "tensor.create" and (self.scope_depth or self.func_type in KERNEL_TYPES):
            raise UnsupportedFeatureError(
                "pl.create_tensor inside a loop or branch of a pl.at scope, or in an InCore function (a "
                "kernel-local tensor), is not supported yet", span,
                "create the tensor at the top level of the 'with pl.at(...)' block or before it (orchestration "
                "code), or allocate an on-chip buffer with pl.create_tile")
        if op.name == "tensor.dump_tag" and (self.scope_depth or self.func_type in KERNEL_TYPES):
            raise ParserError("pl.dump_tag(t) marks a tensor of the orchestration; it cannot be used inside a "
                              "pl.at scope or an InCore function", span, "move it after the 'with pl.at(...)' block")
        if op.name in ("tensor.slice", "tile.slice"):
            # the reference's drop_dims / clamp (pypto.frontend.rank_views): a full-rank slice, then
            # the dropped axes erased by a reshape
            args, kwargs, drop = rank_views.split_slice_args(op.name, args, kwargs, span)
            sliced = self.make_call(op.name, args, kwargs, span, node)
            full = [e.value if isinstance(e, ConstInt) else e for e in sliced.args[1].elements]
            axes = rank_views.drop_axes(op.name, drop, full, span)
            return rank_views.reduce_rank(self, sliced, full, axes, span, node)
        return self.make_call(op.name, args, kwargs, span, node)

    def make_call(self, op_name: str, args: list, kwargs: dict, span: Span, node: ast.AST) -> Expr:
        """Bind arguments to the op's schema, convert each by kind, apply the type rule."""
        op = get_op(op_name, span)
        params = op.params
        if op.dsl_args is not None:
            args, kwargs = op.dsl_args(list(args), dict(kwargs), span)
        if len(args) > len(params):
            raise InvalidOperationError(f"pl.{op.name} takes at most {len(params)} arguments, got {len(args)}", span)
        alias = {a: p.name for p in params for a in p.aliases}
        bound: dict[str, Any] = {p.name: a for p, a in zip(params, args)}
        for k, v in kwargs.items():
            k = alias.get(k, k)
            if k not in {p.name for p in params}:
                raise InvalidOperationError(f"pl.{op.name} got an unexpected keyword argument '{k}'", span,
                                            f"its parameters are: {', '.join(p.name for p in params)}")
            if k in bound:
                raise InvalidOperationError(f"pl.{op.name} got multiple values for '{k}'", span)
            bound[k] = v
        values = []
        for p in params:
            if p.name not in bound:
                if p.default is REQUIRED:
                    raise InvalidOperationError(f"pl.{op.name} missing required argument '{p.name}'", span)
                values.append(p.default)
                continue
            values.append(self.convert_arg(op.name, p, bound[p.name], span))
        if op.name == "tensor.dim":   # an Orchestration read of a parameter's dim reads its first carrier
            hit = orchestration_dim_read(self, values[0], values[1])
            if hit is not None:
                values[0], values[1] = hit
        vals = tuple(values)
        try:
            t = op.infer_type(vals, span)
        except PyptoError:
            raise
        except Exception as e:
            raise InternalError(f"type rule of {op.name} failed: {type(e).__name__}: {e}", span) from e
        if op.fold is not None:   # decided at compile time (pl.tensor.dim of a static extent)
            folded = op.fold(op.args(vals))
            if folded is not None:
                return folded
        return Call(op.name, vals, t, span)

    def operand(self, v: Any, span: Span) -> Expr:
        """An op or function-call operand: an IR expression (a call stays nested: FlattenCallExpr
        binds it to a temporary later) or a Python constant as a literal."""
        return v if isinstance(v, Expr) else to_expr(v, span)

    def yield_value(self, v: Any, span: Span) -> Expr:
        """A ``pl.yield_`` operand: a Var or literal. A call is bound to a temporary here, since a
        yield carries values, not computations."""
        if isinstance(v, (Call, FuncCall)):
            base = v.op.split(".")[-1] if isinstance(v, Call) else v.func
            tmp = Var(f"{base}_t", v.type, v.span)
            self.emit(AssignStmt(tmp, v, v.span))
            return tmp
        return self.operand(v, span)

    def dyn_value_error(self, v: Any, span: Span) -> None:
        """Refuse a ``pl.dynamic`` dim used as a value where it has none: one no tensor parameter
        carries (a carried dim was already turned into its first carrier's run-time extent by
        :func:`pypto.frontend.dyn_values.dim_value`), or one folded with a constant it cannot
        combine with (``M * 1.0``). The body reads the extent it means from a tensor."""
        if not isinstance(v, DynDim) or isinstance(v, RtDim):
            return
        from pypto.ir.types import dim_names

        names = dim_names(v)
        uses = [(p.name, axis) for p in getattr(self, "param_vars", ()) if isinstance(p.type, TensorType)
                for axis, d in enumerate(p.type.shape) if isinstance(d, DynDim) and not isinstance(d, DynExpr)
                and d.name in names]
        where = ("; " + " and ".join(f"dimension {axis} of '{n}'" for n, axis in uses)
                 + " may be given different extents" if len(uses) > 1 else "")
        uses = [f"pl.tensor.dim({n}, {axis})" for n, axis in uses]
        raise ParserTypeError(
            f"the dynamic dimension '{v.name}' is used as a value: a pl.dynamic dim names the extents of "
            f"parameters and has no one value in a body{where}", span,
            f"read the extent of the tensor you mean: {uses[0] if uses else 'pl.tensor.dim(t, axis)'}")

    def convert_arg(self, op: str, p, v: Any, span: Span) -> Any:
        kind = p.kind
        if kind in ("tensor", "tile", "scalar", "value", "any", "handle"):
            if kind == "scalar" and _is_static(v) and isinstance(v, (bool, int, float)):
                return to_expr(v, span)
            k = kind_of(v)
            if (kind == "value" and k in ("tensor", "tile")) or k == kind or (kind == "any" and k != "other"):
                return self.operand(v, span)
            raise InvalidOperationError(f"pl.{op}: argument '{p.name}' must be a {kind}, got {_describe_static(v)}",
                                        span)
        if kind == "task_ids":
            if not isinstance(v, (list, tuple)):
                raise InvalidOperationError(f"pl.{op}: '{p.name}' must be a list of TaskIds, got {_describe_static(v)}",
                                            span, "deps=[tid, tids]")
            elems = []
            for x in v:
                if x is None:
                    continue   # "no producer": dropped, as in deps=
                if not (isinstance(x, Expr) and _is_task_ids(x.type)):
                    raise InvalidOperationError(f"pl.{op}: '{p.name}' takes TaskIds (pl.TASK_ID values or arrays "
                                                f"of them), got {_describe_static(x)}", span)
                elems.append(x)
            return MakeTuple(tuple(elems), span)
        if kind == "ints":
            if v is None and p.optional:
                return None
            if not isinstance(v, (list, tuple)):
                raise InvalidOperationError(f"pl.{op}: '{p.name}' must be a list of integers, got "
                                            f"{_describe_static(v)}", span)
            elems = []
            for x in v:
                self.dyn_value_error(x, span)
                if _is_static(x) and (isinstance(x, bool) or not isinstance(x, int)):
                    raise InvalidOperationError(f"pl.{op}: '{p.name}' must hold integers, got {x!r}", span)
                if not _is_static(x) and kind_of(x) != "scalar":
                    raise InvalidOperationError(f"pl.{op}: '{p.name}' must hold scalars, got {_describe_static(x)}",
                                                span)
                elems.append(to_expr(x, span))
            return MakeTuple(tuple(elems), span)
        if kind == "dtype":
            if not isinstance(v, DataType):
                raise InvalidOperationError(f"pl.{op}: '{p.name}' must be a dtype like pl.FP32, got "
                                            f"{_describe_static(v)}", span)
            return v
        if kind == "mem":
            if v is not None and not isinstance(v, MemorySpace):
                raise InvalidOperationError(f"pl.{op}: '{p.name}' must be a pl.Mem.<space>, got {_describe_static(v)}",
                                            span)
            return v
        if kind == "mode":
            try:
                return normalize_mode(v)
            except (ValueError, TypeError) as e:
                raise InvalidOperationError(f"pl.{op}: {e}", span) from None
        if kind in ("pad", "atomic"):
            from pypto.language.enums import AtomicType, PadValue

            cls = AtomicType if kind == "atomic" else PadValue
            if kind == "pad" and isinstance(v, (int, float)) and not isinstance(v, bool):
                # DSL sugar: 0 / 0.0 -> zero, math.inf -> max, -math.inf -> min
                v = {0: PadValue.zero, float("inf"): PadValue.max, float("-inf"): PadValue.min}.get(v, v)
            if not isinstance(v, cls):
                raise InvalidOperationError(f"pl.{op}: '{p.name}' must be a pl.{cls.__name__}, got "
                                            f"{_describe_static(v)}", span)
            return v
        if kind in ("str", "bool"):
            return v
        raise InternalError(f"op {op}: unknown parameter kind {kind!r}", span)
