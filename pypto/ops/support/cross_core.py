"""Reference semantics of the cross-core pipe ops (:mod:`pypto.ops.cross_core`) for the reference
executor (``torch_codegen``), which has no simulated time: a Group call runs each member core (the
AIC function, the AIV function on each of its lanes) in its own thread, pipes are FIFOs guarded by
one condition variable, and a pop waits until a push arrives. When every live member waits, the
group is deadlocked: each waiter raises (naming its op, core, pipe and line) instead of hanging.

Lane semantics match the simulator's (:mod:`pypto.runtime.cross_core`): a vector lane's push goes
to its own queue; the cube's pop takes one slot of every lane (joining split halves, or lane 0's
copy unsplit); the cube's push sends each lane its half (split) or the whole tile; a lane's pop
takes its own queue. Slot counts are not modelled here (a push never waits): ring exhaustion is a
matter of timing, which the simulator models and the reference does not.
"""
from __future__ import annotations

import threading

import torch

_local = threading.local()


class _GroupState:
    def __init__(self, lanes: int):
        self.cv = threading.Condition()
        self.lanes = max(lanes, 1)
        self.queues: dict = {}
        self.live = 0
        self.waiting = 0
        self.failed: BaseException | None = None
        self.sync_count = 0   # member threads at the current syncall
        self.sync_gen = 0     # syncalls completed

    def queue(self, direction: str, pid, lane: int) -> list:
        return self.queues.setdefault((direction, pid or 0, lane), [])


def _ctx():
    c = getattr(_local, "ctx", None)
    if c is None:
        from pypto.errors import SimulationError

        raise SimulationError("a cross-core pipe op ran outside a mixed-kernel group (an AIC / AIV function "
                              "called from a Group function)")
    return c


def _wait(st: _GroupState, cond, what: str) -> None:
    """Wait on ``st.cv`` (held) until ``cond()``; raise if the whole group waits."""
    from pypto.errors import SimulationError

    st.waiting += 1
    try:
        while not cond():
            if st.failed is not None:
                raise SimulationError(f"mixed-kernel group stopped: another core failed ({st.failed})")
            if st.waiting >= st.live:
                st.failed = SimulationError(f"deadlock in the reference executor: {what} can never complete "
                                            f"(every core of the group waits)")
                st.cv.notify_all()
                raise st.failed
            st.cv.wait(0.05)
    finally:
        st.waiting -= 1


def _halves(t, split: int, lanes: int) -> list:
    if not split or lanes < 2:
        return [t] * lanes
    axis = 0 if split in (1, 3) else 1
    n = t.shape[axis]
    first = (n + 1) // 2 if split in (3, 4) else n // 2
    return [t.narrow(axis, 0, first), t.narrow(axis, first, n - first)]


def push(direction: str, pid, tile: torch.Tensor, split: int, where: str = "") -> None:
    """``tpush_to_aic`` (direction ``v2c``) / ``tpush_to_aiv`` (``c2v``)."""
    st, side, lane = _ctx()
    with st.cv:
        if direction == "v2c":
            st.queue(direction, pid, lane).append(tile.clone())
        else:
            for ln, part in enumerate(_halves(tile, split, st.lanes)):
                st.queue(direction, pid, ln).append(part.clone())
        st.cv.notify_all()


def pop(direction: str, pid, split: int, where: str = "") -> torch.Tensor:
    """``tpop_from_aiv`` (``v2c``, on the cube) / ``tpop_from_aic`` (``c2v``, on a vector lane)."""
    st, side, lane = _ctx()
    lanes = list(range(st.lanes)) if direction == "v2c" else [lane]
    with st.cv:
        _wait(st, lambda: all(st.queue(direction, pid, ln) for ln in lanes),
              f"tpop on pipe {direction} id {pid or 0} ({side}{lane if side == 'aiv' else ''}) at {where}")
        parts = [st.queue(direction, pid, ln).pop(0) for ln in lanes]
    if direction == "v2c" and split and len(parts) > 1:
        return torch.cat(parts, dim=0 if split in (1, 3) else 1)
    return parts[0]


def event_set(event_id: int, core_type=None) -> None:
    """``sync_set``: a vector lane's event is for the cube; the cube's wakes every lane."""
    st, side, lane = _ctx()
    with st.cv:
        if side == "aiv":
            st.queue("ev>aic", int(event_id), lane).append(1)
        else:
            for ln in range(st.lanes):
                st.queue("ev>aiv", int(event_id), ln).append(1)
        st.cv.notify_all()


def event_wait(event_id: int, core_type=None) -> None:
    """``sync_wait``: the cube takes one set of every lane; a lane takes one set of the cube."""
    st, side, lane = _ctx()
    key = "ev>aic" if side == "aic" else "ev>aiv"
    lanes = list(range(st.lanes)) if side == "aic" else [lane]
    with st.cv:
        _wait(st, lambda: all(st.queue(key, int(event_id), ln) for ln in lanes),
              f"sync_wait(event {int(event_id)}) ({side}{lane if side == 'aiv' else ''})")
        for ln in lanes:
            st.queue(key, int(event_id), ln).pop(0)


def syncall(core_type: str, block=(0, 1)) -> None:
    """``syncall`` in the reference executor: a barrier of the participating member threads of a
    group (a one-block InCore kernel: a barrier of one). Across the blocks of a multi-block task it
    is refused: this executor runs the blocks one after another, so a block could never see the later
    blocks' arrivals (a silently different result otherwise)."""
    from pypto.errors import SimulationError

    n = block[1] if len(block) > 1 else 1
    if n > 1:
        raise SimulationError(f"the reference executor runs the {n} blocks of a task one after another and cannot "
                              "hold them at a syncall; compare this kernel with the simulator's result instead")
    ctx = getattr(_local, "ctx", None)
    if ctx is None:
        return
    st, side, lane = ctx
    parts = {"aiv_only": st.lanes, "aic_only": 1}.get(core_type, 1 + st.lanes)
    with st.cv:
        gen = st.sync_gen
        st.sync_count += 1
        if st.sync_count >= parts:
            st.sync_count = 0
            st.sync_gen += 1
            st.cv.notify_all()
        else:
            _wait(st, lambda: st.sync_gen != gen, f"syncall(core_type={core_type!r}) ({side}{lane})")


def unlowered(op: str):
    """``tile.aiv_shard`` / ``tile.aic_gather`` reached an executor: ExpandMixedKernel folds them
    into pipe pushes and pops, so running one means a program skipped that pass; refuse rather
    than compute a value the pipes would not give."""
    from pypto.errors import SimulationError

    raise SimulationError(f"{op} is a cross-core boundary that ExpandMixedKernel lowers to a push and a pop; "
                          "it cannot run unlowered (compile the program through the whole pass pipeline)")


def noop(*args, **kwargs) -> int:
    """``tfree`` / ``initialize_pipe`` / ``reserve_buffer`` / ``import_peer_buffer``: no effect on values
    (the reference has no slots and no addresses); the buffer ops' value is address 0."""
    return 0


def run_group(members, lanes: int, block=(0, 1)) -> None:
    """Run a Group's members: ``members`` is ``[(function, "aic" | "aiv", args)]``; the AIV function
    runs on ``lanes`` lanes. Member exceptions are re-raised here (the first one)."""
    st = _GroupState(lanes)
    errors: list = []
    jobs = []
    for fn, side, args in members:
        for lane in (range(max(lanes, 1)) if side == "aiv" else (0,)):
            jobs.append((fn, side, lane, args))
    st.live = len(jobs)

    def work(fn, side, lane, args):
        _local.ctx = (st, side, lane)
        try:
            fn(*args, _block=(block[0], block[1], lane))
        except BaseException as e:  # noqa: BLE001  (re-raised in the caller's thread)
            errors.append(e)
            with st.cv:
                if st.failed is None:
                    st.failed = e
                st.cv.notify_all()
        finally:
            with st.cv:
                st.live -= 1
                st.cv.notify_all()
            _local.ctx = None

    threads = [threading.Thread(target=work, args=j, daemon=True) for j in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
