"""AllocateMemoryAddr: every buffer of an InCore function gets an address in its memory space.

Requires: HasMemRefs (InitMemRef, usually merged by MemoryReuse). Produces: AllocatedMemoryAddr —
every tile's ``MemRef`` carries its buffer's ``addr`` (the tile's bytes start at ``addr + offset``;
the simulator places the tile's view of core memory there), within the space's capacity; and
NoLiveOverlap — no two simultaneously live tiles overlap (checked by an independent liveness
computation in :mod:`pypto.ir.verifier`).

A buffer occupies ``max(offset + size)`` of its tiles, rounded up to the platform's per-space
alignment, and is live over the union of its tiles' lifetimes (:mod:`pypto.passes.memory_liveness`).
Buffers whose lifetimes are disjoint may be packed onto the same addresses: per space, buffers are
placed first-fit (lowest aligned address not overlapping an already placed buffer whose lifetime
overlaps), in two orders — definition order, and largest first — and the order with the lower
high-water mark wins (definition order on a tie). The definition-order candidate is the first-fit
placement of the single allocator this split replaced, applied to whole buffers (with MemoryReuse
dropped from the pipeline, every tile keeps its own buffer and is placed the same way, minus the
in-place reuse that MemoryReuse now decides); over every kernel of the test suite the default
pipeline's high-water mark per space is never above that allocator's, and below it for a few.
Different buffers never meet at a hand-off:
only tiles of one buffer may (NoLiveOverlap accepts an in-place or loop-entry hand-off only
between identical MemRefs), so here buffers overlap in time or not at all.

A function whose buffers exceed a space's capacity is a :class:`CapacityError` naming the space,
the limit and the largest tiles, at the kernel's span.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pypto.errors import CapacityError
from pypto.ir.nodes import Function, Program, Var
from pypto.language.enums import KERNEL_TYPES
from pypto.passes.context import PassContext
from pypto.passes.memory_liveness import Liveness, MemRefRewriter, aligned, with_memref

NAME = "AllocateMemoryAddr"
REQUIRES = ("HasMemRefs",)
PRODUCES = ("AllocatedMemoryAddr", "NoLiveOverlap")


def run(program: Program, ctx: PassContext) -> Program:
    return program.replace(functions=tuple(
        _allocate(f, ctx) if f.func_type in KERNEL_TYPES else f for f in program.functions))


@dataclass
class Buffer:
    """A buffer as the packer sees it: aligned size and lifetime (sorted, disjoint intervals)."""

    name: str
    space: object
    size: int
    start: int
    intervals: list = field(default_factory=list)
    tiles: list = field(default_factory=list)     # the Vars of its tiles, in definition order

    def overlaps(self, other: Buffer) -> bool:
        """True when the two lifetimes share a statement (closed intervals, two-pointer sweep)."""
        a, b, i, j = self.intervals, other.intervals, 0, 0
        while i < len(a) and j < len(b):
            if a[i][0] <= b[j][1] and b[j][0] <= a[i][1]:
                return True
            if a[i][1] < b[j][1]:
                i += 1
            else:
                j += 1
        return False


def buffers_of(f: Function, live: Liveness, platform) -> dict[str, Buffer]:
    """The buffers of ``f`` named by its tiles' MemRefs, with sizes and lifetimes."""
    out: dict[str, Buffer] = {}
    spans: dict[str, list] = {}
    for i in live.order:
        v = live.var[i]
        m = v.type.memref
        if m is None:
            continue
        b = out.get(m.base)
        if b is None:
            b = out[m.base] = Buffer(m.base, v.type.memory_space, 0, live.start[i])
        b.size = max(b.size, aligned(m.end, platform.align(v.type.memory_space)))
        b.start = min(b.start, live.start[i])
        b.tiles.append(v)
        spans.setdefault(m.base, []).append((live.start[i], live.end[i]))
    for name, ivs in spans.items():
        merged: list = []
        for lo, hi in sorted(ivs):
            if merged and lo <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        out[name].intervals = [tuple(x) for x in merged]
    return out


def pack(buffers: list[Buffer]) -> tuple[dict[str, int], int]:
    """First-fit addresses for ``buffers`` (one space) in the given order; returns (addr per buffer
    name, high-water mark)."""
    placed: list[tuple[int, Buffer]] = []
    addrs: dict[str, int] = {}
    top = 0
    for b in buffers:
        busy = sorted((a, p.size) for a, p in placed if p.overlaps(b))
        addr = 0
        for baddr, bsize in busy:
            if addr + b.size <= baddr:
                break
            addr = max(addr, baddr + bsize)
        placed.append((addr, b))
        addrs[b.name] = addr
        top = max(top, addr + b.size)
    return addrs, top


def place(bs: list[Buffer]) -> tuple[dict[str, int], int]:
    """The placement of one space's buffers: first-fit in definition order and largest first, the
    lower high-water mark wins (definition order on a tie). Also used by ``pypto.tools.memory_map``
    to draw the plan of a dump taken before this pass (a compile this pass refused)."""
    by_def = pack(sorted(bs, key=lambda b: (b.start, b.name)))
    by_size = pack(sorted(bs, key=lambda b: (-b.size, b.start, b.name)))
    return by_size if by_size[1] < by_def[1] else by_def


def _allocate(f: Function, ctx: PassContext) -> Function:
    platform = ctx.platform
    live = Liveness(f)
    buffers = buffers_of(f, live, platform)
    addr_of: dict[str, int] = {}
    for space in sorted({b.space for b in buffers.values()}, key=lambda s: s.name):
        bs = [b for b in buffers.values() if b.space == space]
        addrs, used = place(bs)
        cap = platform.capacity(space)
        if used > cap:
            raise _over_capacity(f, live, space, bs, used, cap, platform)
        addr_of.update(addrs)

    def memref_of(v: Var):
        m = v.type.memref
        return with_memref(m, addr=addr_of[m.base]) if m is not None and m.base in addr_of else None

    return MemRefRewriter(memref_of).function(f)


def _over_capacity(f: Function, live: Liveness, space, bs: list[Buffer], used: int, cap: int,
                   platform) -> CapacityError:
    """The error for a space that does not fit: where the live bytes peak, which buffers (and their
    tiles, with the lines defining them) are live there, and the error located at that statement
    (issue 19: the user needs the tiles to shrink, not just the total)."""
    def live_at(pos: int) -> list[Buffer]:
        return [b for b in bs if any(lo <= pos <= hi for lo, hi in b.intervals)]

    # the live total can only rise where some buffer's interval starts
    starts = sorted({lo for b in bs for lo, _ in b.intervals})
    peak = max(starts, key=lambda p: (sum(b.size for b in live_at(p)), -p))
    at_peak = sorted(live_at(peak), key=lambda b: -b.size)
    site = live.sites.get(peak)
    span = getattr(site[1], "span", None) if site is not None else None
    if span is None or span.is_unknown():
        span = f.span

    def describe(b: Buffer) -> str:
        v = max(b.tiles, key=lambda t: t.type.nbytes)
        # the user's names; compiler temporaries ('add__tmp_v0') only when the buffer has no other
        user = [t.name for t in b.tiles if "__" not in t.name] or [b.tiles[0].name]
        names = "/".join(dict.fromkeys(user))
        where = f", line {v.span.line}" if not v.span.is_unknown() else ""
        return f"'{names}' {list(v.type.shape)} {v.type.dtype.name} ({b.size} B{where})"

    total = sum(b.size for b in at_peak)
    listing = ", ".join(describe(b) for b in at_peak[:8])
    more = f" and {len(at_peak) - 8} more" if len(at_peak) > 8 else ""
    return CapacityError(
        f"{space.name} buffer usage ({used} bytes) exceeds platform limit ({cap} bytes) on {platform.name} "
        f"in kernel '{f.name}'; at the peak (this statement) {len(at_peak)} buffers of {total} bytes are "
        f"live: {listing}{more}",
        span, "split the work into smaller tiles (a loop over row blocks), or end a tile's use before the "
              "next large one is created so that their buffers can share memory")
