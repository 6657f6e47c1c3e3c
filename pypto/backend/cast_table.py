"""Native single-instruction casts of ``pto.tcvt`` per architecture, and the LegalizeTileCast
path search that splits a non-native cast into a chain of native ones.

Dtypes are named by their DataType names (``"FP32"``, ``"INT8"``, ...). The rows are the reference
compiler's (``GetTcvtAdjacency`` of its 910B / 950 backend handlers, transcribed from pto-isa's
``tcvt`` Supported Conversions): FP8E4M3FN / FP8E5M2 / HF8 are native on a5 only (from FP32, HF8 also
from FP16, back to FP32 only), FP4 only from / to BF16 on a5, INT4 only from / to FP16 on a2a3.
FP8E8M0, UINT4 and HF4 have no conversion on either platform: every cast from or to them is
rejected (FP8E8M0 data comes from the host, as ``matmul_mx`` scales).

Search (:func:`cast_path`)
--------------------------
Breadth-first over native edges: the fewest hops wins.  A non-final hop ``mid`` is *pruned* when it
narrows relative to the destination ``D`` (see :func:`_narrows`):

* an integer bridge toward a float ``D``;
* a float bridge with fewer significand or exponent bits than a float ``D``
  (FP32 = (24, 8), FP16 = (11, 5), BF16 = (8, 8));
* a float bridge with fewer significand bits than an integer ``D``'s value bits
  (value bits = bits - 1 for signed, bits for unsigned);
* an unsigned bridge toward a signed ``D``;
* an integer bridge with fewer value bits than an integer ``D``.

fp8 / hf8 / fp4 bridges are never pruned.  Among paths of equal length the lowest summed hop cost
wins, where cost(int -> float of the same width) = 0, cost(float -> float) = 1, anything else = 2.
Remaining ties are broken by neighbour order: the neighbours of a node are tried by increasing
edge cost (so the same-width float, INT32->FP32 / INT16->FP16, is expanded first) and then in the
order of the native table row below.  The table-order rule is what makes a5 INT16->UINT16 come out
as [UINT32, UINT16] rather than the equally short and equally cheap [INT32, UINT16]; this matches
the reference compiler's documented result.

With these rules every documented example of the reference compiler is reproduced (see
``tests/backend/test_cast_table.py``); no rule had to be bent.
"""
from __future__ import annotations

import heapq
from functools import lru_cache

__all__ = ["NATIVE_CASTS", "CastPathError", "cast_path", "ARCHS", "DTYPE_NAMES"]

# Ordered rows (order matters for the final tie-break, see module docstring).
_NATIVE_ROWS: dict[str, dict[str, tuple[str, ...]]] = {
    "a2a3": {
        "FP32": ("FP16", "BF16", "INT16", "INT32", "INT64"),
        "FP16": ("FP32", "INT32", "INT16", "INT8", "UINT8", "INT4"),
        "BF16": ("FP32", "INT32"),
        "INT16": ("FP16", "FP32"),
        "INT32": ("FP32", "INT16", "INT64", "FP16"),
        "INT64": ("FP32", "INT32"),
        "INT8": ("FP16",),
        "UINT8": ("FP16",),
        "INT4": ("FP16",),
    },
    "a5": {
        "FP32": ("FP16", "BF16", "INT16", "INT32", "INT64", "FP8E4M3FN", "FP8E5M2", "HF8"),
        "FP16": ("FP32", "INT32", "INT16", "INT8", "UINT8", "HF8"),
        "BF16": ("FP32", "INT32", "FP16", "FP4"),
        "INT16": ("FP16", "FP32", "UINT8", "UINT32", "INT32"),
        "INT32": ("FP32", "INT16", "INT64", "UINT16", "UINT8"),
        "INT64": ("FP32", "INT32"),
        "INT8": ("FP16", "INT16", "INT32"),
        "UINT8": ("FP16", "UINT16"),
        "UINT32": ("UINT8", "UINT16", "INT16"),
        "FP8E4M3FN": ("FP32",),
        "FP8E5M2": ("FP32",),
        "HF8": ("FP32",),
        "FP4": ("BF16",),
    },
}

#: arch -> src dtype name -> frozenset of dst names castable by one ``pto.tcvt``.
NATIVE_CASTS: dict[str, dict[str, frozenset[str]]] = {
    arch: {src: frozenset(dsts) for src, dsts in rows.items()} for arch, rows in _NATIVE_ROWS.items()
}

ARCHS: tuple[str, ...] = tuple(_NATIVE_ROWS)

# name -> (kind, storage bits, significand bits incl. implicit / value bits, exponent bits)
# kind: "float", "int" (signed), "uint", "narrow_float" (fp8/hf8/fp4: never pruned as bridges).
# HF8 (HiFloat8) has a tapered format; (4, 5) is used as its nominal precision/range when it is
# the *destination* of a search, which only matters for float bridges toward it.
_TYPE_INFO: dict[str, tuple[str, int, int, int]] = {
    "FP32": ("float", 32, 24, 8),
    "FP16": ("float", 16, 11, 5),
    "BF16": ("float", 16, 8, 8),
    "FP8E4M3FN": ("narrow_float", 8, 4, 4),
    "FP8E5M2": ("narrow_float", 8, 3, 5),
    "HF8": ("narrow_float", 8, 4, 5),
    "FP4": ("narrow_float", 4, 2, 2),
    "FP8E8M0": ("narrow_float", 8, 1, 8),
    "HF4": ("narrow_float", 4, 1, 2),
    "INT4": ("int", 4, 3, 0),
    "UINT4": ("uint", 4, 4, 0),
    "INT8": ("int", 8, 7, 0),
    "INT16": ("int", 16, 15, 0),
    "INT32": ("int", 32, 31, 0),
    "INT64": ("int", 64, 63, 0),
    "UINT8": ("uint", 8, 8, 0),
    "UINT16": ("uint", 16, 16, 0),
    "UINT32": ("uint", 32, 32, 0),
    "UINT64": ("uint", 64, 64, 0),
    "BOOL": ("uint", 8, 1, 0),
}


#: every dtype name the cast tables know (what ``pypto cast-check`` accepts)
DTYPE_NAMES: tuple[str, ...] = tuple(_TYPE_INFO)


class CastPathError(ValueError):
    """Raised by :func:`cast_path` when no chain of native casts reaches the destination."""

    def __init__(self, src: str, dst: str, arch: str):
        self.src, self.dst, self.arch = src, dst, arch
        super().__init__(
            f"LegalizeTileCast: no native cast path from {src} to {dst} for arch {arch}; "
            f"pto.tcvt does not support this conversion"
        )


def _is_float(name: str) -> bool:
    return _TYPE_INFO.get(name, ("?",))[0] in ("float", "narrow_float")


def _is_int(name: str) -> bool:
    return _TYPE_INFO.get(name, ("?",))[0] in ("int", "uint")


def _narrows(mid: str, dst: str) -> bool:
    """True if ``mid`` may not be used as an intermediate hop of a cast ending in ``dst``."""
    if mid not in _TYPE_INFO or dst not in _TYPE_INFO:
        return False
    mkind, _, mval, mexp = _TYPE_INFO[mid]
    dkind, _, dval, dexp = _TYPE_INFO[dst]
    if mkind == "narrow_float":
        return False
    if mkind in ("int", "uint"):
        if _is_float(dst):
            return True
        if mkind == "uint" and dkind == "int":
            return True
        return mval < dval
    # mid is FP32 / FP16 / BF16
    if _is_float(dst):
        return mval < dval or mexp < dexp
    return mval < dval  # significand bits vs the integer's value bits


def _hop_cost(a: str, b: str) -> int:
    """0 for int -> same-width float, 1 for float -> float, 2 otherwise."""
    if _is_int(a) and _is_float(b) and _TYPE_INFO[a][1] == _TYPE_INFO[b][1]:
        return 0
    if _is_float(a) and _is_float(b):
        return 1
    return 2


def _neighbours(arch: str, node: str) -> list[str]:
    """Native successors of ``node``, cheapest edge first, then in table order."""
    row = _NATIVE_ROWS[arch].get(node, ())
    return sorted(row, key=lambda d: (_hop_cost(node, d), row.index(d)))


def _canon(name) -> str:
    return getattr(name, "name", name)


@lru_cache(maxsize=None)
def _search(src: str, dst: str, arch: str) -> tuple[str, ...] | None:
    """Best path as a tuple of hop names, or None.

    Dijkstra over dtype nodes with the lexicographic key (hops, summed cost, neighbour ranks).
    All three components extend monotonically, so the best path to a node is a prefix of the best
    path through it, and the pruning (which depends only on the node and ``dst``) can be applied
    per node.  The ranks tuple reproduces "expand cheapest edge first, then table order".
    """
    heap: list[tuple[int, int, tuple[int, ...], tuple[str, ...]]] = [(0, 0, (), (src,))]
    settled: set[str] = set()
    while heap:
        hops, cost, ranks, path = heapq.heappop(heap)
        node = path[-1]
        if node in settled:
            continue
        settled.add(node)
        if node == dst:
            return path[1:]
        if node != src and _narrows(node, dst):
            continue  # may not be used as a bridge toward dst
        for rank, nb in enumerate(_neighbours(arch, node)):
            if nb not in settled:
                heapq.heappush(
                    heap, (hops + 1, cost + _hop_cost(node, nb), ranks + (rank,), path + (nb,)))
    return None


def cast_path(src: str, dst: str, arch: str) -> list[str]:
    """Return the chain of native casts LegalizeTileCast uses to convert ``src`` to ``dst``.

    The result lists the dtype name after every hop, ending in ``dst``: ``[]`` when
    ``src == dst``, ``[dst]`` when the cast is native, e.g. ``cast_path("INT32", "FP16", "a5") ==
    ["FP32", "FP16"]``.  Names are DataType names (DataType objects are accepted too).  Raises
    :class:`ValueError` for an unknown ``arch`` and :class:`CastPathError` when no path exists.
    """
    src, dst = _canon(src), _canon(dst)
    if arch not in _NATIVE_ROWS:
        raise ValueError(f"unknown arch {arch!r}; expected one of {', '.join(ARCHS)}")
    if src == dst:
        return []
    found = _search(src, dst, arch)
    if found is None:
        raise CastPathError(src, dst, arch)
    return list(found)
