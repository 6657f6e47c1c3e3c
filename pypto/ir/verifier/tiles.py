"""Tile properties of the kernels: tile ops only, memory spaces, memory references and
addresses, 2-D tiles."""
from __future__ import annotations

from pypto.ir.nodes import AssignStmt, Call, ForStmt, Function, Program, Var, WhileStmt
from pypto.ir.types import TileType
from pypto.ir.visit import iter_stmts
from pypto.language.enums import KERNEL_TYPES
from pypto.ir.verifier.registry import function_prop


@function_prop("IncoreTileOps")
def _tile_ops(f: Function, program: Program, ctx) -> list:
    bad = []
    if f.func_type not in KERNEL_TYPES:
        return bad
    for s in iter_stmts(f.body):
        if isinstance(s, AssignStmt) and isinstance(s.value, Call) and s.value.op.startswith("tensor."):
            bad.append((f, s, f"tensor op '{s.value.op}' left in an InCore function"))
    return bad


def _tile_vars(f: Function):
    for s in iter_stmts(f.body):
        vs = [s.var] if isinstance(s, AssignStmt) else list(getattr(s, "iter_args", ())) + \
            list(getattr(s, "return_vars", ()))
        for v in vs:
            if isinstance(v.type, TileType):
                yield s, v


@function_prop("TileMemoryInferred")
def _spaces(f: Function, program: Program, ctx) -> list:
    if f.func_type not in KERNEL_TYPES:
        return []
    return [(f, s, f"tile '{v.name}' has no memory space") for s, v in _tile_vars(f) if v.type.memory_space is None]


@function_prop("HasMemRefs")
def _memrefs(f: Function, program: Program, ctx) -> list:
    """Every InCore tile names a buffer (``MemRef``) whose ``size`` is the tile's bytes; a buffer
    holds tiles of one memory space and has one address (or none yet); a loop's result is in the
    buffer of its carried value (the generated kernel reads it from there)."""
    bad = []
    if f.func_type not in KERNEL_TYPES:
        return bad
    first: dict[str, Var] = {}
    for s, v in _tile_vars(f):
        m, t = v.type.memref, v.type
        if m is None:
            bad.append((f, s, f"tile '{v.name}' has no MemRef (buffer)"))
            continue
        if m.size != t.nbytes:
            bad.append((f, s, f"tile '{v.name}' has {t.nbytes} bytes but its MemRef says {m.size}"))
        w = first.setdefault(m.base, v)
        if w.type.memory_space != t.memory_space:
            bad.append((f, s, f"buffer '{m.base}' holds tiles of two memory spaces: '{w.name}' "
                              f"({w.type.memory_space.name}) and '{v.name}' ({t.memory_space.name})"))
        elif w.type.memref.addr != m.addr:
            bad.append((f, s, f"buffer '{m.base}' has two addresses: {w.type.memref.addr} ('{w.name}') and "
                              f"{m.addr} ('{v.name}')"))
        it = next((a for a, r in zip(s.iter_args, s.return_vars) if r is v), None) \
            if isinstance(s, (ForStmt, WhileStmt)) else None
        if it is not None:
            if it.type.memref != m:
                bad.append((f, s, f"loop result '{v.name}' is not in the buffer of its carried value "
                                  f"'{it.name}'"))
    return bad


@function_prop("AllocatedMemoryAddr")
def _addresses(f: Function, program: Program, ctx) -> list:
    bad = []
    platform = getattr(ctx, "platform", None)
    if f.func_type not in KERNEL_TYPES:
        return bad
    for s, v in _tile_vars(f):
        m = v.type.memref
        if m is None or m.addr is None:
            bad.append((f, s, f"tile '{v.name}' has no address"))
        elif platform is not None and m.addr + m.end > platform.capacity(v.type.memory_space):
            bad.append((f, s, f"tile '{v.name}' at {m.addr}+{m.offset}+{m.size} (buffer '{m.base}') exceeds "
                              f"{v.type.memory_space.name} capacity {platform.capacity(v.type.memory_space)}"))
    return bad


@function_prop("TileOps2D")
def _tiles_2d(f: Function, program: Program, ctx) -> list:
    """Every tile of an InCore function has rank 2 (FlattenTileNdTo2D)."""
    if f.func_type not in KERNEL_TYPES:
        return []
    return [(f, s, f"tile '{v.name}' has rank {len(v.type.shape)} ({list(v.type.shape)}), not 2")
            for s, v in _tile_vars(f) if len(v.type.shape) != 2]
