"""``benchmark``: run a compiled program ``warmup + rounds`` times on one worker and report the
per-launch device time — here the **simulated** device time (the simulator's timeline at its clock
of 1 cycle = 1 ns, the clock of ``swimlane.json``), plus the host wall time of each launch.

Each measured launch also yields a :class:`TraceInvocation`: a ``chip.run`` root span (depth 0)
with one span per task that ran on a core (depth 1, named after its kernel), in nanoseconds of the
simulated clock. (The reference reads the same shape from its runtime's ``[STRACE]`` markers.)
Unless the config fixes ``sim_seed``, the simulator's timing jitter varies per launch, as hardware
does; with a seed every sample is identical.
"""
from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from pypto.runtime.config import RunConfig
from pypto.runtime import simulator
from pypto.runtime.trace import CYCLES_PER_US
from pypto.runtime.worker import ChipWorker


@dataclass
class TraceSpan:
    """One timed span of a launch: ``ts`` / ``dur`` in ns; ``attrs`` carries ``clk=dev`` for device spans."""

    pid: int
    tid: int
    inv: int
    hid: str
    depth: int
    name: str
    ts: int
    dur: int
    attrs: str = ""

    @property
    def is_device(self) -> bool:
        """Whether the span is on the (simulated) device clock."""
        return "clk=dev" in self.attrs

    @property
    def dur_us(self) -> float:
        """Duration in microseconds."""
        return self.dur / 1000.0


@dataclass
class TraceInvocation:
    """The spans of one measured launch, in emission order."""

    pid: int
    inv: int
    hid: str
    spans: list[TraceSpan] = field(default_factory=list)

    def root(self) -> TraceSpan | None:
        """The depth-0 span (``chip.run``)."""
        return next((s for s in self.spans if s.depth == 0), None)

    def by_name(self) -> dict[str, TraceSpan]:
        """Span name -> its first span."""
        out: dict[str, TraceSpan] = {}
        for s in self.spans:
            out.setdefault(s.name, s)
        return out

    def format_tree(self) -> str:
        """The spans as an indented tree, durations in µs."""
        return "\n".join(f"{'  ' * s.depth}{s.name}  {s.dur_us:.3f} us" for s in self.spans)


@dataclass
class BenchmarkStats:
    """Per-launch timing of :func:`benchmark` (device = simulated device wall, µs)."""

    device_wall_us: list[float] = field(default_factory=list)
    host_wall_us: list[float] = field(default_factory=list)
    rounds: int = 0
    warmup: int = 0
    invocations: list[TraceInvocation] = field(default_factory=list)

    @property
    def samples(self) -> list[float]:
        """``device_wall_us``."""
        return self.device_wall_us

    @property
    def all_zero_device(self) -> bool:
        """Whether there are samples and all are 0."""
        return bool(self.device_wall_us) and all(v == 0 for v in self.device_wall_us)

    @property
    def device_us_min(self) -> float:
        return min(self.device_wall_us)

    @property
    def device_us_max(self) -> float:
        return max(self.device_wall_us)

    @property
    def device_us_mean(self) -> float:
        return statistics.fmean(self.device_wall_us)

    @property
    def device_us_median(self) -> float:
        return statistics.median(self.device_wall_us)

    @property
    def device_us_stdev(self) -> float:
        return statistics.stdev(self.device_wall_us) if len(self.device_wall_us) > 1 else 0.0

    def per_round(self, kind: str = "device") -> list[float]:
        """The samples of ``kind`` (``"device"`` or ``"host"``), one per measured round."""
        if kind not in ("device", "host"):
            raise ValueError(f"per_round(kind={kind!r}): choose 'device' or 'host'")
        return list(self.device_wall_us if kind == "device" else self.host_wall_us)

    def print_tree(self) -> None:
        """Print the span tree of the first measured launch."""
        if self.invocations:
            print(self.invocations[0].format_tree())

    def __str__(self) -> str:
        if not self.device_wall_us:
            return "BenchmarkStats(no samples)"
        return (f"BenchmarkStats(rounds={self.rounds}, device_us median={self.device_us_median:.3f} "
                f"min={self.device_us_min:.3f} max={self.device_us_max:.3f})")


def _invocation(rt, inv: int) -> TraceInvocation:
    ns = 1000.0 / CYCLES_PER_US  # ns per cycle
    pid = os.getpid()
    spans = [TraceSpan(pid, 0, inv, "sim", 0, "chip.run", 0, int(round(rt.time * ns)), "clk=dev")]
    for t in rt.tasks:
        if t.core >= 0:
            spans.append(TraceSpan(pid, t.core, inv, "sim", 1, t.kernel, int(round(t.start * ns)),
                                   int(round(max(t.end - t.start, 0.0) * ns)), "clk=dev"))
    return TraceInvocation(pid, inv, "sim", spans)


def benchmark(compiled, args: Sequence[Any], *, rounds: int = 100, warmup: int = 3, platform: str | None = None,
              device_id: int | None = None, config: RunConfig | None = None, persistent: bool = False,
              reset_persistent_windows: bool | None = None) -> BenchmarkStats:
    """Register ``compiled`` on one :class:`~pypto.runtime.ChipWorker` and launch it ``warmup + rounds``
    times with ``args``; the warmup launches are not measured. ``platform`` / ``device_id`` override
    the config's. ``persistent`` / ``reset_persistent_windows`` concern the window buffers of a
    multi-rank program's worker (``DistributedCompiledProgram.prepare``), which this single-card
    benchmark does not run, so they must keep their defaults."""
    for name, v in (("rounds", rounds), ("warmup", warmup)):
        if isinstance(v, bool) or not isinstance(v, int) or v < (1 if name == "rounds" else 0):
            raise ValueError(f"benchmark({name}={v!r}): must be an int >= {1 if name == 'rounds' else 0}")
    if persistent or reset_persistent_windows:
        raise ValueError("benchmark(): persistent/reset_persistent_windows apply only to a multi-rank "
                         "DistributedCompiledProgram (its worker keeps window buffers across runs: "
                         "compiled.prepare(persistent=True)); this benchmark runs one card")
    cfg = config or RunConfig(platform=compiled.platform)
    if platform is not None or device_id is not None:
        import dataclasses

        cfg = dataclasses.replace(cfg, **({"platform": platform} if platform is not None else {}),
                                  **({"device_id": device_id} if device_id is not None else {}))
    stats = BenchmarkStats(rounds=rounds, warmup=warmup)
    with ChipWorker(cfg) as w:
        handle = w.register(compiled)
        for i in range(warmup + rounds):
            t0 = time.perf_counter()
            handle(*args)
            host_us = (time.perf_counter() - t0) * 1e6
            if i < warmup:
                continue
            rt = simulator._LAST_RUNTIME[0]
            inv = _invocation(rt, i - warmup)
            stats.device_wall_us.append(inv.root().dur_us)
            stats.host_wall_us.append(host_us)
            stats.invocations.append(inv)
    return stats


__all__ = ["BenchmarkStats", "TraceInvocation", "TraceSpan", "benchmark"]
