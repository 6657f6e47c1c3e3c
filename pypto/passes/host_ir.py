"""The IR of a HOST orchestrator (``@pl.jit.host`` body, a ``@pl.program``'s HOST method) and the
distributed pass pipeline that lowers it.

A host body is not parsed into :mod:`pypto.ir` nodes: it is interpreted on the host over concrete
values (:mod:`pypto.runtime.distributed.host`), so its IR is its **DSL syntax tree** (Python's
``ast``): every statement the interpreter accepts is a node, a pass rewrites the tree into another
tree of the same language, and the printed form of any stage is a host body the interpreter runs
(``parse_host(print_host(ir))`` re-parses it). Passes keep the source locations of the statements
they rewrite, so an error in generated code points at the user's line.

What the tree cannot hold travels beside it in :class:`HostIR`: the communication domains found by
``MaterializeCommDomainScopes`` (the reference's ``CommDomainScopeStmt``). As in the reference's
printer they print as one comment line ``# pld.comm_domain: devices=[..], slots=[..]`` at the top of
the body; a re-parse drops them (the pre-pass form) and running the pipeline again rebuilds them.

The pipeline, :data:`HOST_PIPELINE` (the reference's names and order, its ``Default`` strategy's
distributed tail):

1. SynthesizeAllReduceSignals   a host collective called without a signal gets an explicit INT32
                                ``[world_size, core_num]`` signal window allocated before it
2. MaterializeCommDomainScopes  every window buffer's device set (the ranks whose dispatches use it)
                                is derived from the ``device=`` expressions; buffers with equal sets
                                form one comm domain
3. LowerHostTensorCollectives   each ``pld.tensor.<collective>(...)`` becomes the per-rank dispatches
                                of its builtin program ``builtin.tensor.<kind>(..., device=r)`` over
                                its domain's devices
"""
from __future__ import annotations

import ast
import copy
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class CommDomain:
    """One communication domain: ``devices`` (ranks in group order; ``None``: every rank, the
    world) and the window buffers it holds (``slots``: the names their allocations are bound to)."""

    name: str
    devices: tuple | None
    slots: tuple

    def describe(self) -> str:
        devs = "all" if self.devices is None else "[" + ", ".join(map(str, self.devices)) + "]"
        return f"# pld.comm_domain: devices={devs}, slots=[{', '.join(self.slots)}]"


@dataclass(frozen=True)
class HostIR:
    """A host orchestrator at one stage of :data:`HOST_PIPELINE`: its function definition (never
    mutated in place: a pass returns a new tree) and the comm domains once materialised."""

    node: ast.FunctionDef
    domains: tuple | None = None   # CommDomain, once MaterializeCommDomainScopes ran

    def with_body(self, body: list) -> "HostIR":
        """This IR with another body (the function's header kept)."""
        fn = copy.copy(self.node)
        fn.body = body
        return replace(self, node=fn)

    def devices_of(self, slot: str):
        """The devices of the domain holding window buffer ``slot``: a tuple, ``None`` for the
        world, or ``False`` when no domain lists it (not materialised, or not a window)."""
        for d in self.domains or ():
            if slot in d.slots:
                return d.devices
        return False


@dataclass
class HostPassContext:
    """What the host passes know of the program: the rank count, the names the body resolves
    (globals, ``self``), the values bound before the body runs (the host arguments: a launch
    extent may be an argument's shape) and the ``pl.dynamic`` extents bound from them."""

    nranks: int
    scope: dict
    env: dict = field(default_factory=dict)
    dyn: dict = field(default_factory=dict)
    src: Any = None                    # SourceInfo of the body (spans of errors)
    # what a launch of a per-rank program is (the runtime's JITFunction / ProgramMethod test) and
    # the keyword an inline ``pl.at(level=CHIP)`` block's launch carries its block index in
    is_dispatch: Any = lambda obj: False   # noqa: E731
    inline_kw: str = "_pypto_inline_chip"
    dump_dir: Path | None = None       # passes_dump/ of a compile asked to dump
    timings: dict = field(default_factory=dict)


def print_host(ir: HostIR) -> str:
    """The DSL text of a host body (a ``def``, decorators dropped): what ``passes_dump`` holds."""
    fn = copy.copy(ir.node)
    fn.decorator_list = []
    text = ast.unparse(fn)
    if not ir.domains:
        return text + "\n"
    lines = text.split("\n")
    # the body starts on the line after the header (``def f(...):`` may span one line only here,
    # ast.unparse writes it on one)
    head = next(i for i, ln in enumerate(lines) if ln.startswith("def ") or ln.startswith("async def "))
    indent = " " * 4
    comments = [indent + d.describe() for d in ir.domains]
    return "\n".join(lines[:head + 1] + comments + lines[head + 1:]) + "\n"


def parse_host(text: str) -> HostIR:
    """A printed host body back into :class:`HostIR` (the domain comments are dropped)."""
    tree = ast.parse(text)
    fns = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if len(fns) != 1:
        raise ValueError(f"a printed host body holds one def, this text holds {len(fns)}")
    return HostIR(fns[0])


def run_host_pipeline(ir: HostIR, ctx: HostPassContext, passes=None) -> HostIR:
    """Run ``passes`` (default :data:`HOST_PIPELINE`) over ``ir``; with ``ctx.dump_dir`` set, every
    stage's text goes to ``host_NN_after_<Name>.py`` there (``host_00_original.py`` first)."""
    from pypto.passes import host_pipeline

    seq = host_pipeline.HOST_PIPELINE if passes is None else passes
    if ctx.dump_dir is not None:
        ctx.dump_dir.mkdir(parents=True, exist_ok=True)
        (ctx.dump_dir / "host_00_original.py").write_text(print_host(ir))
    for i, p in enumerate(seq, 1):
        t0 = time.perf_counter()
        ir = p.run(ir, ctx)
        ctx.timings[p.NAME] = ctx.timings.get(p.NAME, 0.0) + time.perf_counter() - t0
        if ctx.dump_dir is not None:
            (ctx.dump_dir / f"host_{i:02d}_after_{p.NAME}.py").write_text(print_host(ir))
    return ir


# -- helpers shared by the host passes ------------------------------------------------------------

def resolve(e: ast.expr, ctx: HostPassContext):
    """The object a callee expression names (``pld.tensor.allreduce``, ``per_rank``, ``self.f``),
    or None when it is not a plain name / attribute chain of known objects."""
    if isinstance(e, ast.Name):
        if e.id in ctx.env:
            return ctx.env[e.id]
        if e.id in ctx.scope:
            return ctx.scope[e.id]
        return _DEFAULT_NAMES().get(e.id)
    if isinstance(e, ast.Attribute):
        base = resolve(e.value, ctx)
        if base is None:
            return None
        try:
            return getattr(base, e.attr)
        except Exception:  # noqa: BLE001 - an attribute a pass cannot know statically
            return None
    return None


def _DEFAULT_NAMES() -> dict:   # noqa: N802 - a constant computed late (import order)
    """The names code generated by a host pass uses, resolved even when the user's module imported
    the DSL under other names."""
    import pypto.language as pl
    import pypto.language.distributed as pld

    return {"pl": pl, "pld": pld}


def builtin_kind(call: ast.Call) -> str | None:
    """``kind`` of a lowered builtin dispatch ``builtin.tensor.<kind>(...)`` (syntactic: ``builtin``
    is not a DSL object), else None."""
    f = call.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Attribute) and f.value.attr == "tensor" \
            and isinstance(f.value.value, ast.Name) and f.value.value.id == "builtin":
        return f.attr
    return None


def collective_kind(call: ast.Call, ctx: HostPassContext) -> str | None:
    """``kind`` of a host collective call ``pld.tensor.<kind>(...)``, else None."""
    fn = resolve(call.func, ctx)
    name = getattr(fn, "name", None)
    if isinstance(name, str) and name in HOST_COLLECTIVES:
        return name.split(".", 1)[1]
    return None


def is_op(call: ast.Call, ctx: HostPassContext, obj) -> bool:
    return isinstance(call, ast.Call) and resolve(call.func, ctx) is obj


def name(n: str) -> ast.Name:
    return ast.Name(n, ast.Load())


def attr_chain(*parts: str) -> ast.expr:
    e: ast.expr = name(parts[0])
    for p in parts[1:]:
        e = ast.Attribute(e, p, ast.Load())
    return e


def fresh(used: set, base: str) -> str:
    """A name not yet used in the body (``__base_0``, ``__base_1``, ...)."""
    k = 0
    while f"{base}_{k}" in used:
        k += 1
    used.add(f"{base}_{k}")
    return f"{base}_{k}"


def names_in(node: ast.AST) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | \
        {a.arg for a in ast.walk(node) if isinstance(a, ast.arg)}


def located(new: ast.AST, old: ast.AST) -> ast.AST:
    """``new`` (and every generated node under it) at ``old``'s source location. Nodes that already
    have a location are the source's own (an operand moved into generated code): they keep it, and
    the source tree is never modified."""
    for n in ast.walk(new):
        if isinstance(n, (ast.stmt, ast.expr)) and getattr(n, "lineno", None) is None:
            ast.copy_location(n, old)
            if getattr(old, "end_lineno", None) is not None:
                n.end_lineno, n.end_col_offset = old.end_lineno, old.end_col_offset
    return new


# the reference's host collectives (their DSL ops) and each one's window-view parameters in the
# reference's positional order
HOST_COLLECTIVES = {"dist.allreduce", "dist.broadcast", "dist.allgather", "dist.reduce_scatter", "dist.all_to_all",
                    "dist.all_to_all_v", "dist.barrier"}
COLLECTIVE_PARAMS = {"allreduce": ("target", "signal"), "reduce_scatter": ("target", "signal"),
                     "broadcast": ("target", "signal"), "allgather": ("local", "target", "signal"),
                     "all_to_all": ("input", "target", "signal"), "barrier": ("signal",),
                     "all_to_all_v": ("input", "target", "signal", "send_counts", "recv_counts")}
