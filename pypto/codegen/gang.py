"""The lockstep form of a kernel: several tasks of it at once, one torch call per instruction.

Tasks of one kernel run the same instruction stream on their cores. When the stream cannot depend
on the task — loops and ``if`` only on values that are the same for every task, and no tile
instruction reading a per-task scalar (the offsets and valid extents of global-memory accesses may)
— the simulator may run a *gang* of such tasks on adjacent cores in lockstep: every tile view gains
a leading axis over those cores (``[n, *shape]``:
the same bytes of each core's memory, see :mod:`pypto.runtime.cores`), every vector instruction is
the same torch call on those views, and the global-memory accesses of the gang are one strided copy
per run of evenly spaced regions (``_pto.gang_load_into`` / ``_pto.gang_store``). One call over
``n`` tiles costs a fraction of ``n`` calls (dispatch is paid once, and torch spreads a large call
over the host's threads).

Bits do not change: only ops with a ``Lockstep`` trait are allowed: elementwise, broadcast and
reduction ops (``"rows"``) loop over each tile's trailing dimensions exactly as for one tile (the
runtime picks gang sizes that keep torch's thread split on tile boundaries,
:func:`pypto.runtime.gangs.gang_size`); data movement (``"copy"``) is exact however it is split;
matmul (``"gang"``) makes each task's own BLAS call. tests/runtime/test_lockstep_bits.py runs every
such op both ways (special values, odd shapes, one and two threads) and compares bits.

The generated module then also defines (next to ``TILES`` and ``kernel``):

* ``GANG_PLAN(params...)``: for one task, ``(site, arguments)`` of each global-memory access in
  the order the task makes them (load: ``(tensor, offsets, valid)``; store: ``(offsets, tensor,
  valid)``; ``site`` indexes ``GANG_GM``);
* ``GANG_PLANS(E)``, for a plan without loops or block index: ``[GANG_PLAN(*args) for args in E]``
  in one call (the scheduler builds a gang's plans with it); constant offsets / valid lists of the
  entries are module-level lists (``_GANG_K0 = [0, 0]``) shared by every plan, read-only;
* ``GANG_PLAN_PURE``: whether ``GANG_PLAN`` cannot raise (:func:`plan_is_pure`); the scheduler
  then builds a gang's plans only when something reads them;
* ``GANG_NUMEL``: elements of the largest tile an op of kind ``"rows"`` touches (the runtime sizes
  gangs by it, :func:`pypto.runtime.gangs.gang_size`);
* ``GANG_GM``: per global-memory access site ``("r" | "w", tile shape)``; with a plan, the task's
  global-memory footprint. The scheduler gangs only tasks whose footprints do not conflict (no task
  writes what another reads or writes), so lockstep is indistinguishable from any interleaving of them;
* ``kernel_gang(v, P)``: the gang kernel (``v`` the gang views, ``P`` the members' plans); it yields
  the same cycles at the same points as ``kernel``. An AIC / AIV member function of a mixed-kernel
  group takes ``_cc`` too: its gang of clusters (:class:`pypto.runtime.cross_core.GroupGang` composes
  a Group's lockstep form from its members').

The statements of both functions come from the kernel's own walker in gang mode
(:class:`pypto.codegen.kernel.KernelGen` with ``mode="gang"``): the plan keeps the scalar work and
records the arguments of each global-memory access, the gang kernel keeps the tile work and the
yields. Loops whose bounds do not depend on the task (constants, or the variables of enclosing such
loops: *uniform* values) appear in both, so every member makes the same accesses in the same order;
the gang kernel takes the ``c``-th access's arguments from every member's ``c``-th plan entry.

``GANG = True`` when those exist; otherwise ``GANG = False`` and ``GANG_WHY`` says why (e.g. which
op has no lockstep form), so a user wondering why a kernel is slow can read it in the kernel module.
"""
from __future__ import annotations

import ast
import re

from pypto.ir.types import ScalarType, TensorType

# a line that makes its function a generator: a statement starting with ``yield`` or a
# parenthesised / assigned ``(yield from ...)`` (the distributed ops' form)
_YIELDS = re.compile(r"^\s*(?:[\w, ]+=\s*)?\(?yield\b")


def as_generator(body: list[str]) -> list[str]:
    """``body`` (a generated function's lines at depth 1), made a generator if no line yields: the
    scheduler drives every kernel as one, even one that spends no simulated time."""
    if any(_YIELDS.match(line) for line in body):
        return body
    return body + ["    yield from ()"]


class NoGang(Exception):
    """The kernel has no lockstep form; the message says why."""


def static_dims(dims) -> bool:
    """Whether a shape (or valid shape; None: none) has only static extents."""
    return dims is None or all(type(d) is int for d in dims)


def _plan_body(plan: list[str]) -> list[str]:
    """The body of ``GANG_PLAN`` from the plan's lines (``E.append(entry)`` per access, with the
    scalar statements between them). A straight-line plan (every line at depth 1: no loop or branch,
    the common case) binds each entry to a local where it was appended and returns them as one list
    literal: the scheduler calls GANG_PLAN once per member of every gang (~1,200 calls of a Qwen3
    layer), and a local store is a fraction of a method call. The entries are evaluated at the same
    points, so the result is the same list."""
    out = []
    n = 0
    straight = all(line.startswith("    ") and not line[4:5].isspace() for line in plan) and \
        not any(re.search(r"\b_E\d", line) for line in plan)
    for line in plan if straight else ():
        try:
            call = ast.parse(line[4:]).body
        except SyntaxError:   # (not one statement per line: keep the general form)
            straight = False
            break
        call = call[0] if len(call) == 1 else None
        if (isinstance(call, ast.Expr) and isinstance(call.value, ast.Call) and len(call.value.args) == 1
                and not call.value.keywords and ast.unparse(call.value.func) == "E.append"):
            entry = ast.get_source_segment(line[4:], call.value.args[0])
            out.append(f"    _E{n} = {entry}{line[4 + call.end_col_offset:]}")
            n += 1
        elif re.search(r"\bE\b", line.split("#")[0]):   # E used otherwise: keep the general form
            straight = False
            break
        else:
            out.append(line)
    if not straight:
        return ["    E = []", *plan, "    return E"]
    return out + [f"    return [{', '.join(f'_E{i}' for i in range(n))}]"]


def _const_ints(node) -> bool:
    """A list display of int literals (``[0, 0]``, ``[4, -1]``)."""
    if not isinstance(node, ast.List):
        return False
    for e in node.elts:
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
            e = e.operand
        if not (isinstance(e, ast.Constant) and e.value.__class__ is int):
            return False
    return True


def hoist_plan_constants(plan: list[str]) -> tuple[list[str], list[str]]:
    """``plan`` (GANG_PLAN's lines) with each constant offsets / valid list of an access entry
    (``E.append((site, (t, [0, 0], None)))``: a list display of int literals as an element of the
    entry's argument tuple) replaced by a module-level name, and the lines defining those names.

    The scheduler builds one plan per gang member (~1,200 a Qwen3-layer call) and frees them when
    the gang ends: a list per entry was a third of the objects made and freed. The shared lists only
    ever sit in plans, which every reader treats as read-only (the gang kernel, the footprint
    check, the single-access fallbacks: nothing stores into an entry's offsets or valid shape)."""
    text = "\n".join(plan)
    consts: dict[str, str] = {}   # list text -> name
    out = []
    for line in plan:
        body = line.lstrip()
        try:
            tree = ast.parse(body).body
        except SyntaxError:
            out.append(line)
            continue
        call = tree[0].value if len(tree) == 1 and isinstance(tree[0], ast.Expr) else None
        if not (isinstance(call, ast.Call) and len(call.args) == 1 and not call.keywords
                and ast.unparse(call.func) == "E.append" and isinstance(call.args[0], ast.Tuple)
                and len(call.args[0].elts) == 2 and isinstance(call.args[0].elts[1], ast.Tuple)):
            out.append(line)
            continue
        spans = []
        for e in call.args[0].elts[1].elts:
            if _const_ints(e) and e.lineno == e.end_lineno == 1:
                src = ast.get_source_segment(body, e)
                name = consts.get(src)
                if name is None:
                    n = len(consts)
                    while re.search(rf"\b_GANG_K{n}\b", text):   # (a name the plan uses itself)
                        n += 1000
                    name = consts[src] = f"_GANG_K{n}"
                spans.append((e.col_offset, e.end_col_offset, name))
        for lo, hi, name in reversed(spans):
            body = body[:lo] + name + body[hi:]
        out.append(line[:len(line) - len(line.lstrip())] + body)
    return out, [f"{name} = {src}  # a constant offsets / valid list of GANG_PLAN entries (read-only)"
                 for src, name in consts.items()]


_ENTRY = re.compile(r"^    (_E\d+) = (.*)$")
_ALIAS = re.compile(r"^    (\w+) = (\w+)$")


def _plans_function(body: list[str], params: list[str]) -> list[str]:
    """``GANG_PLANS(E)``: ``[GANG_PLAN(*args) for args in E]`` for the members of a gang (their
    argument lists; no ``_block``), in one call, for a straight-line plan (:func:`_plan_body`); ``[]``
    (no such function: the scheduler calls GANG_PLAN per member) otherwise. When the plan's other
    lines are dead copies (``s_out_1 = s_out``: a store's result renamed, never read by the plan) it
    is one comprehension over the members; else a loop running the plan's lines per member.

    The scheduler builds a plan per gang member (~1,200 a Qwen3-layer call): one call instead of one
    per member saves the calls, and the entries are the same objects in the same order."""
    if not body or not body[-1].startswith("    return [") or not params:
        return []
    if any(re.search(r"\b_block\b", line) for line in body):   # (a block's plan: per run)
        return []
    ret = body[-1][len("    return "):]
    entries, other = {}, []
    for line in body[:-1]:
        code = line.split("  #")[0].rstrip()
        m = _ENTRY.match(code)
        if m:
            try:
                ast.parse(m.group(2), mode="eval")
            except SyntaxError:   # (not the whole entry: keep GANG_PLAN per member)
                return []
            entries[m.group(1)] = m.group(2)
        else:
            other.append(code)
    unpack = ", ".join(params) + ("," if len(params) == 1 else "")
    head = ["def GANG_PLANS(E):",
            "    \"\"\"[GANG_PLAN(*args) for args in E]: the plans of a gang's members (not blocks).\"\"\""]
    text = "\n".join(entries.values())
    dead = all((m := _ALIAS.match(c)) and not re.search(rf"\b{m.group(1)}\b", text) for c in other)
    if dead and not any(re.search(rf"\b{name}\b", text) for name in entries):
        items = [entries[name] for name in re.findall(r"_E\d+", ret)]
        return head + [f"    return [[{', '.join(items)}] for {unpack} in E]"]
    return head + ["    P = []", f"    for {unpack} in E:",
                   *["    " + line for line in body[:-1]], f"        P.append({ret})", "    return P"]


_PURE_OPS = (ast.Add, ast.Sub, ast.Mult)


def _pure_expr(node) -> bool:
    """An expression that cannot raise once its names are bound: names, literals, tuple / list
    displays, and ``+ - *`` of those (the plan's offsets of int parameters and loop variables;
    no division, subscript, call or attribute, any of which may raise)."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(map(_pure_expr, node.elts))
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, _PURE_OPS) and _pure_expr(node.left) and _pure_expr(node.right)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, (ast.USub, ast.UAdd)) and _pure_expr(node.operand)
    return False


def _pure_stmt(node) -> bool:
    """A plan statement that cannot raise (see :func:`plan_is_pure`)."""
    if isinstance(node, ast.Assign):
        return len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and _pure_expr(node.value)
    if isinstance(node, ast.Expr):   # E.append(entry)
        call = node.value
        return (isinstance(call, ast.Call) and ast.unparse(call.func) == "E.append" and len(call.args) == 1
                and not call.keywords and _pure_expr(call.args[0]))
    if isinstance(node, ast.Return):
        return node.value is not None and _pure_expr(node.value)
    if isinstance(node, ast.For):   # for v in range(<int literals>, step != 0)
        it = node.iter
        ok = (isinstance(node.target, ast.Name) and not node.orelse and isinstance(it, ast.Call)
              and isinstance(it.func, ast.Name) and it.func.id == "range" and not it.keywords
              and 1 <= len(it.args) <= 3)
        if ok:
            vals = []
            for a in it.args:
                if isinstance(a, ast.UnaryOp) and isinstance(a.op, ast.USub):
                    a = a.operand
                if not (isinstance(a, ast.Constant) and a.value.__class__ is int):
                    return False
                vals.append(a.value)
            ok = len(vals) < 3 or vals[2] != 0
        return ok and all(map(_pure_stmt, node.body))
    return False


def plan_is_pure(body: list[str]) -> bool:
    """Whether ``GANG_PLAN``'s ``body`` (its lines at depth 1) cannot raise when called with its
    parameters: only bindings, ``E.append`` of entries and ``range`` loops of int literals, whose
    expressions are names, literals, displays and ``+ - *`` (:func:`_pure_expr`). Ints and floats
    (the scalar parameters) never raise on those. The scheduler may then build a gang's plans when
    first read, or not at all (:class:`pypto.ops.support.gang_access.LazyGangPlans`): no error
    moves. Any other form (a division, a subscript such as ``_block[0]``, a call, an ``if``) is
    not pure."""
    try:
        tree = ast.parse("\n".join(line[4:] if line.startswith("    ") else line for line in body))
    except SyntaxError:
        return False
    return all(map(_pure_stmt, tree.body))


def generate_gang(kgen) -> tuple[str, dict]:
    """Module source that follows the kernel's own (``kgen``, the task-mode generator that has
    generated it): the lockstep form, or ``GANG = False`` with the reason; and the SPANS entries of
    that text (0-based line within it -> Span)."""
    try:
        g = type(kgen)(kgen.f, kgen.platform, mode="gang", share=kgen)
        for i, p in enumerate(kgen.f.params):
            if not isinstance(p.type, (ScalarType, TensorType)):
                raise NoGang(f"parameter '{p.name}' is a {type(p.type).__name__}")
            # float and bool parameters (a scale, an is-first flag: usually the same for the tasks
            # ready together) may be read by the gang kernel; integer ones are usually the task's
            # index, for which a shared-value gang would almost never form, so they keep refusing
            if isinstance(p.type, ScalarType) and (p.type.dtype.is_float() or p.type.dtype.name == "BOOL"):
                g.params[id(p)] = i
        params = g.walk()
    except NoGang as e:
        return f"GANG = False\nGANG_WHY = {str(e)!r}\n", {}
    cc = ", _cc=None" if g.cross_core else ""
    plan, consts = hoist_plan_constants(g.plan)
    body = _plan_body(plan)
    plans_fn = _plans_function(body, params)
    plans_fn += ["", ""] if plans_fn else []
    head = [
        "GANG = True",
        f"GANG_NUMEL = {g.numel}  # elements of the largest tile a per-row op touches (gang sizing)",
        "GANG_GM = [  # per global-memory access site: read / write, tile shape",
        *[f"    ({k!r}, {shape!r})," for k, shape in g.gm], "]", *consts, "", "",
        f"def GANG_PLAN({''.join(p + ', ' for p in params)}_block=(0, 1)):",
        "    \"\"\"(access site, its arguments) of each global-memory access of one task, in order.\"\"\"",
        *body,
        "", "",
        *plans_fn,
        f"GANG_SAME = {tuple(sorted(g.same))!r}  # scalar parameters every member must share (bits)",
        f"GANG_PLAN_PURE = {plan_is_pure(body)!r}  # GANG_PLAN cannot raise: built when first read",
        "",
        "",
        # (_cc: a member of a mixed-kernel group talks to its gang of clusters, pypto.runtime.cross_core)
        *([f"def kernel_gang(v, P, {''.join(p + ', ' for p in params)}_block=(0, 1){cc}):"] if g.same
          else [f"def kernel_gang(v, P{cc}):"]),
        "    \"\"\"The kernel for a gang of tasks in lockstep (v: gang views, P: their GANG_PLANs).\"\"\"",
        *g.tile_bindings(),
        "    _c = 0",   # the index of the next global-memory access in each member's plan
    ]
    body = as_generator(g.lines)
    first = len(head)   # where g.lines starts (0-based line within this text)
    return "\n".join(head + body) + "\n", {first + i: sp for i, sp in g.spans}
