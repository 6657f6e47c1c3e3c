"""The ``@pl.jit.host`` orchestrator: its body is read from source and interpreted on the host
(never executed as Python), statement by statement, over the host's concrete values.

What a host body may hold (the reference's host orchestrators): assignments, ``for r in
pl.range(...)`` / ``range(...)`` loops, ``if``, ``return``; integer arithmetic; ``pld.world_size()``;
``pld.alloc_window_buffer(shape, dtype=...)`` / ``(nbytes)``; ``pld.window(buf, shape, dtype=...)``;
indexing a host tensor (``x[r]``); calls of ``@pl.jit`` per-rank programs with ``device=r``; and the
host-level collectives ``pld.tensor.allreduce`` / ``allgather`` / ``reduce_scatter`` / ``broadcast``
over window views. The body interpreted is the host pass pipeline's output
(:mod:`pypto.passes.host_pipeline`): each window buffer's comm domain is known, and each host
collective is its builtin dispatches ``builtin.tensor.<kind>(..., device=r)``. Launches are queued
per rank; a collective's dispatches, a host read of a tensor and the end of the body run the queued
launches (all ranks concurrently, :mod:`pypto.runtime.distributed.engine`) first.
"""
from __future__ import annotations

import ast
import builtins
import json
import operator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from pypto.errors import ParserError, Span, UnsupportedFeatureError
from pypto.frontend.host_inline import INLINE_KW
from pypto.ir.types import DynDim
from pypto.language.dtypes import INT32, DataType, dtype_from_name
from pypto.ops.support import dist as support_dist
# the host collectives and their window-view parameters: one definition, the host passes'
from pypto.passes.host_ir import COLLECTIVE_PARAMS as _COLLECTIVE_PARAMS
from pypto.passes.host_ir import HOST_COLLECTIVES as _HOST_COLLECTIVES
from pypto.runtime.distributed.builtins import builtin_for
from pypto.runtime.distributed.engine import Launch, RankPlan

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
           ast.Mod: operator.mod, ast.Pow: operator.pow, ast.Div: operator.truediv,
           ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.LShift: operator.lshift,
           ast.RShift: operator.rshift}
_CMPOPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge}
_SAFE_BUILTINS = {"range": range, "len": len, "min": min, "max": max, "int": int, "abs": abs}


@dataclass
class WindowBuffer:
    """``pld.alloc_window_buffer``: a window of ``nbytes`` per rank (zero-filled), 4 KiB at least."""

    name: str
    nbytes: int
    tensors: dict = field(default_factory=dict)   # rank -> uint8 device-memory tensor
    window: Any = None                            # the World's Window, once allocated


@dataclass
class WindowView:
    """``pld.window(buf, shape, dtype=...)``: the rank-r tensor view of a window buffer."""

    buf: WindowBuffer
    shape: tuple
    dtype: DataType

    def on(self, rank: int) -> torch.Tensor:
        """This view in rank ``rank``'s window."""
        raw = self.buf.tensors[rank]
        n = 1
        for d in self.shape:
            n *= d
        size = n * self.dtype.itemsize
        if size > raw.numel():
            raise ValueError(f"pld.window: a {list(self.shape)} {self.dtype.name} view needs {size} bytes, the "
                             f"window buffer '{self.buf.name}' holds {raw.numel()}")
        return raw[:size].view(self.dtype.torch).reshape(self.shape)


def _fit_window(a: torch.Tensor, p: dict | None) -> torch.Tensor:
    """A window view given for a kernel parameter declared in another static shape of the same
    element count and dtype (``pld.window(buf, [64])`` for a ``[1, 64]`` parameter) is that
    parameter's view of the same memory: a window is raw device memory and the program reads it
    in its own declared shape, as the reference passes the window address. Anything else is left
    for the program's argument check to refuse."""
    if p is None or p.get("kind") != "TensorType" or None in p.get("shape", [None]):
        return a
    shape = [int(d) for d in p["shape"]]
    n = 1
    for d in shape:
        n *= d
    if list(a.shape) != shape and a.numel() == n and a.dtype == dtype_from_name(p["dtype"]).torch \
            and a.is_contiguous():
        return a.view(shape)
    return a


WINDOW_FLOOR = 4096   # the reference pads every window to at least 4 KiB


class HostInterpreter:
    """Runs one host body. ``alloc(nbytes)`` gives a rank's zeroed device memory (its ChipWorker),
    ``compile_launch(fn, args, kwargs)`` compiles a per-rank program, ``flush(plan)`` runs queued
    launches."""

    def __init__(self, scope: dict, src, nranks: int, world: support_dist.World, *, alloc, compile_launch, flush,
                 builtin=None, compile_only: bool = False):
        self.scope, self.src, self.nranks, self.world = scope, src, nranks, world
        self.dyn: dict = {}   # pl.dynamic extents (or AmbiguousExtent), bound from the host parameters' shapes
        self.alloc, self.compile_launch, self.flush_fn = alloc, compile_launch, flush
        self.compile_only = compile_only
        self.plan = RankPlan(nranks)
        self.buffers: list[WindowBuffer] = []
        self.env: dict[str, Any] = {}
        self.launches_seen: list[Launch] = []
        self.builtin = builtin          # Builtin -> compiled per-rank program (host collectives)
        self.plan_windows: dict[int, dict] = {}   # window buffer -> rank -> queued launches using it
        # the lowered body's IR (pypto.passes.host_ir.HostIR): its comm domains give each window
        # buffer its group; ``window_ranks`` records the ranks launched with each buffer
        self.host_ir = None
        self._domain_groups: dict = {}   # domain devices -> its CommGroup
        self.window_ranks: list[set[int]] = []
        self._lhs: str | None = None      # the name an allocation is bound to (its comm-domain slot)
        # ``window_alloc(slot, nbytes, domain) -> {rank: uint8 tensor}``: where window buffers come
        # from when set (a DistributedWorker's window store); else ``alloc`` per rank
        self.window_alloc = None
        self._builtin_ranks: set | None = None   # ranks with a builtin dispatch in the queued phase
        self.dfx_base = None     # <output_dir>/dfx_outputs of a run asking for DFX output (per-dispatch dirs)
        self.dispatches: dict[int, int] = {}   # rank -> dispatches made this run
        self.tensor_arg = None   # (rank, host tensor) -> the launch argument; None: the tensor itself

    # -- helpers ---------------------------------------------------------------------------
    def span(self, node: ast.AST) -> Span:
        return self.src.span(node)

    def error(self, msg: str, node: ast.AST, hint: str | None = None, cls=UnsupportedFeatureError):
        return cls(msg, self.span(node), hint)

    def lookup(self, name: str, node: ast.AST):
        if name in self.env:
            return self.env[name]
        if name in self.scope:
            v = self.scope[name]
            if isinstance(v, DynDim):
                if v.name not in self.dyn:
                    raise self.error(f"the dynamic extent {v.name} is not bound by a host parameter's shape", node,
                                     cls=ParserError)
                got = self.dyn[v.name]
                if isinstance(got, AmbiguousExtent):
                    raise self.error(f"the dynamic extent {v.name} has no one value: {got.describe()}", node,
                                     f"read the extent meant from its tensor: {got.uses[0][0]}.shape"
                                     f"[{got.uses[0][1]}]", cls=ParserError)
                return got
            return v
        if name in _SAFE_BUILTINS:
            return _SAFE_BUILTINS[name]
        if name in ("pl", "pld"):   # what code generated by the host passes names
            from pypto.passes.host_ir import _DEFAULT_NAMES

            return _DEFAULT_NAMES()[name]
        raise self.error(f"name '{name}' is not defined in the host orchestrator", node, cls=ParserError)

    def read(self, v: Any) -> Any:
        """``v`` about to be *read* by the host (arithmetic, a comparison, a condition, a builtin):
        a host tensor may be an output of a queued launch, so the queued launches run first, as a
        host that reads device results synchronises with the device. Without this the host would
        compute with the tensor's stale contents."""
        if isinstance(v, torch.Tensor) and self.plan:
            self.flush()
        return v

    def truth(self, v: Any, node: ast.AST) -> bool:
        """The truth of a host condition; a multi-element tensor is a located error."""
        if isinstance(v, torch.Tensor) and v.numel() != 1:
            raise self.error(f"a host condition on a tensor of {v.numel()} elements is ambiguous", node,
                             "index one element (y[0, 0]) or reduce it first", cls=ParserError)
        return bool(v)

    def index(self, v: Any, node: ast.AST, what: str) -> int:
        """``v`` as an integer extent / bound; a non-integral value (``N / 2`` is a float in Python)
        is a located error rather than silently truncated."""
        v = self.read(v)
        if isinstance(v, torch.Tensor) and v.numel() == 1 and not v.is_floating_point():
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int):
            if isinstance(v, float) and v.is_integer():
                return int(v)
            raise self.error(f"{what} must be an integer, got {v!r}", node,
                             "use // for integer division in the host orchestrator", cls=ParserError)
        return v

    # -- statements ------------------------------------------------------------------------
    def run(self, body: list[ast.stmt]) -> Any:
        try:
            self.block(body)
        except _Return as r:
            self.flush()
            return r.value
        self.flush()
        return None

    def flush(self) -> None:
        self.plan_windows = {}
        self._builtin_ranks = None
        if self.plan:
            plan, self.plan = self.plan, RankPlan(self.nranks)
            if not self.compile_only:
                self.flush_fn(plan)

    def block(self, stmts) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
                return   # a docstring
            self.expr(s.value)
        elif isinstance(s, ast.Assign):
            self._lhs = s.targets[0].id if len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) else None
            try:
                v = self.expr(s.value)
            finally:
                self._lhs = None
            for t in s.targets:
                self.bind(t, v)
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            self.bind(s.target, self.expr(s.value))
        elif isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
            op = _BINOPS.get(type(s.op))
            if op is None:
                raise self.error("this augmented assignment is not supported in a host orchestrator", s)
            self.env[s.target.id] = op(self.lookup(s.target.id, s), self.expr(s.value))
        elif isinstance(s, ast.For):
            it = self.expr(s.iter)
            if not isinstance(it, range):
                raise self.error("a host loop iterates pl.range(...) / range(...)", s.iter)
            for i in it:
                self.bind(s.target, i)
                self.block(s.body)
            if s.orelse:
                self.block(s.orelse)
        elif isinstance(s, ast.If):
            self.block(s.body if self.truth(self.read(self.expr(s.test)), s.test) else s.orelse)
        elif isinstance(s, ast.Return):
            raise _Return(self.expr(s.value) if s.value is not None else None)
        elif isinstance(s, ast.Pass):
            return
        else:
            raise self.error(f"'{type(s).__name__}' statements are not supported in a host orchestrator", s,
                             "the host body allocates windows, loops over ranks and launches per-rank programs")

    def bind(self, target: ast.expr, v: Any) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = v
        elif isinstance(target, ast.Tuple) and isinstance(v, (tuple, list)) and len(v) == len(target.elts):
            for t, x in zip(target.elts, v):
                self.bind(t, x)
        else:
            raise self.error("only names (and tuples of names) can be assigned in a host orchestrator", target)

    # -- expressions -----------------------------------------------------------------------
    def expr(self, e: ast.expr) -> Any:
        if isinstance(e, ast.Constant):
            return e.value
        if isinstance(e, ast.Name):
            return self.lookup(e.id, e)
        if isinstance(e, ast.Attribute):
            base = self.expr(e.value)
            if isinstance(base, torch.Tensor) and e.attr not in ("shape", "dtype"):
                raise self.error(f"host tensors expose .shape and .dtype only, not '.{e.attr}'", e)
            try:
                return getattr(base, e.attr)
            except AttributeError:
                raise self.error(f"{base!r} has no attribute '{e.attr}'", e, cls=ParserError) from None
        if isinstance(e, (ast.List, ast.Tuple)):
            vals = [self.expr(x) for x in e.elts]
            return vals if isinstance(e, ast.List) else tuple(vals)
        if isinstance(e, ast.BinOp):
            op = _BINOPS.get(type(e.op))
            if op is None:
                raise self.error(f"operator {type(e.op).__name__} is not supported in a host orchestrator", e)
            return op(self.read(self.expr(e.left)), self.read(self.expr(e.right)))
        if isinstance(e, ast.UnaryOp):
            v = self.read(self.expr(e.operand))
            if isinstance(e.op, ast.USub):
                return -v
            if isinstance(e.op, ast.Not):
                return not v
            if isinstance(e.op, ast.UAdd):
                return +v
        if isinstance(e, ast.Compare) and len(e.ops) == 1 and type(e.ops[0]) in _CMPOPS:
            return _CMPOPS[type(e.ops[0])](self.read(self.expr(e.left)), self.read(self.expr(e.comparators[0])))
        if isinstance(e, ast.BoolOp):
            # Python's semantics: short-circuit, and the value is the operand that decided
            # (``n = k or 4`` is k when k is truthy, not True)
            v = None
            for x in e.values:
                v = self.read(self.expr(x))
                if self.truth(v, x) != isinstance(e.op, ast.And):
                    return v
            return v
        if isinstance(e, ast.Subscript):
            return self.subscript(e)
        if isinstance(e, ast.Slice):
            return slice(*(self.expr(x) if x is not None else None for x in (e.lower, e.upper, e.step)))
        if isinstance(e, ast.Call):
            return self.call(e)
        raise self.error(f"'{type(e).__name__}' expressions are not supported in a host orchestrator", e)

    def subscript(self, e: ast.Subscript) -> Any:
        base = self.expr(e.value)
        idx = self.expr(e.slice)
        if isinstance(base, (torch.Tensor, list, tuple)) or type(base).__name__ == "StackedDeviceTensor":
            return base[idx]
        raise self.error(f"cannot index {type(base).__name__} in a host orchestrator", e)

    def call(self, e: ast.Call) -> Any:
        import pypto.language as pl
        import pypto.language.distributed as pld
        from pypto.language.jit import JITFunction

        from pypto.passes.host_ir import builtin_kind

        kind = builtin_kind(e)
        if kind is not None:   # a lowered host collective (LowerHostTensorCollectives)
            args = [self.expr(a) for a in e.args]
            return self.builtin_dispatch(e, kind, args, {k.arg: self.expr(k.value) for k in e.keywords})
        fn = self.expr(e.func)
        # Python's order: positional arguments, then keywords (a launch inside an argument queues
        # in that order)
        args = [self.expr(a) for a in e.args]
        kwargs = {}
        for k in e.keywords:
            if k.arg is None:
                raise self.error("**kwargs is not supported in a host orchestrator", k.value)
            kwargs[k.arg] = self.expr(k.value)
        if any(isinstance(a, ast.Starred) for a in e.args):
            raise self.error("*args is not supported in a host orchestrator", e)
        if fn is pl.range or fn is range:
            return range(*[self.index(a, e, "a range bound") for a in args],
                         **{k: self.index(v, e, "a range bound") for k, v in kwargs.items()})
        if fn in (len, min, max, int, abs):
            return fn(*[self.read(a) for a in args], **kwargs)
        if fn is pld.world_size:
            return self.nranks
        if fn is pl.create_tensor:
            return self.create_tensor(e, args, kwargs)
        if fn is pld.alloc_window_buffer:
            return self.alloc_window(e, args, kwargs)
        if fn is pld.window:
            return self.window(e, args, kwargs)
        if isinstance(fn, (JITFunction, ProgramMethod)):
            return self.launch(e, fn, args, kwargs)
        if isinstance(fn, SubWorker):
            if fn.fn is None:
                raise self.error(f"sub-worker '{fn.name}' has no Python function to run", e)
            self.flush()
            if self.compile_only:
                return None
            return fn.fn(*[a.on(0) if isinstance(a, WindowView) else a for a in args], **kwargs)
        if isinstance(fn, DataType) or getattr(fn, "__self__", None) is not None and isinstance(fn.__self__, DataType):
            return fn(*args, **kwargs)
        name = getattr(fn, "name", None)
        if name in _HOST_COLLECTIVES:
            return self.collective(e, name, args, kwargs)
        raise self.error(f"cannot call {fn!r} in a host orchestrator", e,
                         "call @pl.jit per-rank programs with device=r, pld.alloc_window_buffer / pld.window, "
                         "or a host collective (pld.tensor.allreduce ...)")

    def create_tensor(self, e, args, kwargs) -> torch.Tensor:
        """``pl.create_tensor(shape, dtype=...)`` on the host: a host tensor (an intermediate the
        launches write), filled with ``init_value`` (default zeros)."""
        shape = args[0] if args else kwargs.pop("shape", None)
        dtype = args[1] if len(args) > 1 else kwargs.pop("dtype", None)
        init = kwargs.pop("init_value", None)
        kwargs.pop("manual_dep", None)
        if not isinstance(shape, (list, tuple)) or not isinstance(dtype, DataType) or kwargs:
            raise self.error("pl.create_tensor on the host takes (shape, dtype=..., init_value=...)", e, cls=ParserError)
        dims = [self.index(d, e, "a tensor extent") for d in shape]
        return torch.full(dims, init, dtype=dtype.torch) if init is not None else torch.zeros(dims, dtype=dtype.torch)

    def alloc_window(self, e, args, kwargs) -> WindowBuffer:
        name = kwargs.pop("name", "") or self._lhs or f"window{len(self.buffers)}"
        dtype = kwargs.pop("dtype", None)
        if kwargs or len(args) != 1:
            raise self.error("pld.alloc_window_buffer takes (nbytes) or (shape, dtype=...)", e, cls=ParserError)
        size = args[0]
        if isinstance(size, (list, tuple)):
            if not isinstance(dtype, DataType):
                raise self.error("pld.alloc_window_buffer(shape, dtype=...) needs a dtype", e, cls=ParserError)
            n = 1
            for d in size:
                n *= self.index(d, e, "a window extent")
            nbytes = n * dtype.itemsize
        else:
            nbytes = self.index(size, e, "a window size")
        if nbytes <= 0:
            raise self.error(f"pld.alloc_window_buffer: {nbytes} bytes is not a valid size", e, cls=ParserError)
        return self.alloc_window_bytes(name, nbytes)

    def alloc_window_bytes(self, name: str, nbytes: int) -> WindowBuffer:
        """A window buffer of ``nbytes`` (at least the 4 KiB floor) on every rank."""
        buf = WindowBuffer(name, max(nbytes, WINDOW_FLOOR))
        group = self._group_of(name)
        if self.window_alloc is not None:   # the run's window store (a persistent worker keeps them)
            domain = next((d for d in (self.host_ir.domains or ()) if name in d.slots), None) \
                if self.host_ir is not None else None
            buf.tensors.update(self.window_alloc(name, buf.nbytes, domain))
        else:
            for r in range(self.nranks):
                buf.tensors[r] = self.alloc(r, buf.nbytes)
        # the window's rank-0..n views register their storage with the world
        buf.window = self.world.add_window(name, {r: t for r, t in buf.tensors.items()}, group)
        self.window_ranks.append(set())
        self.buffers.append(buf)
        return buf

    def _dfx_dir(self, rank: int, program: str, compiled):
        """The DFX directory of rank ``rank``'s next dispatch, ``<dfx_base>/rank{r}/d{k}`` (``k``
        counts the card's dispatches of this run), with ``dispatch_program.json`` naming the
        program that ran there; None when the run asks for no DFX output."""
        if self.dfx_base is None:
            return None
        k = self.dispatches.get(rank, 0)
        self.dispatches[rank] = k + 1
        d = Path(self.dfx_base) / f"rank{rank}" / f"d{k}"
        d.mkdir(parents=True, exist_ok=True)
        out = getattr(compiled, "output_dir", None)
        (d / "dispatch_program.json").write_text(json.dumps(
            {"rank": rank, "dispatch": k, "program": program, "output_dir": str(out) if out else None}))
        return d

    def _group_of(self, name: str):
        """The communication group of window buffer ``name``: its comm domain's devices, found by
        MaterializeCommDomainScopes from the launches that use it (the reference clusters window
        buffers into comm domains by their dispatch devices). A buffer that only ranks ``{1, 2}``
        use is in a group of two (group rank 0 is device 1, so a kernel's ``peer=0`` there is device
        1); buffers of one domain share its group; the world domain is the world group."""
        devices = self.host_ir.devices_of(name) if self.host_ir is not None else None
        if not devices:   # None: the world; False: no domain lists it (an unnamed allocation)
            return None
        g = self._domain_groups.get(devices)
        if g is None:
            g = support_dist.CommGroup(len(self.world.groups), list(devices))
            self.world.groups.append(g)
            self._domain_groups[devices] = g
        return g

    def window(self, e, args, kwargs) -> WindowView:
        dtype = kwargs.pop("dtype", args[2] if len(args) > 2 else None)
        if len(args) < 2 or not isinstance(args[0], WindowBuffer) or not isinstance(dtype, DataType) or kwargs:
            raise self.error("pld.window takes (buffer, shape, dtype=...) with a buffer from pld.alloc_window_buffer",
                             e, cls=ParserError)
        return WindowView(args[0], tuple(self.index(d, e, "a window view extent") for d in args[1]), dtype)

    def launch(self, e, fn, args, kwargs) -> None:
        # without device= a launch goes to rank 0 (the first card of device_ids)
        block = kwargs.pop(INLINE_KW, None)   # an inline pl.at(level=CHIP) block k runs on chip k % ranks
        rank = kwargs.pop("device", 0 if block is None else block % self.nranks)
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < self.nranks:
            raise self.error(f"device={rank!r} is not a rank of this program (0..{self.nranks - 1})", e,
                             cls=ParserError)
        # Once every rank's queued launches used a window buffer equally often (a complete round:
        # `for r: publish(..., device=r)` done), a further use starts a new round: the queued
        # launches run first. Without it, a rank's next write of its window (round 2's publish)
        # could overtake a peer still reading round 1's data from it (a remote_load after a host
        # barrier): the host program orders the two, so the run must. The launches of one round
        # (also several per rank inside one `for r` loop) still run together, as they must when
        # they synchronise with each other.
        if self._builtin_ranks:   # the queued host collective runs before this launch
            self.flush()
        bufs = {id(a.buf) for a in [*args, *kwargs.values()] if isinstance(a, WindowView)}
        for b in bufs:
            uses = self.plan_windows.get(b, {})
            if len(uses) == self.nranks and len(set(uses.values())) == 1:
                self.flush()
                break
        for b in bufs:
            uses = self.plan_windows.setdefault(b, {})
            uses[rank] = uses.get(rank, 0) + 1
        for i, buf in enumerate(self.buffers):
            if id(buf) in bufs:
                self.window_ranks[i].add(rank)
        resolved = [a.on(rank) if isinstance(a, WindowView) else a for a in args]
        kw = {k: (v.on(rank) if isinstance(v, WindowView) else v) for k, v in kwargs.items()}
        windows = {id(a) for a in [*resolved, *kw.values()] if isinstance(a, torch.Tensor)} - \
            {id(a) for a in [*args, *kwargs.values()]}
        compiled, runtime_args = self.compile_launch(fn, resolved, kw)
        params = getattr(compiled, "meta", {}).get("params", [])
        runtime_args = [_fit_window(a, p) if id(a) in windows else a
                        for a, p in zip(runtime_args, params or [None] * len(runtime_args))]
        if self.tensor_arg is not None:   # a host tensor becomes the card's argument (make_tensor_arg)
            runtime_args = [self.tensor_arg(rank, a) if isinstance(a, torch.Tensor) and id(a) not in windows else a
                            for a in runtime_args]
        s = self.span(e)
        ln = Launch(rank, _fname(fn), compiled, runtime_args, f"{s.file}:{s.line}",
                    self._dfx_dir(rank, _fname(fn), compiled))
        self.plan.add(ln)
        self.launches_seen.append(ln)
        # the value of the launch: its Out / InOut arguments (filled once the phase has run)
        outs = [a for p, a in zip(params, runtime_args) if p.get("direction") in ("Out", "InOut")]
        return outs[0] if len(outs) == 1 else (tuple(outs) if outs else None)

    def collective(self, e, name: str, args, kwargs) -> Any:
        """A ``pld.tensor.<kind>`` call left in the body: LowerHostTensorCollectives lowers every
        one it accepts, so this is a body that did not go through the host pipeline."""
        raise self.error(f"pld.tensor.{name.split('.')[-1]} reached the host interpreter unlowered", e,
                         "run the body through pypto.passes.host_pipeline (HostInterpreter callers do)",
                         cls=ParserError)

    def builtin_dispatch(self, e, kind: str, args, kwargs) -> None:
        """``builtin.tensor.<kind>(views..., op=, root=, mode=, device=r)``: rank ``r``'s launch of a
        host collective's per-rank program (:mod:`pypto.runtime.distributed.builtins`). The
        launches queued before the collective run first; its dispatches (one per rank of its
        domain) make up one phase."""
        if kind not in _COLLECTIVE_PARAMS:
            raise self.error(f"builtin.tensor.{kind} is not a host collective", e, cls=ParserError)
        rank = kwargs.pop("device", None)
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < self.nranks:
            raise self.error(f"device={rank!r} is not a rank of this program (0..{self.nranks - 1})", e,
                             cls=ParserError)
        if self.plan and (self._builtin_ranks is None or rank in self._builtin_ranks):
            self.flush()   # the launches before the collective (or the previous collective) first
        order = _COLLECTIVE_PARAMS[kind]
        if len(args) != len(order):
            raise self.error(f"builtin.tensor.{kind} takes the window views ({', '.join(order)})", e, cls=ParserError)
        views = {}
        for pname, v in zip(order, args):
            if not isinstance(v, WindowView):
                raise self.error(f"pld.tensor.{kind} on the host takes window views (pld.window(...)); "
                                 f"'{pname}' is {type(v).__name__}", e, cls=ParserError)
            views[pname] = v
        # the reference's rule: every window operand its own allocation. Two views of one buffer
        # race inside the builtin (a reduction overwriting its operand, a notify landing on data)
        seen: dict = {}
        for pname, v in views.items():
            if id(v.buf) in seen:
                raise self.error(f"pld.tensor.{kind}: '{seen[id(v.buf)]}' and '{pname}' are views of the same window "
                                 f"buffer '{v.buf.name}'", e, "give each operand its own pld.alloc_window_buffer "
                                 "(aliased operands race inside the collective)", cls=ParserError)
            seen[id(v.buf)] = pname
        op = root = mode = None
        if kind in ("allreduce", "reduce_scatter"):
            op = _op_name(self, e, kwargs.pop("op", None), "Sum")
        if kind == "allreduce":
            mode = kwargs.pop("mode", "mesh")
            kwargs.pop("core_num", None)
            if mode not in ("mesh", "ring"):
                raise self.error(f"allreduce mode={mode!r}: use 'mesh' or 'ring'", e, cls=ParserError)
        group = views["signal"].buf.window.group if views["signal"].buf.window is not None else None
        n = len(group.members) if group is not None else self.nranks
        if kind == "broadcast":
            root = self.index(kwargs.pop("root", 0), e, "broadcast root")
            if not 0 <= root < n:
                raise self.error(f"broadcast root {root} is not a rank of this collective's group (0..{n - 1})", e,
                                 cls=ParserError)
        if kind == "reduce_scatter" and views["target"].shape[0] % n:
            # torch.chunk would hand out uneven (or fewer than n) chunks: a wrong scatter, not an error
            raise self.error(f"pld.tensor.reduce_scatter: dim 0 of the window view ({views['target'].shape[0]}) is "
                             f"not divisible by the {n} ranks", e, cls=ParserError)
        if kwargs:
            raise self.error(f"pld.tensor.{kind} on the host: unexpected argument(s) {', '.join(kwargs)}", e,
                             cls=ParserError)
        b = builtin_for(kind, views, op, root, mode)
        compiled = self.builtin(b)
        s = self.span(e)
        # a builtin dispatch is a dispatch of its card like any other: its DFX outputs get their own
        # dfx_outputs/rank{r}/d{k} (the ranks would otherwise overwrite each other's in the shared
        # next_levels build directory)
        ln = Launch(rank, b.variant, compiled, [v.on(rank) for v in b.views], f"{s.file}:{s.line}",
                    self._dfx_dir(rank, b.variant, compiled))
        self.plan.add(ln)
        self.launches_seen.append(ln)
        self._builtin_ranks = (self._builtin_ranks or set()) | {rank}
        for i, buf in enumerate(self.buffers):
            if any(v.buf is buf for v in views.values()):
                self.window_ranks[i].add(rank)

@dataclass(frozen=True)
class ProgramMethod:
    """``self.<name>`` in a ``@pl.program``'s HOST method: a per-rank program (the class's
    Orchestration function ``name``) to launch with ``device=r``."""

    program: Any
    name: str


@dataclass(frozen=True)
class SubWorker:
    """``self.<name>`` naming a ``role=pl.Role.SubWorker`` HOST function: host Python, called as
    written once every launch queued before it has finished (the reference runs it after the
    chip work it depends on)."""

    name: str
    fn: Any


class ProgramSelf:
    """``self`` in a HOST method: attribute access names one of the program's functions."""

    def __init__(self, program, subworkers: dict | None = None):
        self._program = program
        self._subworkers = subworkers or {}

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in self._subworkers:
            return SubWorker(name, self._subworkers[name])
        try:
            self._program.get_function(name)
        except KeyError:
            raise AttributeError(f"program '{self._program.name}' has no function '{name}'") from None
        return ProgramMethod(self._program, name)


def _fname(fn) -> str:
    return fn.name if isinstance(fn, ProgramMethod) else fn.__name__


@dataclass(frozen=True)
class AmbiguousExtent:
    """A ``pl.dynamic`` dim the host arguments give different extents: each parameter keeps its own
    (as in the reference), and reading the dim's value in the body is a located error."""

    uses: tuple   # (parameter, dim, extent) of every occurrence

    def describe(self) -> str:
        return ", ".join(f"'{p}' dim {d} is {n}" for p, d, n in self.uses)


def bind_dynamic(annotations, values: dict, resolve) -> dict:
    """The extents of ``pl.dynamic`` dims in host parameter annotations (``pl.Tensor[[NR, 1, N], ...]``,
    also inside ``pl.Out[...]`` / ``pl.InOut[...]``), read from the arguments' shapes. A dim the
    arguments disagree on maps to an :class:`AmbiguousExtent` (using its value is then an error:
    taking the first silently would size the program for one argument and misread the other)."""
    uses: dict[str, list] = {}
    for name, ann in annotations:
        v = values.get(name)
        if ann is None or not isinstance(v, torch.Tensor):
            continue
        node = ann
        while isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Subscript):
            node = node.slice   # pl.Out[pl.Tensor[...]]
        if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) and node.slice.elts
                and isinstance(node.slice.elts[0], (ast.List, ast.Tuple))):
            continue
        for i, d in enumerate(node.slice.elts[0].elts):
            if isinstance(d, ast.Name) and i < v.dim():
                obj = resolve(d.id)
                if isinstance(obj, DynDim):
                    uses.setdefault(obj.name, []).append((name, i, int(v.shape[i])))
    return {k: u[0][2] if len({n for _, _, n in u}) == 1 else AmbiguousExtent(tuple(u)) for k, u in uses.items()}


class _Return(Exception):
    """A ``return`` statement of the interpreted host body (unwinds to the body's caller)."""

    def __init__(self, value):
        self.value = value


_REDUCE_OPS = ("Sum", "Max", "Min", "Prod")


def _op_name(h: HostInterpreter, e, v, default: str) -> str:
    """The reduce op's name (``pld.ReduceOp.Max`` or "Max"); anything else is a located error (it
    used to fall back to Sum silently)."""
    if v is None:
        return default
    name = v if isinstance(v, str) else getattr(v, "name", None)
    if name not in _REDUCE_OPS:
        raise h.error(f"op={v!r} is not a reduce op", e, f"use pld.ReduceOp.{' / '.join(_REDUCE_OPS)}",
                      cls=ParserError)
    return name
