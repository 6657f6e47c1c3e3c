"""MemoryReuse: tiles whose lifetimes do not overlap share a buffer.

Requires: HasMemRefs (InitMemRef's one buffer per tile). Produces: NoLiveOverlap — no two
simultaneously live tiles share a buffer's bytes, except a hand-off (below); checked in terms of
buffers here and, once AllocateMemoryAddr has run, of addresses.

Lifetimes are those of :mod:`pypto.passes.memory_liveness` (values used in a loop stay live to its
end). A buffer's lifetime is the set of its tiles' intervals. Per memory space, buffers are taken
largest first (then in definition order), and each joins the first merged buffer of *the same
aligned size* whose lifetime it does not overlap (first fit), else starts one. Equal sizes only:
a small tile placed in a larger buffer would hold the whole larger buffer for its lifetime, and
AllocateMemoryAddr packs whole buffers, so it could never reclaim the difference; buffers of
different sizes can still end up on the same addresses there. Merged buffers keep the name of their
earliest-defined member, so a dump diff against InitMemRef shows which tile moved into which buffer.

A hand-off may share bytes although the two lifetimes meet at one statement; it is preferred over
plain first fit (it saves a buffer and, for a loop, the copy of the initial value):

* in place: an ``inplace_safe`` elementwise op's result takes the buffer of a same-shape,
  same-dtype operand whose last use is that op;
* loop entry: a loop's carried buffer takes the buffer of the tile that initialises it when the
  loop is that tile's last use.
"""
from __future__ import annotations

from bisect import bisect_right, insort
from dataclasses import dataclass, field

from pypto.ir.nodes import Function, Program, Var
from pypto.language.enums import KERNEL_TYPES
from pypto.passes.context import PassContext
from pypto.passes.memory_liveness import Liveness, MemRefRewriter, aligned, with_memref

NAME = "MemoryReuse"
REQUIRES = ("HasMemRefs",)
PRODUCES = ("NoLiveOverlap",)


def run(program: Program, ctx: PassContext) -> Program:
    return program.replace(functions=tuple(
        _reuse(f, ctx.platform) if f.func_type in KERNEL_TYPES else f for f in program.functions))


@dataclass
class _Buffer:
    """One buffer of the input (or a merged one): its tiles (ids) and where its lifetime starts."""

    name: str
    space: object
    size: int                  # aligned bytes
    start: int
    tiles: list = field(default_factory=list)
    ivs: list = field(default_factory=list)      # (start, end, tile id) of merged tiles, sorted


def _reuse(f: Function, platform) -> Function:
    live = Liveness(f)
    buffers: dict[str, _Buffer] = {}
    for i in live.order:
        t = live.var[i].type
        if t.memref is None:
            continue              # only reachable with verification off and InitMemRef dropped
        b = buffers.get(t.memref.base)
        if b is None:
            b = buffers[t.memref.base] = _Buffer(t.memref.base, t.memory_space, 0, live.start[i])
        b.size = max(b.size, aligned(t.memref.end, platform.align(t.memory_space)))
        b.tiles.append(i)

    def near(m: _Buffer, y: int):
        """The tiles of ``m`` whose intervals meet tile ``y``'s. The tiles of a merged buffer are
        pairwise disjoint but for hand-off points, so sorted by start they are sorted by end too:
        walk back from the last one starting by ``y``'s end while they still reach ``y``'s start."""
        k = bisect_right(m.ivs, (live.end[y], float("inf")))
        while k > 0 and m.ivs[k - 1][1] >= live.start[y]:
            k -= 1
            yield m.ivs[k][2]

    def clash(m: _Buffer, b: _Buffer) -> bool:
        return any(live.clash(x, y) for y in b.tiles for x in near(m, y))

    def hand_off(m: _Buffer, b: _Buffer) -> bool:
        return any(live.hands_over(x, y) or live.hands_over(y, x) for y in b.tiles for x in near(m, y))

    merged: list[_Buffer] = []
    rename: dict[str, _Buffer] = {}
    for b in sorted(buffers.values(), key=lambda b: (-b.size, b.start, b.name)):
        fits = [m for m in merged if m.space == b.space and m.size == b.size and not clash(m, b)]
        into = next((m for m in fits if hand_off(m, b)), fits[0] if fits else None)
        if into is None:
            into = _Buffer(b.name, b.space, b.size, b.start)
            merged.append(into)
        elif b.start < into.start:
            into.name, into.start = b.name, b.start     # named after its earliest-defined member
        into.tiles.extend(b.tiles)
        for i in b.tiles:
            insort(into.ivs, (live.start[i], live.end[i], i))
        rename[b.name] = into

    def memref_of(v: Var):
        m = v.type.memref
        return with_memref(m, base=rename[m.base].name) if m is not None and m.base in rename else None

    return MemRefRewriter(memref_of).function(f)
