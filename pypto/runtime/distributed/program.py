"""Multi-rank programs: ``@pl.jit.host`` functions, their compiled form and the run handles.

* :class:`HostFunction` — what ``@pl.jit.host`` makes. ``fn.compile(*args, config=RunConfig(...,
  distributed_config=DistributedConfig(device_ids=[...])))`` interprets the host body once with
  the sample arguments, compiling every per-rank program it launches (nothing runs), and returns a
  :class:`DistributedCompiledProgram`; calling that (or the function) runs it.
* :func:`execute_distributed_compiled` — one run: a fresh world (window buffers zeroed, one
  simulated card per rank, each a :class:`pypto.runtime.worker.ChipWorker`), the host body
  interpreted again over the call's tensors, its launches run by the engine.
* :class:`DistributedWorker` (``compiled.prepare()``) keeps the cards between runs;
  :class:`DistributedRunHandle` is what ``worker.submit(...)`` returns (``wait()``).
"""
from __future__ import annotations

import inspect
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

import torch

from pypto.errors import PyptoError
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.ops.support import dist as support_dist
from pypto.runtime.config import RunConfig
from pypto.runtime.distributed.builtins import compile_builtin
from pypto.runtime.distributed.engine import get_engine
from pypto.runtime.distributed.host import HostInterpreter, ProgramMethod, ProgramSelf, bind_dynamic
from pypto.runtime.worker import ChipWorker
from pypto.tracebacks import user_facing


class HostFunction:
    """A ``@pl.jit.host`` orchestrator (see the module docstring)."""

    program = None   # a @pl.program's HOST method has its program (ProgramHost)

    def __init__(self, fn):
        from pypto.frontend.source import snapshot_source

        self.fn = fn
        self.name = fn.__name__
        self.source_snapshot = snapshot_source(fn)
        self._tree = None
        self._cache: dict = {}
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def scope(self) -> dict:
        """The names the body may use: the function's globals and closure."""
        out = dict(self.fn.__globals__)
        if self.fn.__closure__:
            out.update({n: c.cell_contents for n, c in zip(self.fn.__code__.co_freevars, self.fn.__closure__)})
        return out

    def annotations(self) -> list:
        """``(parameter name, annotation AST)`` pairs."""
        tree, _ = self.parsed()
        return [(a.arg, a.annotation) for a in tree.args.args]

    def __repr__(self) -> str:
        return f"<pl.jit.host {self.fn.__name__}>"

    def parsed(self):
        """``(FunctionDef, SourceInfo)`` of the host body (parsed once)."""
        if self._tree is None:
            from pypto.frontend.source import function_source

            self._tree = function_source(self.fn, self.source_snapshot)
        return self._tree

    @user_facing
    def compile(self, *args, config: RunConfig | None = None, **kwargs) -> "DistributedCompiledProgram":
        """Compile every per-rank program the host body launches for these arguments (none runs)."""
        cfg = config or RunConfig()
        dc = cfg.distributed_config
        if dc is None:
            raise PyptoError(f"'{self.name}' is a @pl.jit.host program: give RunConfig(distributed_config="
                             "DistributedConfig(device_ids=[...])) to compile it",
                             hint="DistributedConfig(device_ids=[0, 1]) runs two ranks")
        prog = DistributedCompiledProgram(self, dc, cfg, self._bind(args, kwargs))
        prog._dry_run()
        return prog

    @user_facing
    def __call__(self, *args, config: RunConfig | None = None, **kwargs):
        """Compile and run on the simulated cards. Pure ``pl.Out`` parameters left out at the end
        are allocated and returned (``y = host_fn(x, config=...)``)."""
        args, kwargs, outs = _allocate_outputs(self, tuple(args), dict(kwargs))
        prog = self.compile(*args, config=config, **kwargs)
        value = prog(*args, config=config, **kwargs)
        return (outs[0] if len(outs) == 1 else tuple(outs)) if outs else value

    def _bind(self, args, kwargs) -> dict:
        sig = inspect.signature(self.fn)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.fn.__name__}(): {e}") from None
        bound.apply_defaults()
        return dict(bound.arguments)


class ProgramHost:
    """The HOST method of a ``@pl.program`` (``@pl.function(level=pl.Level.HOST)``), run like a
    ``@pl.jit.host`` function; ``self.f(..., device=r)`` launches the program's Orchestration
    function ``f`` (compiled once, with its callees, as a single-card program)."""

    def __init__(self, program, method):
        self.program = program
        self.method = method
        self.name = method.name
        self._compiled: dict = {}
        self._lock = threading.Lock()

    def parsed(self):
        return self.method.node, self.method.src

    def scope(self) -> dict:
        return dict(self.method.globals_)

    def annotations(self) -> list:
        return list(zip(self.method.params, self.method.annotations))

    def _bind(self, args, kwargs) -> dict:
        names = self.method.params
        if len(args) > len(names):
            raise TypeError(f"{self.name}() takes {len(names)} arguments, got {len(args)}")
        out = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names or k in out:
                raise TypeError(f"{self.name}(): unexpected or repeated argument '{k}'")
            out[k] = v
        missing = [n for n in names if n not in out]
        if missing:
            raise TypeError(f"{self.name}() missing arguments: {', '.join(missing)}")
        return out

    def compiled_function(self, name: str, platform: str):
        """The single-card build of the program's function ``name`` (with every non-orchestration
        function it may call)."""
        from pypto.driver.build import compile as ir_compile
        from pypto.ir.nodes import Program
        from pypto.language.enums import FunctionType

        key = (name, platform)
        with self._lock:
            hit = self._compiled.get(key)
        if hit is not None and hit.artifacts_intact():
            return hit
        fns = [f for f in self.program.functions
               if f.name == name or f.func_type != FunctionType.Orchestration]
        sub = Program(f"{self.program.name}_{name}", tuple(fns), self.program.span)
        compiled = ir_compile(sub, platform=platform)
        with self._lock:
            self._compiled[key] = compiled
        return compiled


def compile_program_host(program, distributed_config: DistributedConfig, *, platform: str | None = None,
                         dump_passes=False):
    """``ir.compile(program, distributed_config=...)`` of a ``@pl.program`` with a HOST method
    (``dump_passes``: the host pipeline's stages go to ``<output_dir>/passes_dump/``)."""
    from pypto.frontend.host_methods import host_methods

    methods = [m for m in host_methods(program) if not m.is_subworker]
    if len(methods) != 1:
        raise PyptoError(f"program '{program.name}' has {len(methods)} HOST-level orchestrators; a multi-rank "
                         "program has exactly one (sub-workers: role=pl.Role.SubWorker)")
    cfg = RunConfig(platform=platform or "a2a3sim", distributed_config=distributed_config, dump_passes=dump_passes)
    prog = DistributedCompiledProgram(ProgramHost(program, methods[0]), distributed_config, cfg, None)
    sample = _sample_arguments(prog.host, prog.nranks)
    if sample is not None:
        # static parameter shapes: interpret the body now, as @pl.jit.host's compile does, so the
        # per-rank programs and the host collectives' next levels are built by ir.compile
        prog._sample = sample
        try:
            prog._dry_run()
        except Exception:  # noqa: BLE001 - e.g. a body that reads its inputs' values: the run builds them
            prog.launches = []
    return prog


def _sample_arguments(host: "ProgramHost", nranks: int) -> dict | None:
    """Zero tensors shaped by the HOST method's annotations, or None when a shape is not known. A
    ``pl.dynamic`` extent is sampled as the rank count: the one extent the host knows before a
    run, and what the reference's HOST methods use it for (``pl.Tensor[[NR, 1, N], ...]``); a wrong
    guess only means a dry run that fails (skipped) or builds a variant the run does not use."""
    import ast

    from pypto.ir.types import DynDim
    from pypto.language.dtypes import DataType

    scope = host.scope()
    out = {}
    for name, ann in host.annotations():
        node = ann
        while isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Subscript):
            node = node.slice   # pl.Out[pl.Tensor[...]]
        if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) and len(node.slice.elts) == 2
                and isinstance(node.slice.elts[0], (ast.List, ast.Tuple))):
            return None
        try:
            dims = [eval(compile(ast.Expression(d), "<annotation>", "eval"), scope) for d in node.slice.elts[0].elts]
            dtype = eval(compile(ast.Expression(node.slice.elts[1]), "<annotation>", "eval"), scope)
        except Exception:  # noqa: BLE001 - an annotation this sketch cannot evaluate: no dry run
            return None
        dims = [nranks if isinstance(d, DynDim) else d for d in dims]
        if not isinstance(dtype, DataType) or not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
            return None
        out[name] = torch.zeros(dims, dtype=dtype.torch)
    return out


class DistributedCompiledProgram:
    """A compiled multi-rank program: the host orchestrator and its per-rank programs for one
    :class:`DistributedConfig`. ``compiled(*args, config=...)`` runs it (outputs in place)."""

    __test__ = False

    def __init__(self, host: HostFunction, distributed_config: DistributedConfig, config: RunConfig, sample: dict):
        self.host = host
        self.distributed_config = distributed_config
        self.config = config
        self._sample = sample
        self.launches: list = []
        base = os.environ.get("PYPTO_PROG_BUILD_DIR") or tempfile.gettempdir()
        self._output_dir = Path(base) / f"{host.name}_distributed"
        self._output_dir.mkdir(parents=True, exist_ok=True)

    @property
    def nranks(self) -> int:
        """Ranks of the program (``len(device_ids)``)."""
        return len(self.distributed_config.device_ids)

    @property
    def output_dir(self) -> Path:
        """Where ``distributed_meta.json`` lists the per-rank programs (each in its own build dir)."""
        return self._output_dir

    @property
    def platform(self) -> str:
        """The simulated platform the per-rank programs are compiled for."""
        return self.config.platform

    def __fspath__(self) -> str:
        return str(self._output_dir)

    def _dry_run(self) -> None:
        world = support_dist.World(self.nranks, self.config.sim_seed)
        h = _interpreter(self, world, self._sample, self.config, compile_only=True,
                         alloc=lambda r, n: torch.empty(n, dtype=torch.uint8))   # never read: nothing runs
        h.run(h.tree.body)
        self.launches = [(ln.rank, ln.name, str(ln.compiled.output_dir)) for ln in h.launches_seen]
        # each window buffer's comm group (MaterializeCommDomainScopes), in allocation order
        self.window_groups = [(b.name, list(b.window.group.members)) for b in h.buffers]
        self.host_ir = h.host_ir
        self._output_dir.mkdir(parents=True, exist_ok=True)
        meta = {"name": self.host.name, "device_ids": list(self.distributed_config.device_ids),
                "platform": self.config.platform,
                "launches": [{"rank": r, "program": n, "output_dir": d} for r, n, d in self.launches]}
        (self._output_dir / "distributed_meta.json").write_text(json.dumps(meta, indent=1))

    @user_facing
    def __call__(self, *args, config: RunConfig | None = None, **kwargs):
        """Run once on fresh simulated cards; outputs land in the caller's tensors."""
        return execute_distributed_compiled(self, args, kwargs, config)

    def prepare(self, config: RunConfig | None = None, **kwargs) -> "DistributedWorker":
        """A :class:`DistributedWorker` holding one simulated card per rank for repeated runs."""
        return DistributedWorker([self], config, **kwargs)

    def __repr__(self) -> str:
        return f"DistributedCompiledProgram({self.host.name}, ranks={self.nranks}, platform={self.platform})"


def _interpreter(prog: DistributedCompiledProgram, world, bound: dict, cfg: RunConfig, *, alloc,
                 compile_only=False, flush=None) -> HostInterpreter:
    tree, src = prog.host.parsed()
    run_cfg = _rank_config(cfg)

    def compile_launch(fn, args, kwargs):
        if isinstance(fn, ProgramMethod):
            compiled = prog.host.compiled_function(fn.name, run_cfg.platform)
            names = compiled.param_names
            return compiled, list(args) + [kwargs[n] for n in names[len(args):] if n in kwargs]
        # a card-resident DeviceTensor specialises the kernel as its device-memory view does (the
        # launch still passes the DeviceTensor: the card runs on its memory)
        from pypto.runtime.device_tensor import DeviceTensor

        view = lambda a: a.device_view() if isinstance(a, DeviceTensor) else a   # noqa: E731
        compiled = fn.compile(*map(view, args), config=run_cfg, **{k: view(v) for k, v in kwargs.items()})
        sig = inspect.signature(fn.fn).bind(*args, **kwargs)
        sig.apply_defaults()
        return compiled, [sig.arguments[n] for n in compiled.param_names]

    scope = prog.host.scope()
    h = HostInterpreter(scope, src, prog.nranks, world, alloc=alloc, compile_launch=compile_launch,
                        flush=flush or (lambda plan: None), compile_only=compile_only,
                        builtin=lambda b: compile_builtin(b, prog.output_dir, run_cfg.platform))
    h.env.update(bound)
    if prog.host.program is not None:
        from pypto.frontend.host_methods import host_methods

        subs = {m.name: m.pyfunc for m in host_methods(prog.host.program) if m.is_subworker}
        h.env["self"] = ProgramSelf(prog.host.program, subs)
    h.dyn.update(bind_dynamic(prog.host.annotations(), bound, lambda n: bound.get(n, scope.get(n))))
    # the host pass pipeline (pypto.passes.host_pipeline) lowers the body the interpreter runs: with
    # this call's arguments bound, so the comm domains of a program with dynamic shapes are those
    # of this run's extents
    from pypto.passes.host_ir import HostIR, HostPassContext, run_host_pipeline

    dump = prog.output_dir / "passes_dump" if compile_only and cfg.dump_passes else None
    from pypto.frontend.host_inline import INLINE_KW
    from pypto.language.jit import JITFunction

    hctx = HostPassContext(prog.nranks, scope, env=dict(h.env), dyn=dict(h.dyn), src=src, dump_dir=dump,
                           is_dispatch=lambda f: isinstance(f, (JITFunction, ProgramMethod)), inline_kw=INLINE_KW)
    h.host_ir = run_host_pipeline(HostIR(tree), hctx)
    h.tree = h.host_ir.node
    return h


def _rank_config(cfg: RunConfig) -> RunConfig:
    """The RunConfig each rank's program compiles and runs with (no distributed_config: one card)."""
    import dataclasses

    fields = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg) if f.init}
    if fields.get("enable_chip_swimlane"):
        # a multi-rank swimlane co-enables dep_gen (as the reference's driver does): the converter
        # of each dispatch's records needs its task graph
        fields["enable_dep_gen"] = True
    fields["distributed_config"] = None
    fields["distributed_backend"] = None
    fields["backend_type"] = None
    return RunConfig(**fields)


def execute_distributed_compiled(compiled: DistributedCompiledProgram, args: tuple, kwargs: dict | None = None,
                                 config: RunConfig | None = None, *, workers: list | None = None,
                                 world_hook=None, sub_worker_overrides: dict | None = None,
                                 windows: "WindowStore | None" = None) -> Any:
    """Run ``compiled`` once with the caller's tensors (see the module docstring). ``workers``: the
    per-rank cards to run on (a :class:`DistributedWorker`'s); default fresh ones. ``world_hook(world)``
    sees the run's :class:`pypto.ops.support.dist.World` before anything runs. ``windows``: where
    the run's window buffers come from (a worker's :class:`WindowStore`); default fresh ones,
    freed when the run ends."""
    cfg = config or compiled.config
    if cfg.distributed_config is None:
        cfg = _with_dc(cfg, compiled.distributed_config)
    if cfg.platform != compiled.config.platform:
        from pypto.errors import SimulationError

        raise SimulationError(f"program was compiled for {compiled.config.platform} but RunConfig asks for "
                              f"{cfg.platform}; compile it again for that platform")
    args, kwargs, allocated_outs = _allocate_outputs(compiled.host, tuple(args), dict(kwargs or {}))
    bound = compiled.host._bind(args, kwargs)
    own = workers is None
    cards = workers or [ChipWorker(_rank_config(cfg)) for _ in range(compiled.nranks)]
    world = support_dist.World(compiled.nranks, cfg.sim_seed)
    if world_hook is not None:
        world_hook(world)   # e.g. the race check turns on access recording
    engine = get_engine(cfg.distributed_backend or (cfg.extra or {}).get("distributed_backend"))
    run_cfg = _rank_config(cfg)
    allocated = []

    def alloc(rank: int, nbytes: int) -> torch.Tensor:
        t = cards[rank].alloc_tensor([nbytes], torch.uint8)
        allocated.append((rank, t))
        return t.device_view()

    try:
        h = _interpreter(compiled, world, bound, cfg, alloc=alloc,
                         flush=lambda plan: engine.run_phase(plan, world, run_cfg))
        # every host tensor of a launch goes through the runtime's make_tensor_arg (looked up on its
        # module at each launch, so a caller's wrapper of it is used)
        from simpler_setup import torch_interop

        h.tensor_arg = lambda rank, t: torch_interop.make_tensor_arg(cards[rank], t)
        if windows is not None:
            h.window_alloc = windows.run_allocator(compiled, cards)
        if sub_worker_overrides and isinstance(h.env.get("self"), ProgramSelf):
            from pypto.runtime.distributed.continuous import override_call

            subs = h.env["self"]._subworkers
            for name, fn in sub_worker_overrides.items():
                if name in subs:
                    subs[name] = override_call(fn)
        if cfg.any_dfx_enabled():   # one directory per dispatch: dfx_outputs/rank{r}/d{k}
            h.dfx_base = compiled.output_dir / "dfx_outputs"
        value = h.run(h.tree.body)
        if allocated_outs:
            # the return-style call: the outputs it allocated are the result
            return allocated_outs[0] if len(allocated_outs) == 1 else tuple(allocated_outs)
        return value
    finally:
        for rank, t in allocated:
            cards[rank].free_tensor(t)
        if windows is not None:
            windows.end_run(compiled, cards)
        if own:
            for c in cards:
                c.close()


def _check_overrides(programs, overrides: dict) -> dict:
    """``sub_worker_overrides``: every name a ``role=pl.Role.SubWorker`` function of each program's
    host, every value callable; a clear ValueError otherwise (before any card starts)."""
    from pypto.frontend.host_methods import host_methods

    for p in programs:
        prog = p.host.program
        names = {m.name for m in host_methods(prog) if m.is_subworker} if prog is not None else set()
        unknown = sorted(set(overrides) - names)
        if unknown:
            raise ValueError(f"sub_worker_overrides: {', '.join(map(repr, unknown))} are not sub-workers of "
                             f"'{p.host.name}' (its sub-workers: {', '.join(sorted(names)) or 'none'})")
    for name, fn in overrides.items():
        if not callable(fn):
            raise ValueError(f"sub_worker_overrides['{name}'] must be callable (fn(args)), got {type(fn).__name__}")
    return dict(overrides)


def _allocate_outputs(host, args: tuple, kwargs: dict) -> tuple[tuple, dict, list]:
    """The return-style call ``compiled(a, b)`` of a host whose trailing parameters are pure
    ``pl.Out[pl.Tensor[[static shape], dtype]]``: those not given are allocated (zeros) and
    returned (the reference's convention, as for single-card programs). Otherwise unchanged."""
    import ast

    from pypto.language.dtypes import DataType

    anns = host.annotations()
    given = set(list(zip(*anns))[0][:len(args)]) if anns else set()
    given |= set(kwargs)
    missing = [(n, a) for n, a in anns if n not in given]
    if not missing:
        return args, kwargs, []
    scope = host.scope()
    out = []
    for name, ann in missing:
        if not (isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Attribute) and ann.value.attr == "Out"):
            return args, kwargs, []   # a missing input: _bind reports it
        node = ann.slice
        try:
            dims = [eval(compile(ast.Expression(d), "<annotation>", "eval"), scope) for d in node.slice.elts[0].elts]
            dtype = eval(compile(ast.Expression(node.slice.elts[1]), "<annotation>", "eval"), scope)
        except Exception:  # noqa: BLE001 - not a static tensor annotation: _bind reports the missing argument
            return args, kwargs, []
        if not isinstance(dtype, DataType) or not all(isinstance(d, int) for d in dims):
            return args, kwargs, []
        t = torch.zeros(dims, dtype=dtype.torch)
        kwargs[name] = t
        out.append(t)
    return args, kwargs, out


def _with_dc(cfg: RunConfig, dc) -> RunConfig:
    import dataclasses

    fields = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg) if f.init}
    fields["distributed_config"] = dc
    fields["backend_type"] = None
    return RunConfig(**fields)


class DistributedProgramHandle:
    """``worker.register(compiled)``: runs that one program on the worker's cards (``handle(*args)``);
    ``closed`` once the worker is closed, after which a call is a RuntimeError."""

    def __init__(self, worker: "DistributedWorker", compiled):
        self.worker, self.compiled = worker, compiled
        self.closed = False

    def __call__(self, *args, config: RunConfig | None = None, **kwargs):
        if self.closed:
            raise RuntimeError("a DistributedProgramHandle called after close() of its worker")
        return self.worker.run(self.compiled, *args, config=config, **kwargs)


class DistributedRunHandle:
    """One submitted run of a :class:`DistributedWorker` (``wait()`` returns its result or raises)."""

    def __init__(self, thread: threading.Thread, box: dict):
        self._thread, self._box = thread, box

    def wait(self, timeout: float | None = None):
        """Block until the run ends; return what the program returns, re-raise its error."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError("the distributed run is still going")
        if "error" in self._box:
            raise self._box["error"]
        return self._box.get("result")

    def done(self) -> bool:
        """True once the run has ended."""
        return not self._thread.is_alive()

    def result(self, timeout: float | None = None):
        """The reference's spelling of :meth:`wait`."""
        return self.wait(timeout)


class WindowStore:
    """The window buffers of a :class:`DistributedWorker`'s runs, in its cards' memory.

    Not persistent (the default): each run allocates its window buffers afresh (zero-filled) and
    frees them when it ends. ``persistent=True`` (the reference's ``prepare(persistent=True)``):
    each program's comm domains are allocated on its first run and kept — the same card memory —
    by every later run of that program on the worker, until ``close()``; ``reset=True`` (the
    reference's default for persistent workers) zeroes them before each reuse, ``reset=False``
    leaves what the previous run wrote (a program that carries state across runs in its windows,
    e.g. epoch counters or self-clearing credits). A window buffer is identified by its program,
    its slot (the name its allocation is bound to) and its occurrence in the run; a later run
    asking it with another size or comm group is a ValueError (the reference's "changed
    specification"), not a silent reallocation.

    ``_next_alloc_id`` counts the comm domains allocated on the cards (the reference's worker
    counts its domain allocations under that name): once per domain per run without
    persistence, once per domain and program with it."""

    def __init__(self, persistent: bool = False, reset: bool = False):
        self.persistent, self.reset = persistent, reset
        self._next_alloc_id = 0
        self._kept: dict = {}        # (program id, slot, occurrence) -> (spec, {rank: tensor})
        self._domains: set = set()   # (program id, domain) allocated (this run, or ever when persistent)
        self._run: dict = {}         # id(program) -> this run's allocations [(card, tensor)] and occurrences
        self._kept_handles: list = []   # (card, DeviceTensor) of the kept windows

    def run_allocator(self, program, cards):
        """The ``window_alloc`` of one run of ``program`` (see HostInterpreter.window_alloc)."""
        pid = id(program)
        state = self._run[pid] = {"allocated": [], "seen": {}}
        if not self.persistent:
            self._domains = {k for k in self._domains if k[0] != pid}

        def alloc(slot: str, nbytes: int, domain) -> dict:
            k = state["seen"].get(slot, 0)
            state["seen"][slot] = k + 1
            members = tuple(range(len(cards))) if domain is None or domain.devices is None else domain.devices
            spec = (nbytes, members)
            dkey = (pid, domain.name if domain is not None else f"slot:{slot}")
            key = (pid, slot, k)
            if self.persistent and key in self._kept:
                prior, tensors = self._kept[key]
                if prior != spec:
                    raise ValueError(f"persistent window buffer '{slot}' changed specification between runs of "
                                     f"the program: {prior[0]} bytes on ranks {list(prior[1])} before, {nbytes} "
                                     f"bytes on ranks {list(members)} now (close the worker and prepare a new one)")
                if self.reset:
                    for t in tensors.values():
                        t.zero_()
                return tensors
            if dkey not in self._domains:
                self._domains.add(dkey)
                self._next_alloc_id += 1
            tensors = {}
            for r in range(len(cards)):
                t = cards[r].alloc_tensor([nbytes], torch.uint8)
                tensors[r] = t.device_view()
                if self.persistent:
                    self._kept.setdefault(key, (spec, {}))
                    self._kept[key][1][r] = tensors[r]
                    self._kept_handles.append((r, t))
                else:
                    state["allocated"].append((r, t))
            return tensors

        return alloc

    def end_run(self, program, cards) -> None:
        """Free what the run allocated and does not keep."""
        state = self._run.pop(id(program), None)
        for r, t in (state or {}).get("allocated", []):
            cards[r].free_tensor(t)

    def close(self, cards) -> None:
        """Free the kept windows."""
        for r, t in self._kept_handles:
            cards[r].free_tensor(t)
        self._kept_handles = []
        self._kept.clear()


class DistributedWorker:
    """Simulated cards (one :class:`ChipWorker` per rank) kept across runs of prepared programs.

    ``worker(*args)`` / ``worker.run(program, *args)`` run and wait; ``worker.submit(...)`` returns a
    :class:`DistributedRunHandle`. Window buffers are allocated per run, or with ``persistent=True``
    kept across runs of each program (zeroed before each reuse unless
    ``reset_persistent_windows=False``): :class:`WindowStore`."""

    def __init__(self, programs, config: RunConfig | None = None, *, persistent: bool = False,
                 reset_persistent_windows: bool | None = None, callbacks: dict | None = None,
                 sub_worker_overrides: dict | None = None, inherited_host_tensors=None,
                 startup_timeout_s: float | None = None):
        # The reference's keywords. ``callbacks`` is its other name for ``sub_worker_overrides``;
        # ``inherited_host_tensors`` (host tensors a forked rank process inherits) and
        # ``startup_timeout_s`` (rank process start-up) have nothing to do in process, so they are
        # checked and kept. ``reset_persistent_windows`` defaults to ``persistent`` (the reference's
        # rule); asking for a reset without persistence is its ValueError.
        if reset_persistent_windows is None:
            reset_persistent_windows = bool(persistent)
        elif reset_persistent_windows and not persistent:
            raise ValueError("DistributedWorker reset_persistent_windows=True requires persistent=True")
        if callbacks and sub_worker_overrides:
            raise TypeError("DistributedWorker: give callbacks or sub_worker_overrides, not both (the same thing)")
        sub_worker_overrides = sub_worker_overrides or callbacks
        inherited = tuple(inherited_host_tensors) if inherited_host_tensors is not None else ()
        if not all(isinstance(t, torch.Tensor) for t in inherited):
            raise TypeError("DistributedWorker inherited_host_tensors entries must be torch.Tensor objects")
        if startup_timeout_s is not None and not (isinstance(startup_timeout_s, (int, float)) and startup_timeout_s > 0):
            raise ValueError(f"DistributedWorker startup_timeout_s must be a positive number, got {startup_timeout_s!r}")
        self.inherited_host_tensors = inherited
        if isinstance(programs, DistributedCompiledProgram):
            programs = [programs]
        if not programs:
            raise ValueError("DistributedWorker needs at least one program")
        first = programs[0]
        for p in programs[1:]:
            if p.distributed_config.device_ids != first.distributed_config.device_ids or p.platform != first.platform:
                raise ValueError("every program of a DistributedWorker must use the same device_ids and platform")
        self.programs = list(programs)
        self.config = config or first.config
        self.sub_worker_overrides = _check_overrides(self.programs, sub_worker_overrides or {})
        self.cards = [ChipWorker(_rank_config(self.config)) for _ in range(first.nranks)]
        self.persistent = bool(persistent)
        self.reset_persistent_windows = bool(reset_persistent_windows)
        # the window buffers of the runs (the reference's worker is ``_w``; ours counts its comm
        # domain allocations under the reference's name, ``_w._next_alloc_id``)
        self._w = WindowStore(self.persistent, self.reset_persistent_windows)
        self._failed: BaseException | None = None
        self._lock = threading.Lock()
        self._closed = False
        # resident tensors this worker allocated and has not freed, as (card, DeviceTensor):
        # close() frees them (a program's weights need no explicit free_tensor)
        self._owned_tensors: list[tuple[int, Any]] = []
        self._handles: list[DistributedProgramHandle] = []

    def run(self, program, *args, config: RunConfig | None = None, **kwargs):
        """Run ``program`` (one of the prepared ones) once on these cards."""
        if self._closed:
            raise RuntimeError("DistributedWorker.run called after close()")
        if program not in self.programs:
            raise ValueError(f"{program!r} was not prepared on this worker")
        with self._lock:
            if self._failed is not None:
                # the kept windows are in whatever state the failed run left them: running on them
                # would compute from half-written data
                raise RuntimeError(f"an earlier run on this persistent DistributedWorker failed ({self._failed!r}); "
                                   "its kept windows are not reusable: close it and prepare a new one")
            try:
                return execute_distributed_compiled(program, args, kwargs, config or self.config, workers=self.cards,
                                                    sub_worker_overrides=self.sub_worker_overrides, windows=self._w)
            except BaseException as e:
                if self.persistent:
                    self._failed = e
                raise

    def __call__(self, *args, config: RunConfig | None = None, **kwargs):
        """Run the one prepared program (with several, which one is meant is ambiguous: a TypeError)."""
        if len(self.programs) != 1:
            raise TypeError(f"worker(*args) is ambiguous: this DistributedWorker holds {len(self.programs)} "
                            "programs; call worker.run(compiled, *args) or worker.register(compiled)(*args)")
        return self.run(self.programs[0], *args, config=config, **kwargs)

    def register(self, program) -> "DistributedProgramHandle":
        """A handle that runs ``program`` (one of the prepared ones, by identity) on these cards."""
        if self._closed:
            raise RuntimeError("DistributedWorker.register called after close()")
        if not any(program is p for p in self.programs):
            raise ValueError(f"{program!r} was not prepared on this worker (register takes one of its programs)")
        h = DistributedProgramHandle(self, program)
        self._handles.append(h)
        return h

    def submit(self, program, *args, config: RunConfig | None = None, **kwargs) -> DistributedRunHandle:
        """Start a run in the background."""
        box: dict = {}

        def go():
            try:
                box["result"] = self.run(program, *args, config=config, **kwargs)
            except BaseException as e:
                box["error"] = e
        t = threading.Thread(target=go, daemon=True)
        t.start()
        return DistributedRunHandle(t, box)

    # -- device memory of the cards (tensors resident between runs)
    def alloc_tensor(self, shape, dtype, *, init=None, worker_id: int = 0):
        """A :class:`DeviceTensor` resident on card ``worker_id`` (rank), from ``init`` or zeros."""
        t = self._card(worker_id).alloc_tensor(shape, dtype, init=init)
        self._owned_tensors.append((worker_id, t))
        return t

    def _disown(self, t) -> None:
        self._owned_tensors = [(r, o) for r, o in self._owned_tensors if o is not t]

    def free_tensor(self, t, *, worker_id: int | None = None) -> None:
        """Release a resident tensor (of whichever card holds it when ``worker_id`` is None)."""
        from pypto.runtime.device_tensor import StackedDeviceTensor

        if isinstance(t, StackedDeviceTensor):
            self.free_stacked_tensor(t)
            return
        cards = [self._card(worker_id)] if worker_id is not None else \
            [c for c in self.cards if t.buffer is not None and t.buffer.owner() is c]
        for c in cards:
            c.free_tensor(t)
        self._disown(t)

    def alloc_stacked_tensor(self, host, *, worker_ids=None):
        """One resident slice ``host[i]`` per card ``worker_ids[i]`` (default every rank), as a
        :class:`StackedDeviceTensor` the host orchestrator indexes per rank."""
        from pypto.runtime.device_tensor import StackedDeviceTensor

        ids = list(range(len(self.cards))) if worker_ids is None else list(worker_ids)
        if host.shape[0] != len(ids):
            raise ValueError(f"alloc_stacked_tensor: {host.shape[0]} slices for {len(ids)} workers")
        parts = [self._card(r).alloc_tensor(tuple(host.shape[1:]), host.dtype, init=host[i].contiguous())
                 for i, r in enumerate(ids)]
        self._owned_tensors.extend(zip(ids, parts))
        return StackedDeviceTensor(parts, tuple(host.shape), ids)

    def free_stacked_tensor(self, t) -> None:
        """Release every shard of a :class:`StackedDeviceTensor`."""
        for r, part in zip(t.worker_ids, t.shards):
            self._card(r).free_tensor(part)
            self._disown(part)

    def copy_stacked_from(self, t, host) -> None:
        """Read every shard of ``t`` back into ``host[i]`` (a ``[B, *tail]`` host tensor)."""
        for i, part in enumerate(t.shards):
            host[i].copy_(part.device_view())

    def release_inherited_host_tensor_refs(self) -> None:
        """The reference drops the host tensors its forked chip processes inherited; the in-process
        engine forks nothing, so there is nothing to release."""

    def _card(self, worker_id: int):
        if not 0 <= worker_id < len(self.cards):
            raise ValueError(f"worker_id {worker_id} is not a card of this worker (0..{len(self.cards) - 1})")
        return self.cards[worker_id]

    def close(self) -> None:
        """Release the cards."""
        if not self._closed:
            for r, t in self._owned_tensors:   # what the caller did not free
                self.cards[r].free_tensor(t)
            self._owned_tensors = []
            for h in self._handles:
                h.closed = True
            self._w.close(self.cards)
            for c in self.cards:
                c.close()
            self._closed = True

    def __enter__(self) -> "DistributedWorker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
