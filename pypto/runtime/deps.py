"""Dependency inference of the runtime (docs/simulator.md, "What a run does"; docs/language.md,
"Task dependencies") and the ``deps.json`` writer (docs/simulator.md, "Debug outputs (DFX)").

A tensor argument is a *view* over a GM buffer: ``base`` (the buffer's address), ``start`` (offset in
elements), ``shape`` and ``strides`` (elements). Producers register their views in the
:class:`TensorMap`, bucketed by base buffer; a consumer looks up the entries of its buffer and tests
the overlap:

* **L1** — the byte ranges ``[start, start + extent)`` do not intersect: ``NO_OVERLAP``.
* **L2 preconditions** — same dtype, rank and strides; strides row-major derivable (last 1, each a
  multiple of the next); the buffer size divides by ``strides[0]``; both offsets decompose into a box
  that does not wrap a row. Otherwise ``OTHER`` (conservatively overlapping).
* **L2** — per dimension: any disjoint dimension gives ``NO_OVERLAP``; the consumer containing the
  producer in every dimension gives ``COVERED``; anything else ``OTHER``.

``deps.json`` edge sources: ``explicit`` (``deps=``), ``creator`` (Step A), ``tensormap`` (Step B) and
``compiler`` — an edge AutoDeriveTaskDependencies proved at compile time (with
``analyze_auto_scopes_for_deps``) in place of the lookup it made the runtime skip; it carries the
consumer's view and the flag ``wait`` like a tensormap edge, but no overlap / producer view.

Runtime tags (what codegen passes per argument): ``INPUT``, ``INOUT``, ``OUTPUT_EXISTING``,
``OUTPUT`` (runtime-allocated; skipped entirely) and ``NO_DEP``; a scalar argument is tagged
``SCALAR`` (the tag of a scalar is ignored).
"""
from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from pathlib import Path

import torch

from pypto.runtime.trace import rxty

from pypto.ir.boxes import COVERED, NO_OVERLAP, OTHER, OVERLAP_NAME, box_overlap  # noqa: F401  (re-exported)
from pypto.ir.tags import (  # noqa: F401  (re-exported: the one RuntimeTag, pypto/ir/tags.py)
    INOUT, INPUT, LOOKUP_TAGS, NO_DEP, OUTPUT, OUTPUT_EXISTING, REGISTER_TAGS, SCALAR, RuntimeTag,
)
from pypto.ir.tags import ALL_TAGS as TAGS
from pypto.safe_files import atomic_write_text
# IR parameter directions accepted as tags (an un-promoted ``Out`` writes an existing buffer)
_LEGACY = {"In": INPUT, "Out": OUTPUT_EXISTING, "InOut": INOUT}


def normalize_tag(tag) -> str:
    """A runtime tag from a tag name or an IR direction name (``In`` / ``Out`` / ``InOut``)."""
    if tag in TAGS:
        return tag
    t = _LEGACY.get(getattr(tag, "name", tag))
    if t is None:
        raise ValueError(f"unknown argument tag {tag!r}; expected one of {', '.join(TAGS)}")
    return t


class View:
    """The GM region a tensor argument designates (element units, plus byte bounds for L1)."""

    __slots__ = ("tensor", "base", "start", "shape", "strides", "dtype", "esize", "lo", "hi", "buffer_numel", "_box")

    def __init__(self, t: torch.Tensor):
        st = t.untyped_storage()
        self.tensor = t
        self.base = st.data_ptr()
        self.dtype = t.dtype
        es = self.esize = t.element_size()
        self.start = start = t.storage_offset()
        self.shape = shape = tuple(t.shape)
        self.strides = strides = tuple(t.stride())
        if len(shape) == 2:   # the common case, without the generic loop
            s0, s1 = shape
            extent = 1 + (s0 - 1) * strides[0] + (s1 - 1) * strides[1] if s0 and s1 else 0
        else:
            extent = 0
            if all(shape):
                extent = 1
                for s, k in zip(shape, strides):
                    extent += (s - 1) * k
        self.lo = start * es
        self.hi = (start + extent) * es
        self.buffer_numel = st.nbytes() // es
        self._box = False

    def box(self):
        """Per-dimension start indices (L2), computed once; None when the view does not decompose.
        (A function of the strides, shape, start and buffer size alone: shared through
        :data:`_BOXES` by the views of a run's many equal regions -- a batched loop's stacked
        intermediates are new View objects at every step and call, at the same places.)"""
        b = self._box
        if b is False:
            key = (self.strides, self.shape, self.start, self.buffer_numel)
            b = _BOXES.get(key, False)
            if b is False:
                b = _box(self)
                if len(_BOXES) >= _BOXES_MAX:
                    _BOXES.clear()
                _BOXES[key] = b
            self._box = b
        return b


_BOXES: dict = {}     # (strides, shape, start, buffer numel) -> _box's result (read only by its users)
_BOXES_MAX = 4096


def _box(v: View):
    """Per-dimension start indices of a row-major-derivable view, or None when it does not decompose."""
    strides, shape = v.strides, v.shape
    if not strides:
        return ()
    if strides[-1] != 1:
        return None
    for a, b in zip(strides, strides[1:]):
        if b <= 0 or a % b:
            return None
    if strides[0] <= 0 or v.buffer_numel % strides[0]:
        return None
    idx = []
    off = v.start
    prev = None
    for d, k in enumerate(strides):
        if prev is None:
            i, off = divmod(off, k)
        else:
            i, off = divmod(off, k)
            if i + shape[d] > prev // k:   # the box would wrap into the next row
                return None
        idx.append(i)
        prev = k
    return idx


def overlap(c: View, p: View) -> int:
    """Overlap of consumer view ``c`` with producer view ``p`` (same base buffer)."""
    if c.lo >= p.hi or p.lo >= c.hi:
        return NO_OVERLAP
    if c is p:   # the same view object (a tensor passed again): identical boxes contain each other
        return OTHER if c.box() is None else COVERED
    if c.dtype != p.dtype or c.strides != p.strides or len(c.shape) != len(p.shape):
        return OTHER
    cb, pb = c.box(), p.box()
    if cb is None or pb is None:
        return OTHER
    return box_overlap(cb, c.shape, pb, p.shape)


class _Bucket:
    """Entries of one base buffer, sorted by first byte (so a lookup only tests views whose byte
    range can intersect). Keys are ``(lo, seq)`` ascending, so a registration usually appends; a
    lookup reports matches newest first among equal starts ("insert at head")."""

    __slots__ = ("los", "ents", "maxlen", "seq")

    def __init__(self):
        self.los: list = []    # (lo, seq), ascending
        self.ents: list = []   # (view, producer task), parallel to los
        self.maxlen = 0
        self.seq = 0


_BIG = 1 << 62


def _in_lookup_order(hits: list, los: list) -> None:
    """Sort ``hits`` (``(entry index, overlap)``) into :meth:`TensorMap.lookup`'s order in place.
    They come in key order, (first byte, seq) ascending: already the order wanted unless two share
    a first byte (then newest first among them)."""
    if len(hits) > 1:
        starts = [los[k][0] for k, _ in hits]
        if len(set(starts)) != len(starts):
            hits.sort(key=lambda h: (los[h[0]][0], -los[h[0]][1]))


class TensorMap:
    """Registered producers per base buffer (the tensormap the runtime's dependency inference looks up)."""

    def __init__(self):
        self.buckets: dict[int, _Bucket] = {}

    def lookup(self, v: View, remove_covered: bool):
        """``[(producer task, overlap, producer view)]`` for every registered view ``v`` overlaps
        (ordered by first byte, newest first among equal first bytes); with ``remove_covered`` (an
        INOUT consumer) the COVERED entries are dropped from the map."""
        b = self.buckets.get(v.base)
        if b is None or not b.los:
            return ()
        los = b.los
        vlo = v.lo
        if len(los) == 1:
            # one producer (a fresh intermediate's writer, a running accumulator): the bisection
            # below would select it exactly when its byte range intersects v's, which overlap()
            # tests first anyway
            pv, p = b.ents[0]
            ov = overlap(v, pv)
            if ov == NO_OVERLAP:
                return ()
            if remove_covered and ov == COVERED:
                los.clear()
                b.ents.clear()
            return [(p, ov, pv)]
        i = bisect_right(los, (vlo - b.maxlen, _BIG))
        j = bisect_left(los, (v.hi, 0))
        hits = []
        ents = b.ents
        for k in range(i, j):
            pv = ents[k][0]
            if pv.hi <= vlo:
                continue
            ov = overlap(v, pv)
            if ov != NO_OVERLAP:
                hits.append((k, ov))
        if not hits:
            return ()
        _in_lookup_order(hits, los)
        found = [(ents[k][1], ov, ents[k][0]) for k, ov in hits]
        if remove_covered:
            drop = sorted(k for k, ov in hits if ov == COVERED)
            for k in reversed(drop):
                del los[k]
                del ents[k]
        return found

    def producers(self, v: View) -> list:
        """``[(producer task, overlap, producer view)]`` of a reading consumer (no entry dropped):
        the first hit of each producer task in :meth:`lookup`'s order, all that a consumer which
        adds a producer once needs (a batched task reading the span of its members' regions, see
        :mod:`pypto.runtime.batch`, overlaps every member region a batched writer registered: one
        overlap test per writer instead of one per registered member). An entry of a task already
        hit at a smaller first byte cannot come first for that task in lookup's order (it reorders
        only equal first bytes), so it is not tested."""
        b = self.buckets.get(v.base)
        if b is None or not b.los:
            return ()
        if len(b.los) == 1:
            return self.lookup(v, False)
        los = b.los
        vlo = v.lo
        i = bisect_right(los, (vlo - b.maxlen, _BIG))
        j = bisect_left(los, (v.hi, 0))
        hits = []
        first: dict = {}   # producer task -> the first byte of its first hit
        ents = b.ents
        for k in range(i, j):
            pv, p = ents[k]
            if pv.hi <= vlo:
                continue
            at = first.get(p)
            if at is not None and at < pv.lo:
                continue
            ov = overlap(v, pv)
            if ov != NO_OVERLAP:
                hits.append((k, ov))
                if at is None:
                    first[p] = pv.lo
        if not hits:
            return ()
        _in_lookup_order(hits, los)
        found = []
        seen = set()
        for k, ov in hits:
            pv, p = ents[k]
            if p not in seen:
                seen.add(p)
                found.append((p, ov, pv))
        return found

    def register(self, v: View, task) -> tuple:
        """Register ``task`` as a producer of ``v``; returns the entry's key (for :meth:`unregister`)."""
        b = self.buckets.get(v.base)
        if b is None:
            b = self.buckets[v.base] = _Bucket()
        b.seq += 1
        key = (v.lo, b.seq)
        los = b.los
        if not los or los[-1] < key:
            los.append(key)
            b.ents.append((v, task))
        else:
            k = bisect_left(los, key)
            los.insert(k, key)
            b.ents.insert(k, (v, task))
        n = v.hi - v.lo
        if n > b.maxlen:
            b.maxlen = n
        return key

    def register_all(self, views, task) -> list:
        """:meth:`register` of each of ``views`` in turn for ``task`` (a batched task's member
        regions); returns ``[(base, key)]``, the ``Task.registered`` list. (An inlined copy of
        :meth:`register` saved ~3 us per 32 views, ~25 us a Qwen3 call: not worth two copies.)"""
        register = self.register
        return [(v.base, register(v, task)) for v in views]

    def unregister_all(self, registered, task) -> None:
        """:meth:`unregister` of each ``(base, key)`` of ``registered`` (``task.registered``) in turn."""
        unregister = self.unregister
        for base, key in registered:
            unregister(base, key, task)

    def unregister(self, base: int, key: tuple, task) -> None:
        """Drop ``task``'s entry ``key`` of buffer ``base`` (a retired producer: consumers submitted from
        now on need no edge to it), if a lookup has not dropped it already; an emptied bucket goes, so
        a new buffer at a recycled address starts with no stale producers."""
        b = self.buckets.get(base)
        if b is None:
            return
        los = b.los
        k = bisect_left(los, key)
        if k < len(los) and los[k] == key and b.ents[k][1] is task:
            del los[k]
            del b.ents[k]
        if not los:
            del self.buckets[base]


# ---------------------------------------------------------------------------------------- deps.json

_FNV_OFFSET, _FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3


def tensor_id(buffer_addr: int, version: int = 0) -> int:
    """FNV-1a 64 over the 8 little-endian bytes of the address and the 4 bytes of the version."""
    h = _FNV_OFFSET
    for byte in buffer_addr.to_bytes(8, "little") + (version & 0xFFFFFFFF).to_bytes(4, "little"):
        h ^= byte
        h = (h * _FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


_DTYPE_NAMES = {
    torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float64: "float64",
    torch.int32: "int32", torch.int16: "int16", torch.int8: "int8", torch.int64: "int64", torch.uint8: "uint8",
    torch.bool: "bool",
}
_DTYPES_BY_NAME = {v: k for k, v in _DTYPE_NAMES.items()}


def dtype_name(dt: torch.dtype) -> str:
    """Lower-case dtype name (``float32``); deps.json upper-cases it."""
    return _DTYPE_NAMES.get(dt, str(dt).split(".")[-1])


def dtype_from(name: str) -> torch.dtype:
    return _DTYPES_BY_NAME[name.lower()]


def _view_keys(v: View, prefix: str) -> dict:
    return {f"{prefix}shape": list(v.shape), f"{prefix}start_offset": str(v.start), f"{prefix}strides": list(v.strides)}


# Where deps.json places the first buffer, and the alignment of each next one: the host pointers of
# the simulated GM buffers differ on every run (and would leak the process's address layout), so
# deps.json gives each buffer a stable address instead, in order of first appearance in the submit log.
_GM_BASE, _GM_ALIGN = 0x1000_0000, 512


class StableAddresses:
    """Host buffer pointer -> a reproducible GM address (first-appearance order, each buffer
    ``_GM_ALIGN``-aligned after the previous one), so the same program writes the same deps.json."""

    def __init__(self):
        self._addr: dict[int, int] = {}
        self._next = _GM_BASE

    def __call__(self, v: View) -> int:
        a = self._addr.get(v.base)
        if a is None:
            a = self._addr[v.base] = self._next
            size = max(v.buffer_numel * v.esize, 1)
            self._next += (size + _GM_ALIGN - 1) // _GM_ALIGN * _GM_ALIGN
        return a


def deps_document(tasks) -> dict:
    """The deps.json object (docs/simulator.md, "Debug outputs (DFX)") from the runtime's submit log (``Runtime.tasks``).

    ``buffer_addr`` (and the ``tensor_id`` hashed from it) is a stable address (:class:`StableAddresses`),
    not the host pointer: two runs of one program give the same document."""
    out_tasks, tensors, edges = [], {}, []
    addr = StableAddresses()
    for t in tasks:
        if t.kind == "snapshot":
            continue
        args = []
        for i, (a, tag) in enumerate(zip(t.args, t.tags)):
            if not isinstance(a, torch.Tensor):
                continue
            v = t.views[i]
            gm = addr(v)
            tid = tensor_id(gm)
            tensors.setdefault(v.base, {"tensor_id": str(tid), "buffer_addr": str(gm), "version": 0,
                                        "dtype": dtype_name(v.dtype).upper(), "buffer_numel": str(v.buffer_numel)})
            args.append({"idx": i, "type": "UNKNOWN" if tag == NO_DEP else tag, "tensor_id": str(tid),
                         "dtype": dtype_name(v.dtype).upper(), "shape": list(v.shape),
                         "start_offset": str(v.start), "strides": list(v.strides)})
        out_tasks.append({"task_id": str(t.task_id), "task": rxty(t.task_id), "scope": "manual" if t.manual else "auto",
                          "early_dispatch": False, "kernel_ids": list(t.kernel_ids),
                          "block_num": getattr(t, "blocks", 1), "args": args})
        for pred, arg, source, ov, pv in t.edges:
            if pred.kind == "snapshot":
                continue
            # a compiler edge stands in for a tensormap lookup: it waits, it does not retain
            e = {"pred": str(pred.task_id), "succ": str(t.task_id), "arg": arg, "source": source,
                 "flags": ["wait"] if source in ("tensormap", "compiler") else ["wait", "retain"]}
            if source != "explicit":
                v = t.views[arg]
                e["tensor_id"] = str(tensor_id(addr(v)))
                e["consumer_dtype"] = dtype_name(v.dtype).upper()
                e.update(_view_keys(v, "consumer_"))
            if source == "tensormap":
                e["overlap"] = OVERLAP_NAME[ov]
                e.update(_view_keys(pv, "producer_"))
            edges.append(e)
    return {"tasks": out_tasks, "tensors": list(tensors.values()), "edges": edges}


def write_deps(tasks, dfx_dir: Path, work_dir: Path, kernel_ids: dict) -> Path:
    """Write ``dfx_outputs/deps.json`` and ``name_map_<work_dir.name>.json``; returns the deps path."""
    path = dfx_dir / "deps.json"
    atomic_write_text(path, json.dumps(deps_document(tasks), indent=1))
    name_map = {"level": 2, "orchestrator_name": None,
                "callable_id_to_name": {str(i): n for n, i in kernel_ids.items()}}
    atomic_write_text(dfx_dir / f"name_map_{work_dir.name}.json", json.dumps(name_map, indent=1))
    return path
