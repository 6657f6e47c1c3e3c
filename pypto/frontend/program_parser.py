"""The printed form: an ``@pl.program`` class of ``@pl.function`` methods -> :class:`Program`."""
from __future__ import annotations

import ast
import dataclasses
import enum

from pypto.errors import ParserError, ParserSyntaxError, ParserTypeError, Span
from pypto.frontend.parser import (
    Callee,
    FunctionParser,
    ParamSpec,
    Resolver,
    SourceInfo,
    parse_annotation,
)
from pypto.ir.nodes import Program
from pypto.ir.types import TupleType
from pypto.language.enums import FunctionType, Level, SplitMode
from pypto.frontend.specialize import _Specializer
from pypto.frontend.host_inline import outline as outline_chip_blocks
from pypto.frontend.host_methods import HostMethod, register as register_host_methods


def _host_role(m: ast.FunctionDef, static):
    """``(True, role name)`` for a ``@pl.function(level=pl.Level.HOST, ...)`` method, else ``(False, None)``."""
    for d in m.decorator_list:
        if not isinstance(d, ast.Call):
            continue
        kw = {k.arg: k.value for k in d.keywords}
        if "level" in kw and static(kw["level"]) == Level.HOST:
            role = static(kw["role"]) if "role" in kw else None
            return True, getattr(role, "name", None)
    return False, None


def parse_program_class(cls: ast.ClassDef, src: SourceInfo, globals_: dict, pyfuncs: dict | None = None) -> Program:
    """Parse an ``@pl.program`` class. Headers first, so calls may go to any function. HOST-level
    methods (multi-rank host orchestrators and sub-workers, issue 17) are kept as source, not parsed
    (``pyfuncs``: the class's attributes, for the sub-workers' Python functions)."""
    methods = [n for n in cls.body if isinstance(n, ast.FunctionDef)]
    stray = [n for n in cls.body if not isinstance(n, (ast.FunctionDef, ast.Pass))
             and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    if stray:
        raise ParserSyntaxError("an @pl.program class may only contain @pl.function methods", src.span(stray[0]))
    static = _static_resolver(globals_, src)
    hosts = []
    inline: list = []   # chip programs written inline in a HOST method (pypto.frontend.host_inline)
    for m in list(methods):
        is_host, role = _host_role(m, static)
        if is_host:
            args = [a.arg for a in m.args.args]
            own = args[1:] if args[:1] == ["self"] else args
            anns = [a.annotation for a in m.args.args][len(args) - len(own):]
            methods.remove(m)
            if role == "Orchestrator":
                m, outlined = outline_chip_blocks(m, tuple(own), tuple(anns), static, src)
                inline.extend(outlined)
            hosts.append(HostMethod(m.name, m, src, globals_, tuple(own), tuple(anns), role,
                                    (pyfuncs or {}).get(m.name)))
    headers: dict[str, tuple] = {}
    for m in methods:
        headers[m.name] = _header(m, src, static)
    for fdef, ret_ann in inline:
        params, _, _, _, _ = _header(fdef, src, static)
        ret: tuple = ()
        if ret_ann is not None:
            t, _, _ = parse_annotation(ret_ann, static, src, f"Return type of '{fdef.name}'")
            ret = t.types if isinstance(t, TupleType) else (t,)
        if fdef.name in headers:
            raise ParserError(f"the inline chip program '{fdef.name}' has the name of a method of the program",
                              src.span(fdef))
        headers[fdef.name] = (params, ret, FunctionType.Orchestration, None, ())
        methods.append(fdef)

    def self_function(name: str, span: Span) -> Callee:
        if name not in headers:
            raise ParserError(f"program has no function '{name}'", span)
        params, ret = headers[name][:2]
        return Callee(name, tuple(p.type for p in params), ret)

    # calls of @pl.inline / @pl.jit.inline / @pl.jit.incore functions: parsed for the call's
    # argument types and added to the program (as a @pl.jit entry's dependencies are)
    deps = _Specializer(None)
    resolver = Resolver(globals_, call_function=deps.call_function, self_function=self_function)
    funcs = []
    for m in methods:
        params, ret, ftype, level, attrs = headers[m.name]
        fp = FunctionParser(src, resolver, m.name, ftype, level)
        funcs.append(_with_attrs(fp.parse(m, params, ret), attrs))
    clash = set(deps.functions) & set(headers)
    if clash:
        raise ParserError(f"a function called from the program has the name of one of its methods: "
                          f"{', '.join(sorted(clash))}", src.span(cls))
    program = Program(cls.name, tuple(deps.functions.values()) + tuple(funcs), src.span(cls))
    register_host_methods(program, hosts)
    return program


def _static_resolver(globals_: dict, src: SourceInfo):
    fp = FunctionParser(src, Resolver(globals_), "<static>", FunctionType.Opaque)
    return fp.resolve_static


def parse_function_def(m: ast.FunctionDef, src: SourceInfo, globals_: dict):
    """A standalone ``@pl.function`` (no ``self``): one IR Function. Calls of other functions are
    not resolved here (put the functions in an ``@pl.program`` class for that)."""
    static = _static_resolver(globals_, src)
    method = bool(m.args.args) and m.args.args[0].arg == "self"  # the printed form of a Function has self
    params, ret, ftype, level, attrs = _header(m, src, static, method=method)
    fp = FunctionParser(src, Resolver(globals_), m.name, ftype, level)
    return _with_attrs(fp.parse(m, params, ret), attrs)


def _with_attrs(fn, attrs: tuple):
    return dataclasses.replace(fn, attrs=attrs) if attrs else fn


def _function_attrs(node: ast.expr, src: SourceInfo, static) -> tuple:
    """``attrs={"key": value, ...}`` of ``@pl.function``: a dict literal with string keys and static
    values (literals, DSL enum members such as ``pl.SplitMode.UP_DOWN``). ``None`` means no attrs;
    ``SplitMode.NONE`` is dropped (it means no split, as the reference stores it)."""
    if isinstance(node, ast.Constant) and node.value is None:
        return ()
    if not isinstance(node, ast.Dict):
        raise ParserSyntaxError("@pl.function(attrs=...) must be a dict literal", src.span(node),
                                'write attrs={"dual_aiv_dispatch": True}')
    out = []
    for k, v in zip(node.keys, node.values):
        if k is None or not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
            raise ParserSyntaxError("@pl.function(attrs={...}) keys must be string literals",
                                    src.span(k if k is not None else v), 'write attrs={"split": pl.SplitMode.UP_DOWN}')
        val = static(v)
        if isinstance(val, SplitMode) and val == SplitMode.NONE:
            continue
        if not isinstance(val, (bool, int, float, str, enum.Enum)):
            raise ParserTypeError(f"@pl.function attr '{k.value}': a function attr must be a static literal or "
                                  f"a DSL enum member, got {type(val).__name__}", src.span(v),
                                  "use a Python literal (True, 8, 'x') or e.g. pl.SplitMode.UP_DOWN")
        if k.value in (key for key, _ in out):
            raise ParserSyntaxError(f"@pl.function attr '{k.value}' given twice", src.span(k))
        out.append((k.value, val))
    return tuple(out)


def _header(m: ast.FunctionDef, src: SourceInfo, static, method: bool = True) -> tuple:
    ftype, level, attrs = FunctionType.Opaque, None, ()
    for d in m.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        from pypto.language.program import function as function_deco

        if static(target) is not function_deco:
            raise ParserSyntaxError("methods of an @pl.program class must be decorated with @pl.function",
                                    src.span(d))
        if isinstance(d, ast.Call):
            for k in d.keywords:
                if k.arg == "attrs":
                    attrs = _function_attrs(k.value, src, static)
                    continue
                v = static(k.value)
                if k.arg == "type" and isinstance(v, FunctionType):
                    ftype = v
                elif k.arg == "level" and isinstance(v, Level):
                    level = v
                elif k.arg in ("strict_ssa", "auto_scope"):
                    continue
                elif k.arg == "role" and (v is None or type(v).__name__ == "Role"):
                    continue  # the function's role in the distributed hierarchy: no effect on one chip
                else:
                    raise ParserTypeError(f"@pl.function: unexpected argument {k.arg}={v!r}", src.span(k))
    args = m.args
    if method and (not args.args or args.args[0].arg != "self"):
        raise ParserSyntaxError(f"function '{m.name}' must take 'self' first", src.span(m))
    params = []
    for a in args.args[1 if method else 0:]:
        if a.annotation is None:
            raise ParserTypeError(f"Parameter '{a.arg}' missing type annotation", src.span(a),
                                  "x: pl.Tensor[[64], pl.FP32]")
        t, d, _ = parse_annotation(a.annotation, static, src, f"Parameter '{a.arg}'")
        if t is None:
            raise ParserTypeError(f"Parameter '{a.arg}': a bare pl.Tensor needs [[shape], dtype] here", src.span(a))
        params.append(ParamSpec(a.arg, t, d, span=src.span(a)))
    ret: tuple = ()
    if m.returns is not None:
        t, _, _ = parse_annotation(m.returns, static, src, f"Return type of '{m.name}'")
        ret = t.types if isinstance(t, TupleType) else (t,)
    return params, ret, ftype, level, attrs


