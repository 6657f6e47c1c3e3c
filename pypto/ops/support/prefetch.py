"""Run-time side of ``pl.prefetch`` (:mod:`pypto.ops.prefetch`): the handles and the kernel clock.

``Clock`` is a prefetch-using kernel's count of the cycles it has yielded (``_clk``, kept by the
generated code at every yield); an event completes ``cycles`` after its issue on that clock, and
``prefetch_stall`` is what a wait has left to stall (advancing the clock by it).
"""
from __future__ import annotations

from pypto.errors import SimulationError


class Clock:
    """Cycles a kernel has yielded so far (``_clk.t``)."""

    __slots__ = ("t",)

    def __init__(self):
        self.t = 0


class PrefetchSession:
    """The async session of a context."""

    __slots__ = ("ctx",)

    def __init__(self, ctx):
        self.ctx = ctx


class PrefetchContext:
    """A prefetch context; ``session`` is its one session."""

    __slots__ = ("session",)

    def __init__(self):
        self.session = PrefetchSession(self)


class PrefetchEvent:
    """An issued prefetch: its context and the clock value at which its transfer has landed."""

    __slots__ = ("ctx", "done")

    def __init__(self, ctx, done):
        self.ctx, self.done = ctx, done


def prefetch_start(src, ctx: PrefetchContext, clock, cycles: int) -> PrefetchEvent:
    """Issue a prefetch of ``src`` (nothing is copied: the simulator has no L2)."""
    return PrefetchEvent(ctx, (clock.t if clock is not None else 0) + 1 + cycles)


def _check(event: PrefetchEvent, session: PrefetchSession) -> None:
    if event.ctx is not session.ctx:
        raise SimulationError("pl.prefetch.wait: the session is not the event's: the event was started on another "
                              "prefetch context (wait with pl.prefetch.session(ctx) of the ctx given to "
                              "async_prefetch)")


def prefetch_stall(event: PrefetchEvent, session: PrefetchSession, clock: Clock) -> int:
    """The cycles a wait stalls (what is left of the transfer), added to the clock."""
    _check(event, session)
    left = max(0, event.done - clock.t)
    clock.t += left
    return left


def prefetch_wait(event: PrefetchEvent, session: PrefetchSession, _stalled) -> bool:
    """The done flag of a completed wait (the stall was yielded before)."""
    _check(event, session)
    return True
