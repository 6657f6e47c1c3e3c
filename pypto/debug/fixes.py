"""Apply a suggested fix to a copy of the user's kernel, compile it and run it.

The doctor prints a fix only after trying it: the kernel's source is parsed (``ast``), the op at the
finding's source location is rewritten, the changed function is executed from a temporary file in a
copy of the kernel's globals (the user's file is never touched), and the copy is compiled and run on
the simulator under a few schedules. The verdict is one of

* ``verified``: the copy compiles and its result passes (the gap closes);
* ``not verified``: it compiles and runs but the gap stays (the fix is printed as a suggestion only);
* ``could not verify``: the edit does not apply (the op was not found in the source) or the copy
  does not compile (the error is quoted).

Edits are small rewrites of one call (:class:`CallEdit`: FP32 accumulation, fillpad before a
reduction, a cast's rounding mode) or of ``with pl.at(...)`` scopes (:class:`DepsEdit`: name the
producer's task, collect it in a TaskId array when it runs in a loop, and add ``deps=`` to the
consumer).
"""
from __future__ import annotations

import ast
from pypto import pyast  # ast.parse behind a lock (CPython 3.11 is not thread-safe there)
import inspect
import itertools
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import torch

_counter = itertools.count()
_DIR: list[Path] = []


@dataclass
class Verification:
    """The outcome of trying a fix."""

    status: str              # "verified", "not verified", "could not verify"
    detail: str              # what was run and what came out, in words
    changed: list[str] = field(default_factory=list)   # the rewritten source lines, as the fix prints them

    def line(self) -> str:
        """``verified: ...`` for the report."""
        return f"{self.status}: {self.detail}"

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return {"status": self.status, "detail": self.detail, "changed": list(self.changed)}


@dataclass
class CallEdit:
    """Rewrite the call of ``op`` (``pl.<op>(...)``) at source line ``line`` with ``rewrite(call, pl)``,
    where ``pl`` is the expression the user's code calls the language module by."""

    line: int
    op: str
    rewrite: Callable[[ast.Call, ast.expr], ast.expr]


@dataclass
class DepsEdit:
    """Order the task of the ``with`` scope at ``consumer_line`` after the one at ``producer_line``."""

    producer_line: int
    consumer_line: int
    name: str = "producer_tid"   # the TaskId variable to introduce


class EditError(Exception):
    """The edit does not apply to this source."""


# ------------------------------------------------------------------------------------- rewrites

def _attr(mod: ast.expr, *names: str) -> ast.expr:
    node = mod
    for n in names:
        node = ast.Attribute(value=node, attr=n, ctx=ast.Load())
    return node


def _call(func: ast.expr, *args, **kwargs) -> ast.Call:
    return ast.Call(func=func, args=list(args), keywords=[ast.keyword(arg=k, value=v) for k, v in kwargs.items()])


def fp32_accumulation(dtype: str, tile_shape: Optional[tuple], round_back: bool = True) -> Callable:
    """``pl.row_sum(x[, tmp])`` -> ``pl.cast(pl.row_sum(pl.cast(x, pl.FP32)[, FP32 tmp]), pl.<dtype>, mode="rint")``
    (without the outer cast when ``round_back`` is false: the sum stays FP32)."""
    def rewrite(call: ast.Call, pl: ast.expr) -> ast.expr:
        args = list(call.args)
        if not args:
            raise EditError("the reduction has no positional operand")
        args[0] = _call(_attr(pl, "cast"), args[0], _attr(pl, "FP32"))
        kws = [k for k in call.keywords if k.arg != "tmp_tile"]
        has_tmp = len(args) > 1 or any(k.arg == "tmp_tile" for k in call.keywords)
        if has_tmp:
            if tile_shape is None:
                raise EditError("the scratch tile's shape is unknown")
            tmp = _call(_attr(pl, "create_tile"), ast.List([ast.Constant(int(d)) for d in tile_shape], ast.Load()),
                        dtype=_attr(pl, "FP32"))
            args = [args[0], tmp] + args[2:]
        inner = ast.Call(func=call.func, args=args, keywords=kws)
        # round once, to nearest even: what the experiment (torch's .to()) measured
        return _call(_attr(pl, "cast"), inner, _attr(pl, dtype), mode=ast.Constant("rint")) if round_back else inner
    return rewrite


def fill_padding(pad: str) -> Callable:
    """``pl.row_sum(x, ...)`` -> ``pl.row_sum(pl.fillpad(x, pl.PadValue.<pad>), ...)``."""
    def rewrite(call: ast.Call, pl: ast.expr) -> ast.expr:
        if not call.args:
            raise EditError("the reduction has no positional operand")
        args = list(call.args)
        args[0] = _call(_attr(pl, "fillpad"), args[0], _attr(pl, "PadValue", pad))
        return ast.Call(func=call.func, args=args, keywords=list(call.keywords))
    return rewrite


def cast_mode(mode: str) -> Callable:
    """``pl.cast(x, dt[, mode])`` -> ``pl.cast(x, dt, mode=<mode>)``."""
    def rewrite(call: ast.Call, pl: ast.expr) -> ast.expr:
        args = list(call.args[:2])
        kws = [k for k in call.keywords if k.arg != "mode"] + [ast.keyword(arg="mode", value=ast.Constant(mode))]
        return ast.Call(func=call.func, args=args, keywords=kws)
    return rewrite


# ------------------------------------------------------------------------------ finding the code

def _functions(kernel) -> list:
    """The kernel and every ``@pl.jit`` function its globals reach, as (jitfn, python function)."""
    from pypto.frontend.specialize import kernel_globals
    from pypto.language.jit import JITFunction

    out = [(kernel, kernel.fn)]
    for v in kernel_globals(kernel.fn).values():
        if isinstance(v, JITFunction) and v is not kernel:
            out.append((v, v.fn))
    return out


def _owner(kernel, line: int, file: str):
    """The function whose source holds ``file:line``, with its AST and first line."""
    for jit, fn in _functions(kernel):
        try:
            src_file = inspect.getsourcefile(fn)
            lines, start = inspect.getsourcelines(fn)
        except (OSError, TypeError):
            continue
        if src_file and Path(src_file).resolve() == Path(file).resolve() and start <= line < start + len(lines):
            text = textwrap.dedent("".join(lines))
            return jit, fn, pyast.parse(text).body[0], start
    raise EditError(f"no kernel function of this program holds {Path(file).name}:{line}")


class _CallRewriter(ast.NodeTransformer):
    def __init__(self, line: int, op: str, rewrite, pl_name_hint: str = "pl"):
        self.line, self.op, self.rewrite = line, op, rewrite
        self.done: Optional[ast.AST] = None

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
        if self.done is None and name == self.op and node.lineno <= self.line <= (node.end_lineno or node.lineno):
            pl = f.value if isinstance(f, ast.Attribute) else ast.Name("pl", ast.Load())
            self.done = self.rewrite(node, pl)
            return self.done
        return node


def _stmt_lines(fn_node: ast.FunctionDef, targets: list[ast.AST]) -> list[str]:
    """The statements holding ``targets`` after the rewrite, unparsed (what the fix prints)."""
    out = []
    for stmt in ast.walk(fn_node):
        if not isinstance(stmt, ast.stmt) or isinstance(stmt, (ast.FunctionDef, ast.With, ast.For, ast.If)):
            continue
        if any(t is n for t in targets for n in ast.walk(stmt)):
            out.append(ast.unparse(stmt))
    return out


def _loop_of(fn_node: ast.FunctionDef, target: ast.AST):
    """The innermost ``for`` around ``target`` (and the statement list holding it), or None."""
    best = None

    def walk(body, loop):
        nonlocal best
        for st in body:
            if st is target:
                best = loop
                return True
            for field_name in ("body", "orelse"):
                sub = getattr(st, field_name, None)
                if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt):
                    if walk(sub, (st, body) if isinstance(st, ast.For) else loop):
                        return True
        return False
    walk(fn_node.body, None)
    return best


def _with_at(fn_node: ast.FunctionDef, line: int) -> ast.With:
    for node in ast.walk(fn_node):
        if isinstance(node, ast.With) and node.lineno == line:
            return node
    for node in ast.walk(fn_node):   # a span inside the scope: the innermost with around it
        if isinstance(node, ast.With) and node.lineno <= line <= (node.end_lineno or node.lineno):
            return node
    raise EditError(f"no `with pl.at(...)` scope at line {line}")


def _apply_deps(fn_node: ast.FunctionDef, start: int, e: DepsEdit) -> list[str]:
    prod = _with_at(fn_node, e.producer_line - start + 1)
    cons = _with_at(fn_node, e.consumer_line - start + 1)
    item = prod.items[0]
    if not isinstance(item.context_expr, ast.Call):
        raise EditError("the producer's scope is not a pl.at(...) call")
    pl = item.context_expr.func.value if isinstance(item.context_expr.func, ast.Attribute) else ast.Name("pl", ast.Load())
    if item.optional_vars is None:
        item.optional_vars = ast.Name(e.name, ast.Store())
    elif not isinstance(item.optional_vars, ast.Name):
        raise EditError("the producer's scope binds something other than one name")
    tid = item.optional_vars.id
    loop = _loop_of(fn_node, prod)
    changed = []
    dep: ast.expr = ast.Name(tid, ast.Load())
    if loop is not None:
        for_stmt, holder = loop
        it = for_stmt.iter
        if not (isinstance(it, ast.Call) and isinstance(for_stmt.target, ast.Name) and len(it.args) == 1):
            raise EditError("the producer runs in a loop whose trip count is not a single pl.range/pl.parallel "
                            "argument")
        arr = f"{tid}s"
        create = ast.Assign(targets=[ast.Name(arr, ast.Store())],
                            value=_call(_attr(pl, "array", "create"), it.args[0], _attr(pl, "TASK_ID")), lineno=0)
        holder.insert(holder.index(for_stmt), create)
        body = for_stmt.body
        # the with may sit deeper in the loop body: record the id right after it, where it is
        parent = next((b for b in ast.walk(for_stmt) if isinstance(getattr(b, "body", None), list) and prod in b.body),
                      for_stmt)
        store = ast.Assign(targets=[ast.Subscript(ast.Name(arr, ast.Load()), ast.Name(for_stmt.target.id, ast.Load()),
                                                  ast.Store())], value=ast.Name(tid, ast.Load()), lineno=0)
        parent.body.insert(parent.body.index(prod) + 1, store)
        del body
        dep = ast.Name(arr, ast.Load())
        at = start - 1
        changed += [f"before the loop at line {for_stmt.lineno + at}: {ast.unparse(create)}",
                    f"line {prod.lineno + at}: with {ast.unparse(item)}:",
                    f"right after that scope, in the loop: {ast.unparse(store)}"]
    else:
        changed.append(f"line {prod.lineno + start - 1}: with {ast.unparse(item)}:")
    call = cons.items[0].context_expr
    if not isinstance(call, ast.Call):
        raise EditError("the consumer's scope is not a pl.at(...) call")
    kw = next((k for k in call.keywords if k.arg == "deps"), None)
    if kw is None:
        call.keywords.append(ast.keyword(arg="deps", value=ast.List([dep], ast.Load())))
    elif isinstance(kw.value, ast.List):
        kw.value.elts.append(dep)
    else:
        raise EditError("the consumer's deps= is not a list literal")
    changed.append(f"line {cons.lineno + start - 1}: with {ast.unparse(cons.items[0])}:")
    return changed


def apply(kernel, file: str, edits: list) -> tuple:
    """A copy of ``kernel`` with ``edits`` applied (all in ``file``); returns ``(new kernel, changed
    source lines)``. Raises :class:`EditError` when an edit does not apply."""
    from pypto.frontend.specialize import kernel_globals

    by_fn: dict = {}
    for e in edits:
        line = e.line if isinstance(e, CallEdit) else e.producer_line
        jit, fn, node, start = _owner(kernel, line, file)
        by_fn.setdefault(id(fn), [jit, fn, node, start, []])[4].append(e)
    g = kernel_globals(kernel.fn)
    changed: list[str] = []
    for jit, fn, node, start, es in by_fn.values():
        for e in es:
            if isinstance(e, CallEdit):
                rw = _CallRewriter(e.line - start + 1, e.op, e.rewrite)
                rw.visit(node)
                if rw.done is None:
                    raise EditError(f"no call of {e.op} at line {e.line}")
                ast.fix_missing_locations(node)
                changed += _stmt_lines(node, [rw.done])
            else:
                changed += _apply_deps(node, start, e)
                ast.fix_missing_locations(node)
        _exec(node, fn, g)
    if id(kernel.fn) not in by_fn:   # the entry calls patched helpers: re-bind it to the new globals
        _, _, node, _ = _owner(kernel, inspect.getsourcelines(kernel.fn)[1], inspect.getsourcefile(kernel.fn))
        _exec(node, kernel.fn, g)
    return g[kernel.fn.__name__], changed


def _exec(node: ast.FunctionDef, fn, g: dict) -> None:
    if not _DIR:
        import atexit
        import shutil

        _DIR.append(Path(tempfile.mkdtemp(prefix="pypto-doctor-fix-")))
        # the copies are only read while they compile; remove them when the process ends
        atexit.register(shutil.rmtree, _DIR[0], True)
    path = _DIR[0] / f"{fn.__name__}_fix{next(_counter)}.py"
    path.write_text(ast.unparse(node) + "\n", encoding="utf-8")
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), g)


# ---------------------------------------------------------------------------------- running it

def verify(kernel, file: str, edits: list, bound: dict, expected: dict, rtol: float, atol: float,
           platform: str, seeds=(0, 1, 2), passes=None, check_races: bool = False) -> Verification:
    """Apply ``edits`` to a copy of ``kernel``, compile it and run it under ``seeds``; the gap closes
    when every run passes at ``rtol``/``atol`` (and, with ``check_races``, the race detector finds no
    race left)."""
    from pypto.errors import PyptoError
    from pypto.runtime.config import RunConfig
    from pypto.debug.tolerance import passes as within

    try:
        fixed, changed = apply(kernel, file, edits)
    except EditError as e:
        return Verification("could not verify", f"the change does not apply to the source ({e})")
    except (OSError, SyntaxError) as e:
        return Verification("could not verify", f"the kernel's source cannot be rewritten ({e})")
    names = list(bound)
    try:
        compiled = fixed.compile(*bound.values(), config=RunConfig(platform=platform, passes=passes))
    except PyptoError as e:
        first = str(e).splitlines()[0]
        return Verification("could not verify", f"the changed kernel does not compile: {first}", changed)
    worst = None
    for s in seeds:
        args = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in bound.items()}
        try:
            compiled(*[args[n] for n in compiled.param_names], config=RunConfig(platform=platform, sim_seed=s,
                                                                                  passes=passes))
        except PyptoError as e:
            return Verification("could not verify", f"the changed kernel fails to run: {str(e).splitlines()[0]}",
                                changed)
        if not within(args, expected, rtol, atol):
            worst = s
            break
    del names
    if worst is not None:
        return Verification("not verified", f"the changed kernel compiles and runs, but schedule {worst} still "
                                            f"misses the golden at rtol={rtol:.3g}, atol={atol:.3g}", changed)
    if check_races:
        from pypto.debug.races import detect_races

        left = detect_races(compiled, [bound[n] for n in compiled.param_names], platform=platform).races
        if left:
            return Verification("not verified", f"the changed kernel passes, but a race remains: {left[0].kind} "
                                                f"between {left[0].first_kernel} and {left[0].second_kernel}", changed)
    what = f"{len(seeds)} schedule(s)" + (", and the race detector finds no race" if check_races else "")
    return Verification("verified", f"a copy with this change compiles, and the gap closes (rtol={rtol:.3g}, "
                                    f"atol={atol:.3g}, {what})", changed)


def deps_fix_lines(file: str, producer_line: int, consumer_line: int, name: str) -> list[str]:
    """The source lines :class:`DepsEdit` would write (for the race detector's fix text): the TaskId
    array form when the producer runs in a loop. Raises :class:`EditError` when it does not apply."""
    try:
        tree = pyast.parse(Path(file).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError) as e:
        raise EditError(f"cannot read {file}: {e}") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.lineno <= producer_line <= (node.end_lineno or node.lineno) \
                and node.lineno <= consumer_line <= (node.end_lineno or node.lineno):
            return _apply_deps(node, 1, DepsEdit(producer_line, consumer_line, name))
    raise EditError(f"no function of {file} holds lines {producer_line} and {consumer_line}")
