"""``@pl.jit`` specialisation: bind a call's arguments to the kernel signature, turn tensor
arguments into tensor types and scalar arguments into specialisation constants, discover the
``@pl.jit.incore`` functions the kernel calls, and parse everything into one :class:`Program`."""
from __future__ import annotations

import ast
import dataclasses
import inspect
import math
from dataclasses import dataclass
from typing import Any

import torch

from pypto.errors import ParserError, ParserTypeError, Span, UnsupportedFeatureError
from pypto.frontend.parser import (
    Callee,
    FunctionParser,
    ParamSpec,
    Resolver,
    parse_annotation,
)
from pypto.frontend.source import function_source
from pypto.ir.nodes import Expr, Function, Program
from pypto.ir.types import DynDim, ScalarType, TensorType, Type, describe
from pypto.language.constructs import RUNTIME
from pypto.language.dtypes import FP4, dtype_from_torch
from pypto.language.enums import FunctionType
from pypto.language.jit import JITFunction, _Unsupported


@dataclass
class Specialization:
    """The parsed program of one call signature, with its cache key."""

    program: Program
    key: tuple
    param_names: tuple[str, ...]


def kernel_globals(fn) -> dict:
    """Globals and closure cells of a Python function: the names a kernel body may refer to."""
    g = dict(fn.__globals__)
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                g[name] = cell.cell_contents
            except ValueError:
                pass
    return g


def source_hash(jitfn) -> str:
    """Hash of a kernel's source text as read when it was decorated."""
    return jitfn.source_snapshot.digest[:16]


def _arg_signature(v: Any, dyn: tuple = ()) -> Any:
    if isinstance(v, torch.Tensor):
        shape = tuple(None if i < len(dyn) and dyn[i] else int(d) for i, d in enumerate(v.shape))
        return ("tensor", shape, str(v.dtype))
    if v is RUNTIME:
        return ("runtime",)
    if isinstance(v, float):
        # by bit pattern: -0.0 == 0.0 and nan != nan, but neither pair may share a specialisation
        return ("scalar", "float", v.hex())
    return ("scalar", type(v).__name__, v)


def _as_dtype(value, t: ScalarType, what: str, span: Span):
    """A specialisation constant takes its parameter's dtype: ``3`` for a ``pl.FP32`` parameter is
    the float 3.0 (so ``pl.add(x, s)`` computes as the annotation says, not as the literal's type)."""
    if t.dtype.is_float():
        value = float(value)
        # like pl.full's fill value: a finite number past the dtype's range would silently become
        # an infinity (1e39 for FP32, 1e6 for FP16); an infinity or NaN passed as such is fine
        big = torch.finfo(t.dtype.torch).max if t.dtype.torch is not None else None
        if big is not None and math.isfinite(value) and abs(value) > big:
            raise ParserTypeError(f"{what} is {t.dtype.name} but the call passes {value!r}, outside its finite "
                                  f"range (largest {big:.6g}): it would become an infinity; pass "
                                  f"float('inf') if an infinity is meant", span)
        return value
    if t.dtype.is_bool():
        return bool(value)
    if isinstance(value, float) and not value.is_integer():
        raise ParserTypeError(f"{what} is {t.dtype.name} but the call passes {value}", span)
    value = int(value)
    if t.dtype.kind in ("int", "uint") and t.dtype.torch is not None:
        info = torch.iinfo(t.dtype.torch)
        if not info.min <= value <= info.max:
            raise ParserTypeError(f"{what} is {t.dtype.name} but the call passes {value}, outside "
                                  f"[{info.min}, {info.max}]", span)
    return value


class _Specializer:
    def __init__(self, entry):
        self.entry = entry
        self.functions: dict[str, Any] = {}   # name -> Function (deps first, in discovery order)
        self.sources: dict[str, str] = {}
        self.in_progress: set[str] = set()
        # (callee, its constant arguments) -> the name of that specialisation: a kernel function
        # called with other Python constants is compiled once per constant set (`scale`, `scale_1`)
        self.spec_names: dict[tuple, str] = {}
        self.dyn_dims: dict[int, tuple] = {}   # entry parameter index -> which dims are dynamic
        # name -> JITFunction (an @pl.program's callees have no jit entry: entry is None there)
        self.owners: dict[str, Any] = {entry.fn.__name__: entry} if entry is not None else {}

    def parse(self, jitfn, values: list[Any], value_types: list[Type | None], func_type: FunctionType,
              call_span: Span | None, name: str | None = None) -> Any:
        fn = jitfn.fn
        node, src = function_source(fn, jitfn.source_snapshot)
        if not isinstance(node, ast.FunctionDef):
            raise ParserError(f"@pl.jit expects a function, got {type(node).__name__}")
        globals_ = kernel_globals(fn)
        static = FunctionParser(src, Resolver(globals_), "<static>", func_type).resolve_static
        args = node.args
        if args.vararg or args.kwarg or args.kwonlyargs:
            raise ParserError(f"kernel '{fn.__name__}' may only have positional parameters", src.span(node))
        params: list[ParamSpec] = []
        for i, a in enumerate(args.args):
            what = f"Parameter '{a.arg}'"
            if a.annotation is None:
                raise ParserTypeError(f"{what} missing type annotation", src.span(a), "x: pl.Tensor[[64], pl.FP32]")
            ann_type, direction, is_scalar = parse_annotation(a.annotation, static, src, what)
            given, given_type = values[i], value_types[i]
            span = src.span(a)
            if is_scalar:
                if given is RUNTIME or (isinstance(given, Expr)):
                    params.append(ParamSpec(a.arg, ann_type, direction, span=span))
                else:
                    if isinstance(given, torch.Tensor) or not isinstance(given, (int, float, bool)):
                        raise ParserTypeError(f"{what} is a scalar but the call passes {type(given).__name__}",
                                              call_span or span)
                    params.append(ParamSpec(a.arg, None, direction, const=_as_dtype(given, ann_type, what, span),
                                            span=span))
                continue
            if given_type is None:
                raise ParserTypeError(f"{what} is a tensor but the call passes {type(given).__name__}",
                                      call_span or span)
            if ann_type is not None and not _matches(ann_type, given_type):
                raise ParserTypeError(f"{what} is annotated {describe(ann_type)} but the call passes "
                                      f"{describe(given_type)}", call_span or span)
            if ann_type is not None and any(isinstance(d, DynDim) for d in ann_type.shape) and name is None:
                # a dynamic dim of the entry stays symbolic: the compiled program serves every extent.
                # A callee's dynamic dim binds to the caller's extent (the reference's call binding:
                # `scale_rows(x)` with x of 64 rows makes M = 64 there); the callee is specialised per
                # argument shape (see call_function)
                self.dyn_dims[i] = tuple(isinstance(d, DynDim) for d in ann_type.shape)
                given_type = ann_type
            params.append(ParamSpec(a.arg, given_type, direction, span=span))
        self._bind_dynamic(node, params, static, src)
        resolver = Resolver(globals_, call_function=self.call_function)
        fp = FunctionParser(src, resolver, name or fn.__name__, func_type)
        func = fp.parse(node, params)
        self.sources[fn.__name__] = source_hash(jitfn)
        return func

    def _bind_dynamic(self, node: ast.FunctionDef, params: list, static, src) -> None:
        """``a.bind_dynamic(dim, M)`` anywhere in the body: dim ``dim`` of tensor parameter ``a`` is
        the dynamic dim ``M`` (a ``pl.dynamic`` of the module, or ``M = pl.dynamic("M")`` in the body),
        so the build serves every extent there (the cache key holds ``M``, not the extent)."""
        from pypto.frontend.parser import bind_dynamic_call
        from pypto.ir.types import DynDim

        local = {}
        for n in ast.walk(node):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                    and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Attribute) \
                    and n.value.func.attr == "dynamic" and len(n.value.args) == 1 \
                    and isinstance(n.value.args[0], ast.Constant) and isinstance(n.value.args[0].value, str):
                local[n.targets[0].id] = DynDim(n.value.args[0].value)
        index = {p.name: i for i, p in enumerate(params)}
        for n in ast.walk(node):
            found = bind_dynamic_call(n)
            if found is None or found[0] not in index:
                continue
            i = index[found[0]]
            p = params[i]
            dim = static(found[1])
            var = local.get(found[2].id) if isinstance(found[2], ast.Name) and found[2].id in local \
                else static(found[2])
            if not isinstance(p.type, TensorType) or type(dim) is not int or not isinstance(var, DynDim):
                raise ParserTypeError("bind_dynamic takes a constant dimension and a pl.dynamic(...) variable, "
                                      "on a tensor parameter", src.span(n), "M = pl.dynamic(\"M\"); a.bind_dynamic(0, M)")
            shape = list(p.type.shape)
            if not -len(shape) <= dim < len(shape):
                raise ParserTypeError(f"bind_dynamic: dimension {dim} is out of range for {describe(p.type)}",
                                      src.span(n))
            shape[dim] = var
            params[i] = p._replace(type=p.type.with_(shape=tuple(shape))) if hasattr(p, "_replace") else \
                dataclasses.replace(p, type=p.type.with_(shape=tuple(shape)))
            self.dyn_dims[i] = tuple(isinstance(d, DynDim) for d in shape)

    def call_function(self, obj: Any, args: list, span: Span) -> Callee | None:
        if isinstance(obj, _Unsupported):
            raise UnsupportedFeatureError(f"'{obj.fn.__name__}': {obj.why}", span, obj.hint)
        if isinstance(obj, Function):
            return self.call_parsed(obj, span)
        if not isinstance(obj, JITFunction):
            return None
        saved_dyn = dict(self.dyn_dims)
        if obj.kind == "entry":
            raise ParserError(f"'{obj.fn.__name__}' is a @pl.jit entry and cannot be called from a kernel", span,
                              "make the callee a @pl.jit.incore function")
        base = obj.fn.__name__
        other = self.owners.setdefault(base, obj)
        if other is not obj:
            # functions are keyed by name in the program: a second one would silently reuse the first
            where = (f"both made by the def at {_where(obj)}, e.g. by a factory capturing different values"
                     if getattr(other.fn, "__code__", None) is getattr(obj.fn, "__code__", 0)
                     else f"{_where(other)} and {_where(obj)}")
            raise ParserError(f"two different kernel functions are named '{base}' ({where}); the functions of "
                              "a program are identified by name", span,
                              "give each its own name (or pass the differing value as an argument)")
        if base in self.in_progress:
            raise ParserError(f"recursive call of '{base}'", span)
        consts = {i: a for i, a in enumerate(args) if not isinstance(a, Expr)}
        shapes = tuple(a.type if isinstance(a, Expr) and isinstance(a.type, TensorType) else None for a in args)
        ckey = (base, tuple(sorted((i, type(v).__name__, repr(v)) for i, v in consts.items())), shapes)
        name = self.spec_names.get(ckey)
        if name is None:
            name, k = base, 1
            while name in self.functions or name in self.spec_names.values():
                name, k = f"{base}_{k}", k + 1
            self.spec_names[ckey] = name
        if name not in self.functions:
            types = []
            for a in args:
                if not isinstance(a, Expr):
                    types.append(None)
                elif isinstance(a.type, TensorType):
                    types.append(a.type)
                else:
                    types.append(None)
            self.in_progress.add(base)
            try:
                self.functions[name] = self.parse(obj, [a if isinstance(a, Expr) and isinstance(a.type, ScalarType)
                                                        else a for a in args], types, obj.func_type, span, name)
            finally:
                self.in_progress.discard(base)
                self.dyn_dims = saved_dyn  # only the entry's dynamic dims shape the cache key
        f = self.functions[name]
        return Callee(name, tuple(p.type for p in f.params), f.return_types, tuple(sorted(consts)))

    def call_parsed(self, func: Function, span: Span) -> Callee:
        """A call of a standalone ``@pl.function`` (parsed at decoration into an IR Function, e.g.
        a module-level InCore kernel shared by several programs): the function joins the calling
        program as it is, under its own name (the reference adds such callees to the program)."""
        other = self.functions.get(func.name)
        if other is not None and other is not func and other != func:
            raise ParserError(f"two different functions named '{func.name}' are called from this program; the "
                              "functions of a program are identified by name", span,
                              "give each its own name")
        self.functions.setdefault(func.name, func)
        return Callee(func.name, tuple(p.type for p in func.params), func.return_types)


def specialize(jitfn, args: tuple, kwargs: dict) -> Specialization:
    """Parse ``jitfn`` for the argument signature of one call (or sample arguments)."""
    fn = jitfn.fn
    sig = inspect.signature(fn)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"@pl.jit function '{fn.__name__}': {e}") from None
    bound.apply_defaults()
    values = list(bound.arguments.values())
    types: list[Type | None] = []
    for name, v in bound.arguments.items():
        if isinstance(v, torch.Tensor):
            if any(int(d) <= 0 for d in v.shape) or v.dim() == 0:
                node, src = function_source(fn)
                arg = next((a for a in node.args.args if a.arg == name), None)
                what = "is 0-dimensional" if v.dim() == 0 else f"has a zero-size dimension (shape {list(v.shape)})"
                raise ParserTypeError(
                    f"argument '{name}' of @pl.jit function '{fn.__name__}' {what}: tensors and tiles have "
                    "at least one element along every axis (there is no empty tile on the device)",
                    src.span(arg) if arg is not None else None,
                    "skip the call for empty inputs, or pass a tensor of at least one element per axis")
            if v.dtype == torch.float4_e2m1fn_x2:
                # packed FP4, as the reference takes it: two codes per byte, the IR counts codes
                types.append(TensorType((*(int(d) for d in v.shape[:-1]), 2 * int(v.shape[-1])), FP4))
                continue
            try:
                dtype = dtype_from_torch(v.dtype)
            except TypeError:
                # (a float64 tensor raised a bare TypeError from deep inside, naming no parameter)
                node, src = function_source(fn)
                arg = next((a for a in node.args.args if a.arg == name), None)
                raise ParserTypeError(
                    f"argument '{name}' of @pl.jit function '{fn.__name__}' is a {v.dtype} tensor: the device "
                    "has no such dtype", src.span(arg) if arg is not None else None,
                    "convert it first, e.g. .float() for float64 (the dtypes are listed in docs/language.md)"
                ) from None
            types.append(TensorType(tuple(int(d) for d in v.shape), dtype))
        else:
            types.append(None)
    sp = _Specializer(jitfn)
    entry = sp.parse(jitfn, values, types, jitfn.func_type, None)
    funcs = tuple(sp.functions.values()) + (entry,)
    key = (tuple(sorted(sp.sources.items())),
           tuple(_arg_signature(v, sp.dyn_dims.get(i, ())) for i, v in enumerate(values)))
    return Specialization(Program(fn.__name__, funcs, entry.span), key, tuple(bound.arguments))


def _where(jitfn) -> str:
    code = getattr(jitfn.fn, "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code else repr(jitfn)


def _matches(ann: Type, given: Type) -> bool:
    """A tensor annotation matches the argument's type; a dynamic dim matches any extent."""
    if not (isinstance(ann, TensorType) and isinstance(given, TensorType)):
        return ann == given
    if ann.dtype != given.dtype or len(ann.shape) != len(given.shape):
        return False
    return all(isinstance(a, DynDim) or isinstance(g, DynDim) or a == g for a, g in zip(ann.shape, given.shape))


def signature_args(jitfn, kwargs: dict) -> tuple:
    """Sample arguments built from a fully annotated signature (``kernel.compile()`` with no args)."""
    fn = jitfn.fn
    node, src = function_source(fn, jitfn.source_snapshot)
    static = FunctionParser(src, Resolver(kernel_globals(fn)), "<static>", jitfn.func_type).resolve_static
    out = []
    for a in node.args.args:
        if a.arg in kwargs:
            out.append(kwargs[a.arg])
            continue
        if a.annotation is None:
            raise ParserTypeError(f"Parameter '{a.arg}' missing type annotation", src.span(a))
        t, _, is_scalar = parse_annotation(a.annotation, static, src, f"Parameter '{a.arg}'")
        if is_scalar:
            raise TypeError(f"@pl.jit function '{fn.__name__}': scalar parameter '{a.arg}' must be given by "
                            f"keyword in signature mode (e.g. compile({a.arg}=...)) or as pl.RUNTIME")
        if t is None:
            raise TypeError(f"@pl.jit function '{fn.__name__}' cannot specialize from the signature because "
                            f"parameter '{a.arg}' has a bare 'pl.Tensor' annotation with no shape")
        if any(isinstance(d, DynDim) for d in getattr(t, "shape", ())):
            raise TypeError(f"@pl.jit function '{fn.__name__}' cannot specialize from the signature because "
                            f"parameter '{a.arg}' has a dynamic dimension; pass sample tensors")
        out.append(torch.empty(t.shape, dtype=t.dtype.torch))
    return tuple(out)
