"""The IR printer: a Program prints as an ``@pl.program`` class of DSL source.

The output is the input language of :func:`pypto.ir.parse` (the same frontend that parses
``@pl.jit`` kernels), so ``parse(print(p))`` is structurally equal to ``p`` at every stage of the
pipeline; pass dumps are these files. Printing is deterministic: callees before callers, names made
unique per function by suffixing ``_1``, ``_2``, ...

**Explicit and concise.** By default every assignment is annotated with its Var's full type
(memory space, ``valid_shape``, MemRef, ...). With ``concise=True`` an annotation is left out exactly
when the parser, reading the statement without it, gives the Var the same type — so a concise print
still parses back to a structurally equal program (:func:`_implied_type` is the rule; when in
doubt it annotates). Pass dumps at ``PassDumpLevel.CONCISE`` use it; EXPLICIT dumps and the
ROUNDTRIP verification use the explicit form.
"""
from __future__ import annotations

import enum
import json
import math
from typing import Any

from pypto.ir.nodes import (
    BINOPS, AssignStmt, BinOp, Call, ConstBool, ConstFloat, ConstInt, EvalStmt, Expr, ForStmt,
    FuncCall, Function, IfStmt, MakeTuple, Program, ReturnStmt, ScopeStmt, Stmt, TupleGetItem, WhileStmt,
    UnaryOp, Var, YieldStmt,
)
from pypto.ir.pysource import Namer, sanitize
from pypto.ir.types import ArrayType, DynDim, HandleType, RtDim, ScalarType, dim_names, TensorType, TileType, TupleType, Type
from pypto.language.dtypes import FP32, INDEX, DataType
from pypto.language.enums import ForKind, ParamDirection
from pypto.errors import PyptoError
from pypto.ir.visit import defined_vars, iter_exprs

_INDENT = "    "


def _PLD_IMPORT(prog) -> list:   # noqa: N802
    """The import a printed program needs when a parameter is a window view (``pld.DistributedTensor``)."""
    uses = any(isinstance(p.type, TensorType) and p.type.window for f in prog.functions for p in f.params)
    return ["import pypto.language.distributed as pld"] if uses else []


def print_type(t: Type) -> str:
    """DSL spelling of a type annotation."""
    if isinstance(t, TensorType):
        if t.window and t.layout is None:   # a window view: the reference's spelling
            return f"pld.DistributedTensor[{_ints(t.shape)}, {t.dtype!r}]"
        # DN prints as a view (the reference refuses the bare layout marker pl.DN in an annotation)
        layout = "" if t.layout is None else f", pl.TensorView(layout=pl.TensorLayout.DN)" \
            if t.layout.name == "DN" else f", pl.TensorLayout.{t.layout.name}"
        return f"pl.Tensor[{_ints(t.shape)}, {t.dtype!r}{layout}]"
    if isinstance(t, TileType):
        parts = [_ints(t.shape), repr(t.dtype)]
        if t.memory_space is not None:
            parts.append(repr(t.memory_space))
        if t.valid_shape is not None and all(isinstance(d, (int, DynDim)) for d in t.valid_shape):
            # (a runtime valid shape is left out: the annotated value's own type carries it)
            parts.append(f"pl.TileView(valid_shape={_ints(t.valid_shape)})")
        if t.memref is not None:
            m = t.memref
            addr = f", addr={m.addr}" if m.addr is not None else ""
            parts.append(f'pl.MemRef("{m.base}", {m.offset}, {m.size}{addr})')
        return f"pl.Tile[{', '.join(parts)}]"
    if isinstance(t, ScalarType):
        return f"pl.Scalar[{t.dtype!r}]"
    if isinstance(t, TupleType):
        return f"pl.Tuple[{', '.join(print_type(x) for x in t.types)}]"
    if isinstance(t, ArrayType):
        return f"pl.Array[{t.extent}, {t.dtype!r}]"
    if isinstance(t, HandleType):
        return f"pl.{t.kind}"
    raise TypeError(f"cannot print type {t!r}")


def _ints(xs) -> str:
    return "[" + ", ".join(x.name if isinstance(x, DynDim) else str(int(x)) for x in xs) + "]"


def _dyn_dims(prog: Program) -> list[str]:
    """Names of the dynamic dimensions any parameter or value of ``prog`` uses (sorted)."""
    names: set[str] = set()

    def note(t) -> None:
        if isinstance(t, TupleType):
            for x in t.types:
                note(x)
        for d in (*getattr(t, "shape", ()), *(getattr(t, "valid_shape", None) or ())):
            if isinstance(d, DynDim) and not isinstance(d, RtDim):   # a run-time value declares nothing
                names.update(dim_names(d))   # a composite dim (M * 2) declares its bare dims

    for f in prog.functions:
        for v in (*f.params, *defined_vars(f.body)):
            note(v.type)
        for t in f.return_types:
            note(t)
    return sorted(names)


_Namer = Namer          # the names this module had before the helpers moved to pypto.ir.pysource
_sanitize = sanitize


def _implied_type(value: Any, funcs: dict | None):
    """The type the parser gives ``x`` for ``x = <value>`` written without an annotation (it then
    takes the value's type as it builds it), or None when that is not known here — the printer
    annotates then. With an annotation the parser instead gives the value (and so the Var) the
    annotated type, which is how passes' decisions (memory space, address, ...) travel.

    * a Var (``y = x``, a copy): ``x``'s type;
    * an op call: the op's type rule applied to the (re-parsed, structurally equal) arguments;
    * a kernel call ``self.k(...)``: ``k``'s return type(s) (needs the program's functions);
    * ``t[i]`` of a tuple: the tuple's i-th element type.

    Literals, scalar arithmetic and anything else are not inferred here (the parser folds literals
    to Python constants and has its own scalar promotion rules): they keep their annotation."""
    if isinstance(value, Var):
        return value.type
    if isinstance(value, Call):
        from pypto.ops.registry import get_op

        try:
            return get_op(value.op, value.span).infer_type(value.args, value.span)
        except (PyptoError, KeyError, TypeError, ValueError, AttributeError, IndexError):
            return None
    if isinstance(value, FuncCall):
        callee = funcs.get(value.func) if funcs else None
        if callee is None:
            return None
        rts = callee.return_types
        return rts[0] if len(rts) == 1 else TupleType(tuple(rts))
    if isinstance(value, TupleGetItem):
        t = getattr(value.value, "type", None)
        if isinstance(t, TupleType) and 0 <= value.index < len(t.types):
            return t.types[value.index]
    return None


class _Printer:
    def __init__(self, concise: bool = False, funcs: dict | None = None):
        self.lines: list[str] = []
        self.namer = _Namer()
        self.concise = concise
        self.funcs = funcs   # name -> Function of the program (kernel calls' return types)

    def annotation_implied(self, s: AssignStmt) -> bool:
        """Concise mode: the Var's type is what the parser infers without an annotation (and the
        value already carries that type, so nothing the annotation would set is lost)."""
        t = s.var.type
        if not self.concise or getattr(s.value, "type", None) != t:
            return False
        return _implied_type(s.value, self.funcs) == t

    # ---------------------------------------------------------------- expressions
    def expr(self, e: Any, top: bool = True) -> str:
        if isinstance(e, Var):
            return self.namer.use(e)
        if isinstance(e, ConstInt):
            return str(e.value) if e.dtype == INDEX else f"pl.const({e.value}, {e.dtype!r})"
        if isinstance(e, ConstFloat):
            text = _float(e.value)
            return text if e.dtype == FP32 else f"pl.const({text}, {e.dtype!r})"
        if isinstance(e, ConstBool):
            return repr(e.value)
        if isinstance(e, Call):
            return self.call(e)
        if isinstance(e, FuncCall):
            # runtime tags decided by DeriveCallDirections: attrs={"arg_directions": [...]}, plus the
            # producer sites AutoDeriveTaskDependencies found per argument: "compiler_dep_edges": {i: [k]}
            attrs = None
            items = []
            if e.arg_directions:
                items.append('"arg_directions": [' + ", ".join(f'"{t}"' for t in e.arg_directions) + "]")
            if e.compiler_dep_edges:
                items.append('"compiler_dep_edges": {' + ", ".join(
                    f"{i}: [{', '.join(str(k) for k in ks)}]" for i, ks in e.compiler_dep_edges) + "}")
            if items:
                attrs = "attrs={" + ", ".join(items) + "}"
            if not (e.deps or e.no_dep_args or e.dump_args or e.predicate or e.task_id_var is not None
                    or e.block_num is not None):
                args = [self.expr(a) for a in e.args] + ([attrs] if attrs else [])
                return f"self.{e.func}({', '.join(args)})"
            # a dispatch with task attributes: pl.submit(self.k, ..., pl.no_dep(x), deps=[...], dumps=[...])
            parts = [f"self.{e.func}"]
            for i, a in enumerate(e.args):
                parts.append(f"pl.no_dep({self.expr(a)})" if i in e.no_dep_args else self.expr(a))
            if e.deps:
                parts.append(f"deps=[{', '.join(self.expr(d) for d in e.deps)}]")
            if e.dump_args:
                parts.append(f"dumps=[{', '.join(self.expr(e.args[i]) for i in e.dump_args)}]")
            if e.predicate:
                cmp, value, t, *index = e.predicate
                parts.append(f"predicate=({self.expr(t)}[{', '.join(self.expr(i) for i in index)}] "
                             f"{BINOPS[cmp]} {value})")
            if attrs:
                parts.append(attrs)
            if e.block_num is not None:   # one task of n blocks
                parts.insert(1 + len(e.args), f"core_num={self.expr(e.block_num)}")
                return f"pl.spmd_submit({', '.join(parts)})"
            return f"pl.submit({', '.join(parts)})"
        if isinstance(e, BinOp):
            if e.op in ("min", "max"):
                return f"{e.op}({self.expr(e.lhs)}, {self.expr(e.rhs)})"
            text = f"{self.expr(e.lhs, False)} {BINOPS[e.op]} {self.expr(e.rhs, False)}"
            return text if top else f"({text})"
        if isinstance(e, UnaryOp):
            if e.op.startswith("cast:"):
                mode = e.op[5:]
                return f"pl.cast({self.expr(e.operand)}, {e.type.dtype!r}" + \
                    ("" if mode == "round" else f", mode={mode!r}") + ")"
            if e.op == "abs":
                return f"abs({self.expr(e.operand)})"
            text = ("not " if e.op == "not" else "-") + self.expr(e.operand, False)
            return text if top else f"({text})"
        if isinstance(e, MakeTuple):
            return "[" + ", ".join(self.expr(x) for x in e.elements) + "]"
        if isinstance(e, TupleGetItem):
            return f"{self.expr(e.value, False)}[{e.index}]"
        raise TypeError(f"cannot print expression {e!r}")

    def attr(self, kind: str, v: Any) -> str:
        if v is None:
            return "None"
        if kind == "ints":
            return self.expr(v)
        if isinstance(v, DataType) or isinstance(v, enum.Enum):
            return repr(v)
        if isinstance(v, Expr):
            return self.expr(v)
        return repr(v)

    def call(self, c: Call) -> str:
        from pypto.ops.registry import VALUE_KINDS, get_op

        op = get_op(c.op, c.span)
        parts = []
        for p, v in zip(op.params, c.args):
            if p.kind in VALUE_KINDS:
                text = "None" if v is None else self.expr(v)  # None: an omitted optional operand
            else:
                text = self.attr(p.kind, v)
            if p.required:
                parts.append(text)
            elif v != p.default:
                parts.append(f"{p.name}={text}")
        return f"pl.{c.op}({', '.join(parts)})"

    # ---------------------------------------------------------------- statements
    def emit(self, depth: int, text: str) -> None:
        self.lines.append(_INDENT * depth + text)

    def body(self, stmts, depth: int, yield_targets=()) -> None:
        if not stmts:
            self.emit(depth, "pass")
        for s in stmts:
            self.stmt(s, depth, yield_targets)

    def stmt(self, s: Stmt, depth: int, yield_targets=()) -> None:
        if isinstance(s, AssignStmt):
            value = self.expr(s.value)  # print uses before the definition (a = a + 1 never occurs in SSA)
            name = self.namer.define(s.var)
            manual = isinstance(s.value, FuncCall) and s.value.manual
            if manual:
                self.emit(depth, "with pl.manual_scope():")
                depth += 1
            tid = getattr(s.value, "task_id_var", None)
            if tid is not None:
                self.emit(depth, f"{name}, {self.namer.define(tid)} = {value}")
            elif self.annotation_implied(s):
                self.emit(depth, f"{name} = {value}")
            else:
                self.emit(depth, f"{name}: {print_type(s.var.type)} = {value}")
        elif isinstance(s, EvalStmt):
            self.emit(depth, self.expr(s.expr))
        elif isinstance(s, ReturnStmt):
            self.emit(depth, "return " + ", ".join(self.expr(v) for v in s.values) if s.values else "return")
        elif isinstance(s, YieldStmt):
            values = ", ".join(self.expr(v) for v in s.values)
            if yield_targets:
                for t, v in zip(yield_targets, s.values):
                    if t.type != getattr(v, "type", None):
                        # the result's type is not the yielded value's (e.g. a phi with its own
                        # buffer): declare it, the parser reads the declaration
                        self.emit(depth, f"{self.namer.define(t)}: {print_type(t.type)}")
                targets = ", ".join(self.namer.define(v) for v in yield_targets)
                self.emit(depth, f"{targets} = pl.yield_({values})")
            else:
                self.emit(depth, f"pl.yield_({values})")
        elif isinstance(s, ForStmt):
            self.for_stmt(s, depth)
        elif isinstance(s, WhileStmt):
            self.while_stmt(s, depth)
        elif isinstance(s, IfStmt):
            self.emit(depth, f"if {self.expr(s.cond)}:")
            self.body(s.then_body, depth + 1, s.return_vars)
            if s.else_body:
                self.emit(depth, "else:")
                self.body(s.else_body, depth + 1, s.return_vars)
        elif isinstance(s, ScopeStmt):
            if s.manual:
                self.emit(depth, "with pl.manual_scope():")
                depth += 1
            hint = f", name_hint={s.name_hint!r}" if s.name_hint else ""
            for key, vals in (("deps", s.deps), ("no_dep_args", s.no_dep_args), ("dumps", s.dumps)):
                if vals:
                    hint += f", {key}=[{', '.join(self.expr(v) for v in vals)}]"
            opts = [f"pl.split({s.split!r})"] if s.split is not None else []
            if getattr(s, "slot_num", None) is not None:
                opts.append(f"pl.cross_core_slot(slot_num={s.slot_num})")
            if opts:
                hint += f", optimizations=[{', '.join(opts)}]"
            # the body is printed before the TaskId is named: it is not visible inside its own scope
            head = len(self.lines)
            self.emit(depth, "")
            self.body(s.body, depth + 1)
            target = f" as {self.namer.define(s.task_id)}" if s.task_id is not None else ""
            if s.block_num is not None:   # a multi-block task: with pl.spmd(n, ...) (no dumps/no_dep_args)
                if s.predicate:
                    cmp, value, t, *index = s.predicate
                    hint += (f", predicate=({self.expr(t)}[{', '.join(self.expr(i) for i in index)}] "
                             f"{BINOPS[cmp]} {value})")
                self.lines[head] = _INDENT * depth + f"with pl.spmd({self.expr(s.block_num)}{hint}){target}:"
            else:
                self.lines[head] = _INDENT * depth + f"with pl.at(level={s.level!r}{hint}){target}:"
        else:
            raise TypeError(f"cannot print statement {s!r}")

    def for_stmt(self, s: ForStmt, depth: int) -> None:
        """``for i[, (carried,)] in pl.<kind>(bounds[, stage=F][, init_values=(...)][, attrs={...}]):``
        (loop attributes last, keys double-quoted, as the reference prints them)."""
        fn = {ForKind.Sequential: "range", ForKind.Parallel: "parallel", ForKind.Unroll: "unroll",
              ForKind.Pipeline: "pipeline"}[s.kind]
        start, stop, step = (self.expr(x) for x in (s.start, s.stop, s.step))
        default_start = isinstance(s.start, ConstInt) and s.start.value == 0 and s.start.dtype == INDEX
        default_step = isinstance(s.step, ConstInt) and s.step.value == 1 and s.step.dtype == INDEX
        args = [stop] if default_start and default_step else [start, stop] if default_step else [start, stop, step]
        if s.kind == ForKind.Pipeline:
            args.append(f"stage={s.stage}")
        inits = [self.expr(v) for v in s.init_values]
        attrs = f"attrs={{{', '.join(f'{json.dumps(k)}: {_attr_value(v)}' for k, v in s.attrs)}}}" if s.attrs else None
        loop_var = self.namer.define(s.loop_var)
        for it, init in zip(s.iter_args, s.init_values):
            if it.type != getattr(init, "type", None):
                # a carried value with its own buffer: declare its type for the parser
                self.emit(depth, f"{self.namer.define(it)}: {print_type(it.type)}")
        if s.iter_args:
            carried = ", ".join(self.namer.define(v) for v in s.iter_args)
            args.append(f"init_values=({', '.join(inits)},)")
            args += [attrs] if attrs else []
            self.emit(depth, f"for {loop_var}, ({carried},) in pl.{fn}({', '.join(args)}):")
        else:
            args += [attrs] if attrs else []
            self.emit(depth, f"for {loop_var} in pl.{fn}({', '.join(args)}):")
        self.body(s.body, depth + 1, s.return_vars)

    def while_stmt(self, s: WhileStmt, depth: int) -> None:
        """SSA form ``for (a, b) in pl.while_(init_values=(x, y)): pl.cond(c) ... = pl.yield_(...)``;
        without iter_args (pre-SSA, or a condition on outer values only) a plain ``while c:``."""
        if not s.iter_args:
            self.emit(depth, f"while {self.expr(s.cond)}:")
            self.body(s.body, depth + 1, s.return_vars)
            return
        inits = [self.expr(v) for v in s.init_values]
        for it, init in zip(s.iter_args, s.init_values):
            if it.type != getattr(init, "type", None):
                self.emit(depth, f"{self.namer.define(it)}: {print_type(it.type)}")
        carried = ", ".join(self.namer.define(v) for v in s.iter_args)
        self.emit(depth, f"for ({carried},) in pl.while_(init_values=({', '.join(inits)},)):")
        self.emit(depth + 1, f"pl.cond({self.expr(s.cond)})")
        self.body(s.body, depth + 1, s.return_vars)

    # ---------------------------------------------------------------- functions
    def function(self, f: Function, depth: int) -> None:
        deco = [f"type={f.func_type!r}"]
        if f.level is not None:
            deco.append(f"level={f.level!r}")
        if f.attrs:  # values are static literals / DSL enum members: their repr re-parses
            deco.append("attrs={" + ", ".join(f"{k!r}: {v!r}" for k, v in f.attrs) + "}")
        self.emit(depth, f"@pl.function({', '.join(deco)})")
        params = ["self"]
        for p, d in zip(f.params, f.directions):
            ann = print_type(p.type)
            if d == ParamDirection.Out:
                ann = f"pl.Out[{ann}]"
            elif d == ParamDirection.InOut:
                ann = f"pl.InOut[{ann}]"
            params.append(f"{self.namer.define(p)}: {ann}")
        if len(f.return_types) == 1:
            ret = f" -> {print_type(f.return_types[0])}"
        elif f.return_types:
            ret = f" -> pl.Tuple[{', '.join(print_type(t) for t in f.return_types)}]"
        else:
            ret = ""
        self.emit(depth, f"def {f.name}({', '.join(params)}){ret}:")
        self.body(f.body, depth + 1)


def _float(v: float) -> str:
    if math.isnan(v):
        return 'float("nan")'
    if math.isinf(v):
        return 'float("inf")' if v > 0 else '-float("inf")'
    return repr(float(v))


def _attr_value(v) -> str:
    """A loop attribute value as a Python literal the parser reads back (bool before int: a bool is
    an int in Python)."""
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _float(v)
    return json.dumps(v)


def print_function(f: Function, concise: bool = False, program: Program | None = None) -> str:
    """One function in ``@pl.function`` form (as a method of a program class, at column 0).
    ``concise`` drops the annotations the parser re-infers (kernel calls keep theirs unless
    ``program`` gives the callees)."""
    p = _Printer(concise, {g.name: g for g in program.functions} if program is not None else None)
    p.function(f, 0)
    return "\n".join(p.lines) + "\n"


def print_program(prog: Program, concise: bool = False, memo: dict | None = None) -> str:
    """The whole program as an ``@pl.program`` class (``# pypto.program: <name>`` header).
    ``concise`` drops every assignment annotation the parser re-infers (see the module docstring).

    ``memo`` (a dict the caller keeps, e.g. across the stages of one pipeline): a function's text
    depends only on the function and the functions it calls (their return types), all frozen, so
    a function object printed before with the same callees is not printed again."""
    funcs = {f.name: f for f in prog.functions}
    lines = [f"# pypto.program: {prog.name}", "import pypto.language as pl", *_PLD_IMPORT(prog), ""]
    dyn = _dyn_dims(prog)
    lines.extend(f'{n} = pl.dynamic("{n}")' for n in dyn)
    lines.extend(["", "@pl.program", f"class {prog.name}:"])
    for i, f in enumerate(_callee_order(prog, memo)):
        if i:
            lines.append("")
        lines.extend(_function_lines(f, concise, funcs, memo))
    return "\n".join(lines) + "\n"


def _function_lines(f: Function, concise: bool, funcs: dict, memo: dict | None) -> list[str]:
    if memo is None:
        p = _Printer(concise, funcs)
        p.function(f, 1)
        return p.lines
    callees = tuple(funcs.get(c) for c in _callees_of(f, memo))
    key = ("text", id(f), concise)
    hit = memo.get(key)
    # the entry keeps f and its callees alive: their ids are not reused while the memo lives
    if hit is not None and hit[0] is f and len(hit[1]) == len(callees) \
            and all(a is b for a, b in zip(hit[1], callees)):
        return hit[2]
    p = _Printer(concise, funcs)
    p.function(f, 1)
    memo[key] = (f, callees, p.lines)
    return p.lines


def _callees_of(f: Function, memo: dict | None) -> list[str]:
    if memo is None:
        return _callees(f.body)
    hit = memo.get(("callees", id(f)))
    if hit is None or hit[0] is not f:
        hit = memo[("callees", id(f))] = (f, _callees(f.body))
    return hit[1]


def _callee_order(prog: Program, memo: dict | None = None) -> list[Function]:
    """Functions with callees before callers (stable otherwise)."""
    by_name = {f.name: f for f in prog.functions}
    order: list[Function] = []
    seen: set[str] = set()

    def visit(f: Function) -> None:
        if f.name in seen:
            return
        seen.add(f.name)
        for callee in _callees_of(f, memo):
            if callee in by_name:
                visit(by_name[callee])
        order.append(f)

    for f in prog.functions:
        visit(f)
    return order


def _callees(stmts) -> list[str]:
    return [e.func for e in iter_exprs(stmts) if isinstance(e, FuncCall)]


