"""The Ray engine (``RunConfig(distributed_backend="ray")``): every rank of a multi-rank program is a
Ray actor, on an existing cluster or on a local one started for the run (docs/distributed.md,
"Engines").

Where memory lives. Between phases the host (this process) holds every tensor, windows included,
as with the in-process engine, so the host interpreter and the host collectives are unchanged. A
phase (:meth:`RayEngine.run_phase`) goes in three rounds:

1. *install*: each rank's actor receives its copy of every window and the bytes its launches'
   tensor arguments cover (one span per host storage, so views that alias keep aliasing there);
2. *execute*: the active ranks run their launches concurrently, each in its own simulator, exactly
   as the in-process engine runs them. A rank's own window is ordinary memory of its actor; an
   access of another rank's window (``remote_load`` / ``remote_store`` / ``put`` / ``get`` /
   ``notify``) is an actor call to the owner (:class:`RayWorld`), served by another thread of that
   actor while its kernel runs;
3. *collect*: once every rank finished (a peer may still write into a finished rank's window), each
   actor returns its windows and the Out / InOut arguments of its launches; the host copies them
   back into its tensors.

A hub actor (:class:`_Hub`) holds what the ranks share: the collectives' rendezvous (the last
arrival computes the result there, with the run's seeded rank order), the progress counter and the
blocked set of the deadlock check. The seeded order's random state and the rendezvous counters go
to the hub at the start of a phase and come back at its end, so a run draws the same orders as on
the in-process engine: results are bit-identical for the same ``sim_seed`` (tests/distributed/
test_ray_engine.py), for programs whose result their synchronisation decides (a racy program's
result depends on timing, on either engine).

Not supported here: the race check (pypto.debug.dist_races needs every access in one process; it
refuses this engine).
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import torch

from pypto.errors import PyptoError, SimulationError
from pypto.ops.support import dist as support_dist
from pypto.runtime.distributed.engine import Engine, RankPlan, raise_root_cause

# the default size of a local cluster's object store: windows and arguments of a phase pass
# through it; small, since CI machines are (2 CPUs, a few GiB)
DEFAULT_OBJECT_STORE_MB = 512
_ALIGN = 64   # shipped byte spans start on this boundary, so every dtype's views stay aligned


def _ray():
    try:
        import ray
    except ImportError:
        raise PyptoError("distributed_backend='ray' needs the optional dependency ray",
                         hint="pip install 'ray>=2.60' (or the test extras: pip install -e '.[test]')") from None
    return ray


def ensure_ray(address: str | None = None):
    """The ``ray`` module, connected: an already initialised Ray (``ray.init(address=...)`` by the
    caller) is used as it is; else ``address`` / ``$PYPTO_RAY_ADDRESS`` / ``$RAY_ADDRESS`` names a
    cluster to join; else a local cluster starts with ``$PYPTO_RAY_NUM_CPUS`` CPUs (default: the
    machine's) and ``$PYPTO_RAY_OBJECT_STORE_MB`` MiB of object store (default 512)."""
    ray = _ray()
    if ray.is_initialized():
        return ray
    address = address or os.environ.get("PYPTO_RAY_ADDRESS") or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
        return ray
    # local workers must import this pypto (a source checkout need not be installed)
    root = str(Path(__file__).resolve().parents[3])
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    ray.init(num_cpus=int(os.environ.get("PYPTO_RAY_NUM_CPUS", os.cpu_count() or 2)),
             object_store_memory=int(os.environ.get("PYPTO_RAY_OBJECT_STORE_MB", DEFAULT_OBJECT_STORE_MB)) << 20,
             include_dashboard=False, log_to_driver=False, ignore_reinit_error=True,
             runtime_env={"env_vars": {"PYTHONPATH": path}})
    return ray


# ------------------------------------------------------------------------------ tensors over the wire
def _raw(storage) -> torch.Tensor:
    """A storage as a flat uint8 tensor."""
    return torch.empty(0, dtype=torch.uint8).set_(storage, 0, (storage.nbytes(),), (1,))


def _view(base: torch.Tensor, desc: tuple) -> torch.Tensor:
    """The typed view ``desc`` = (byte offset, shape, stride, dtype) of the uint8 tensor ``base``."""
    off, shape, stride, dtype = desc
    es = torch.empty(0, dtype=dtype).element_size()
    start = base.storage_offset() + off
    return torch.empty(0, dtype=dtype).set_(base.untyped_storage(), start // es, shape, stride)


def _span(t: torch.Tensor) -> int:
    """Bytes from a view's first element to just past its last."""
    if t.numel() == 0:
        return 0
    return (1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))) * t.element_size()


def _desc(t: torch.Tensor, base_off: int) -> tuple:
    return (t.storage_offset() * t.element_size() - base_off, tuple(t.shape), tuple(t.stride()), t.dtype)


def _tensor_of(a):
    """A launch argument as a torch tensor (a resident DeviceTensor as its device view), or None."""
    if isinstance(a, torch.Tensor):
        return a
    view = getattr(a, "device_view", None)
    return view() if callable(view) else None


def _program_spec(compiled) -> tuple:
    """What an actor needs to rebuild a compiled per-rank program without the build directory
    (a remote node has none): its meta and generated sources."""
    if not compiled.sources:
        compiled.load_modules()
    return (str(compiled.output_dir), compiled.meta.get("cache_key")), \
        (compiled.meta, dict(compiled.sources), compiled.platform, str(compiled.output_dir))


def _encode_rank(world: support_dist.World, rank: int, launches: list) -> tuple[dict, list]:
    """The install job of one rank and, per Out / InOut argument, ``(launch i, arg j, host tensor)``."""
    spans: dict[int, list] = {}    # storage pointer -> [storage, lo, hi]
    encoded, outs = [], []
    for i, ln in enumerate(launches):
        params = (getattr(ln.compiled, "meta", None) or {}).get("params", [])
        directions = [p.get("direction") for p in params]
        args = []
        for j, a in enumerate(ln.args):
            t = _tensor_of(a)
            if t is None:
                args.append(("V", a))
                continue
            hit = world._by_storage.get(t.untyped_storage().data_ptr())
            if hit is not None:
                w, owner = hit
                if owner != rank:
                    raise SimulationError(f"launch '{ln.name}' on rank {rank} got rank {owner}'s copy of window "
                                          f"'{w.name}'; a launch receives its own rank's window views")
                base = w.tensors[owner]
                args.append(("W", world.windows.index(w), _desc(t, base.storage_offset() * base.element_size())))
                continue
            ptr = t.untyped_storage().data_ptr()
            lo = t.storage_offset() * t.element_size()
            hi = lo + _span(t)
            ent = spans.setdefault(ptr, [t.untyped_storage(), lo, hi])
            ent[1], ent[2] = min(ent[1], lo), max(ent[2], hi)
            args.append(("S", ptr, t))
            if j < len(directions) and directions[j] in ("Out", "InOut"):
                outs.append((i, j, t))
        spec_key, spec = _program_spec(ln.compiled)
        # a dispatch with a DFX directory (the run asks for DFX output): the actor files its
        # outputs in a directory of its own node and ships them back (see _Rank.execute)
        encoded.append((ln.name, spec_key, spec, args, ln.dfx_dir is not None))
    # storages: ship the covered byte span, starting on an aligned boundary
    index, storages = {}, []
    for ptr, (st, lo, hi) in spans.items():
        lo -= lo % _ALIGN
        index[ptr] = (len(storages), lo)
        storages.append(_raw(st)[lo:hi].clone())
    for _, _, _, args, _ in encoded:
        for k, a in enumerate(args):
            if a[0] == "S":
                sidx, lo = index[a[1]]
                args[k] = ("S", sidx, _desc(a[2], lo))
    # each window with its comm group (id and members: a sub-world group counts peers in its own ranks)
    windows = [(w.name, w.tensors[rank].clone(), w.group.gid, w.group.members) for w in world.windows]
    return {"rank": rank, "windows": windows, "storages": storages, "launches": encoded}, outs


# ------------------------------------------------------------------------------ the world of one actor
class RayWorld(support_dist.World):
    """A rank actor's view of the world: its own windows are local memory; another rank's window
    is reached through that rank's actor; rendezvous and the deadlock check through the hub."""

    def __init__(self, actor: "_Rank", nranks: int):
        super().__init__(nranks, None)
        self.actor = actor

    def _target(self, local: torch.Tensor, peer: int, op: str) -> tuple[int, int, tuple]:
        """(world rank of group rank ``peer``, window index, descriptor of ``local`` in its window)."""
        w, owner = self.locate(local, op)
        g = w.group
        if not 0 <= peer < len(g.members):
            raise SimulationError(f"{op}: peer {peer} is out of range for a group of {len(g.members)} ranks")
        base = w.tensors[owner]
        return g.members[peer], self.windows.index(w), _desc(local, base.storage_offset() * base.element_size())

    def _bump_hub(self) -> None:
        self.actor.hub.bump.remote()   # fire and forget: progress for the deadlock check

    def peer_read_into(self, rank, dst, local, peer, op, where) -> None:
        target, win, desc = self._target(local, peer, op)
        if target == self.actor.rank:
            super().peer_read_into(rank, dst, local, peer, op, where)
            return
        data = _ray().get(self.actor.peers[target].read.remote(win, desc))
        dst.copy_(data if data.shape == dst.shape else data.reshape(dst.shape))

    def peer_write(self, rank, local, peer, data, atomic, op, where) -> None:
        target, win, desc = self._target(local, peer, op)
        if target == self.actor.rank:
            super().peer_write(rank, local, peer, data, atomic, op, where)
        else:
            _ray().get(self.actor.peers[target].write.remote(win, desc, data.contiguous(), atomic))
        self._bump_hub()

    def peer_notify(self, rank, t, peer, cell, value, op) -> None:
        target, win, desc = self._target(t, peer, "pld.system.notify")
        if target == self.actor.rank:
            super().peer_notify(rank, t, peer, cell, value, op)
        else:
            _ray().get(self.actor.peers[target].notify.remote(win, desc, cell, value, op))
        self._bump_hub()

    def block(self, rank, what, ready):
        state = [None, 0]
        while True:
            with self.lock:
                ok = bool(ready())
            status, payload, state = _ray().get(self.actor.hub.poll.remote(rank, what, ok, None, state))
            if status == "ready":
                return
            if status == "error":
                raise SimulationError(payload)
            time.sleep(support_dist.POLL_SLEEP_S)
            yield support_dist.WAIT_POLL_CYCLES

    def rendezvous(self, rank, key, n, part, where, finish):
        ray = _ray()
        full = ray.get(self.actor.hub.arrive.remote(rank, key, n, part, where, finish))
        state = [None, 0]
        while True:
            status, payload, state = ray.get(self.actor.hub.poll.remote(rank, where, False, full, state))
            if status == "ready":
                return payload
            if status == "error":
                raise SimulationError(payload)
            time.sleep(support_dist.POLL_SLEEP_S)
            yield support_dist.WAIT_POLL_CYCLES


# ------------------------------------------------------------------------------ actors
class _Hub:
    """What the ranks share during a phase (see the module docstring); one method call at a time."""

    def __init__(self):
        self.world = support_dist.World(1, None)

    def begin(self, nranks: int, rng_state, seq: dict, idle: list) -> None:
        w = support_dist.World(nranks, None)
        w._order_rng.setstate(rng_state)
        w._seq = dict(seq)
        w.finished = set(idle)
        self.world = w

    def end(self) -> tuple:
        return self.world._order_rng.getstate(), dict(self.world._seq)

    def bump(self) -> None:
        with self.world.lock:
            self.world.bump()

    def rank_done(self, rank: int, failure: str | None) -> None:
        # the rank's error travels as its message (an exception may not pickle); the world only
        # names failed ranks with it
        self.world.rank_done(rank, failure)

    def arrive(self, rank, key, n, part, where, finish):
        with self.world.lock:
            return self.world.arrive(rank, key, n, part, where, finish).full

    def poll(self, rank, what, ready, full, state):
        w = self.world
        with w.lock:
            rdv = w._rdv.get(full) if full is not None else None
            if rdv is not None:
                ready = rdv.done
            try:
                ok = w.check(rank, what, ready, state)
            except SimulationError as e:
                w.failed.setdefault(rank, str(e))
                return "error", str(e), state
            if not ok:
                return "wait", None, state
            return "ready", (w.take(rdv) if rdv is not None else None), state


class _Rank:
    """One rank: its windows, its launches' memory, its simulator runs (see the module docstring).
    A threaded actor: peers' reads and writes are served while the kernel thread runs."""

    def __init__(self, rank: int, nranks: int):
        self.rank, self.nranks = rank, nranks
        self.hub = None
        self.peers: list = []
        self.programs: dict = {}
        self.world: RayWorld | None = None
        self.job = None

    def connect(self, hub, peers) -> None:
        self.hub, self.peers = hub, list(peers)

    def ping(self) -> int:
        return self.rank

    # -- a phase
    def install(self, job: dict) -> None:
        world = RayWorld(self, self.nranks)
        for name, data, gid, members in job["windows"]:
            while len(world.groups) <= gid:
                world.groups.append(None)
            if world.groups[gid] is None:
                world.groups[gid] = support_dist.CommGroup(gid, members)
            world.add_window(name, {self.rank: data}, world.groups[gid])
        self.world, self.job = world, job

    def execute(self, config) -> tuple:
        """Run this rank's launches: ``(None or the failure (an exception that survives pickling),
        {launch index: {relative path: bytes}})``, the second the DFX files each dispatch that asked
        for them wrote. They are written into a temporary directory of the actor's node (the host's
        ``dfx_outputs/rank{r}/d{k}`` need not exist there) and travel back with the result, so
        per-dispatch DFX works on a remote node as in process."""
        import tempfile

        from pypto.driver.compiled import CompiledProgram
        from pypto.runtime.simulator import dfx_dir

        world, job = self.world, self.job
        storages = job["storages"]
        err = None
        dfx: dict = {}
        support_dist.install(world, self.rank)
        try:
            for i, (name, key, (meta, sources, platform, out_dir), args, wants_dfx) in enumerate(job["launches"]):
                prog = self.programs.get(key)
                if prog is None:
                    prog = self.programs[key] = CompiledProgram(None, None, Path(out_dir), platform, meta,
                                                                sources=sources)
                if not wants_dfx:
                    prog(*[self._arg(a, storages) for a in args], config=config)
                    continue
                with tempfile.TemporaryDirectory(prefix=f"pypto-rank{self.rank}-d") as tmp:
                    try:
                        with dfx_dir(tmp):
                            prog(*[self._arg(a, storages) for a in args], config=config)
                    finally:   # what a failed dispatch wrote is shipped too (its partial trace)
                        dfx[i] = {str(f.relative_to(tmp)): f.read_bytes()
                                  for f in sorted(Path(tmp).rglob("*")) if f.is_file()}
        except BaseException as e:   # returned to the host, which raises the root cause
            err = e
        finally:
            support_dist.install(None, None)
            _ray().get(self.hub.rank_done.remote(self.rank, None if err is None else str(err)))
        return (None if err is None else _portable(err)), dfx

    def collect(self) -> tuple[list, list]:
        """This rank's windows and every tensor argument of its launches, after the phase."""
        job, world = self.job, self.world
        windows = [w.tensors[self.rank] for w in world.windows]
        args = [[self._arg(a, job["storages"]).clone() if a[0] == "S" else None for a in launch[3]]
                for launch in job["launches"]]
        self.job = self.world = None
        return windows, args

    def _arg(self, a, storages):
        kind = a[0]
        if kind == "V":
            return a[1]
        if kind == "W":
            return _view(self.world.windows[a[1]].tensors[self.rank], a[2])
        return _view(storages[a[1]], a[2])

    # -- served to peers (under the world's lock: the kernel thread reads the same memory)
    def read(self, win: int, desc: tuple) -> torch.Tensor:
        w = self.world
        with w.lock:
            return _view(w.windows[win].tensors[self.rank], desc).clone()

    def write(self, win: int, desc: tuple, data: torch.Tensor, atomic: bool) -> None:
        w = self.world
        with w.lock:
            dst = _view(w.windows[win].tensors[self.rank], desc)
            if atomic:
                dst.add_(data)
            else:
                dst.copy_(data)
            w.bump()

    def notify(self, win: int, desc: tuple, cell: tuple, value: int, op: str) -> None:
        w = self.world
        with w.lock:
            t = _view(w.windows[win].tensors[self.rank], desc)
            if op == "Set":
                t[cell] = value
            else:
                t[cell] += value
            w.bump()


def _portable(err: BaseException) -> BaseException:
    """``err`` if it pickles back to an equal error, else a SimulationError with its text."""
    import pickle

    try:
        back = pickle.loads(pickle.dumps(err))
        if type(back) is type(err) and str(back) == str(err):
            return err
    except Exception:
        pass
    return SimulationError(f"{type(err).__name__}: {err}")


class _Pool:
    """The hub and one actor per rank, started once per process and rank count, reused by runs."""

    def __init__(self, ray, nranks: int):
        hub_cls = ray.remote(_Hub)
        rank_cls = ray.remote(_Rank)
        # num_cpus=0: the actors are mostly waiting on each other; they must all be placed even on
        # a 2-CPU machine. max_concurrency: the kernel thread plus one served call per peer.
        self.hub = hub_cls.options(num_cpus=0).remote()
        self.ranks = [rank_cls.options(num_cpus=0, max_concurrency=nranks + 4).remote(r, nranks)
                      for r in range(nranks)]
        ray.get([a.connect.remote(self.hub, self.ranks) for a in self.ranks])


_POOLS: dict[int, _Pool] = {}
_POOLS_LOCK = threading.Lock()


def _pool(ray, nranks: int) -> _Pool:
    with _POOLS_LOCK:
        p = _POOLS.get(nranks)
        if p is None:
            p = _POOLS[nranks] = _Pool(ray, nranks)
        return p


def shutdown() -> None:
    """Drop the actors (the next run starts new ones); ``ray.shutdown()`` is the caller's."""
    ray = _ray()
    with _POOLS_LOCK:
        for p in _POOLS.values():
            for a in [p.hub, *p.ranks]:
                ray.kill(a)
        _POOLS.clear()


def _write_dfx(launches: list, dfx: dict) -> None:
    """Write the DFX files an actor shipped back under each launch's ``dfx_dir`` (relative paths
    from the actor; one escaping the directory is refused, not written elsewhere)."""
    for i, files in dfx.items():
        base = Path(launches[i].dfx_dir).resolve()
        for rel, data in files.items():
            dst = (base / rel).resolve()
            if base not in dst.parents:
                raise SimulationError(f"a rank's DFX file '{rel}' lies outside its dispatch directory {base}")
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(data)


class RayEngine(Engine):
    """Every rank a Ray actor (see the module docstring)."""

    name = "ray"

    def run_phase(self, plan: RankPlan, world: support_dist.World, config) -> None:
        if world.record_accesses:
            raise PyptoError("the rank race check (pypto.debug.dist_races) runs on the in-process engine",
                             hint="drop distributed_backend='ray' for find_rank_races")
        ray = ensure_ray((config.extra or {}).get("ray_address"))
        n = plan.nranks
        pool = _pool(ray, n)
        world.join_all()
        active = [r for r in range(n) if plan.launches.get(r)]
        jobs, outs = {}, {}
        for r in range(n):
            jobs[r], outs[r] = _encode_rank(world, r, plan.launches.get(r, []))
        ray.get(pool.hub.begin.remote(n, world._order_rng.getstate(), dict(world._seq),
                                      [r for r in range(n) if r not in active]))
        ray.get([pool.ranks[r].install.remote(jobs[r]) for r in range(n)])
        del jobs
        results = ray.get([pool.ranks[r].execute.remote(config) for r in active])
        failures = [f for f, _ in results]
        for r, (_, dfx) in zip(active, results):   # each dispatch's DFX files, into its host directory
            _write_dfx(plan.launches[r], dfx)
        collected = ray.get([pool.ranks[r].collect.remote() for r in range(n)])
        rng_state, seq = ray.get(pool.hub.end.remote())
        world._order_rng.setstate(rng_state)
        world._seq = seq
        for r, (windows, args) in zip(range(n), collected):
            for w, data in zip(world.windows, windows):
                w.tensors[r].copy_(data)
            for i, j, host in outs[r]:
                host.copy_(args[i][j])
        raise_root_cause({r: e for r, e in zip(active, failures) if e is not None})
