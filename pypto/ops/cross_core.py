"""Cross-core ops of a mixed kernel: the pipes between the cube core (AIC) and the vector cores (AIV)
of one cluster, and the buffers they run through.

A mixed kernel is a ``FunctionType.Group`` function calling one ``FunctionType.AIC`` function and one
``FunctionType.AIV`` function (run on one or both vector lanes, see ``dual_aiv_dispatch``). They
talk through pipes, one per ``(id, direction)``: ``v2c`` (vector -> cube) and ``c2v``
(cube -> vector), each a ring of ``slot_num`` slots:

* ``tpush_to_aic(tile, split=, id=)`` (AIV) / ``tpush_to_aiv(tile, split=, id=)`` (AIC): put a copy
  of ``tile`` in the next slot; waits while every slot is taken (pushed and not yet freed).
* ``tpop_from_aiv(split=, id=)`` (AIC) / ``tpop_from_aic(split=, id=)`` (AIV): the next pushed slot
  as a tile (shape / dtype / memory from the assignment's annotation, ``x: pl.Tile[[16, 16], pl.FP32,
  pl.Mem.Mat] = pl.tpop_from_aiv(...)``, or ``shape=`` / ``dtype=``; a ``pl.TileView(valid_shape=[m, n])``
  there, ints or run-time scalars, becomes its ``valid_shape``); waits while none is pushed.
* ``tfree_to_aiv(tile, id=)`` (AIC) / ``tfree_to_aic(tile, id=)`` (AIV): release the oldest popped
  slot of that pipe back to the producer.
* ``split``: 0 the tile whole, 1 / 3 halves along rows (UP_DOWN, ``3`` odd: lane 0 takes the ceil
  half), 2 / 4 along columns (LEFT_RIGHT). A split push of lane ``i`` carries its half; the cube's
  pop waits for both lanes and joins the halves; a split push from the cube sends lane ``i`` its
  half. Unsplit with two lanes (``dual_aiv_dispatch``): the cube's push goes to both lanes, the
  cube's pop takes one slot of each lane and returns lane 0's.
* ``aic_initialize_pipe`` / ``aiv_initialize_pipe(c2v_buf, v2c_buf, dir_mask=, slot_size=,
  slot_num=, local_slot_num=, id=)``: declare pipe ``id`` (``dir_mask`` 1: c2v, 2: v2c, 3: both;
  ``slot_num`` default 8 one-way, 4 per direction both ways); ``reserve_buffer(name=, size=,
  base=)`` / ``import_peer_buffer(name=, peer_func=)``: the consumer's slot buffer and the
  producer's handle on it (an INT32 address).

Simulator form: each op is a call on ``_cc``, the kernel's link to its cluster
(:mod:`pypto.runtime.cross_core`); the waiting ones are ``yield from`` so a core that waits yields
to the others of its cluster in simulated time, and a wait that can never end is reported with the
kernel, the core, the pipe and the source line. Reference form (``torch_codegen``,
:mod:`pypto.ops.support.cross_core`): the members of a Group call run in threads, pipes are FIFOs,
a pop waits for its push; the set-up ops and ``tfree`` have no effect on values there.
"""
from __future__ import annotations

from pypto.errors import Span
from pypto.ir.nodes import ConstInt
from pypto.ir.types import ScalarType, TileType, TupleType
from pypto.language.dtypes import INT32
from pypto.language.enums import MemorySpace
from pypto.ops.registry import OpArgs, OpDef, Param, register
from pypto.ops.rules import expect, static_ints
from pypto.ops.traits import Lockstep

# The pipe ops run on a lockstep gang of clusters too (pypto.runtime.cross_core, a cluster with a
# gang axis): a push copies the gang's tiles into one slot entry, a pop copies it out, the set-up
# and tfree move nothing; the waits are the same for every member (their instruction streams are
# the same), so one wait stands for all. Hence the "copy" form. The buffer ops (reserve / import)
# have none: their addresses are scalars the kernels may read.
_GANG = (Lockstep.COPY,)

# split codes (pto-isa TileSplitAxis): 0 none, 1 up-down, 2 left-right, 3 / 4 the same over an odd extent
SPLIT_CODES = (0, 1, 2, 3, 4)
_PUSH_DIR = {"tile.tpush_to_aic": "v2c", "tile.tpush_to_aiv": "c2v"}
_POP_DIR = {"tile.tpop_from_aiv": "v2c", "tile.tpop_from_aic": "c2v"}
_FREE_DIR = {"tile.tfree_to_aiv": "v2c", "tile.tfree_to_aic": "c2v"}


def _statement(a: OpArgs, span: Span):
    return TupleType(())


def _check_split(op: str, a: OpArgs, span: Span) -> None:
    expect(a.split in SPLIT_CODES, op, f"split must be one of {SPLIT_CODES} (0 none, 1 up-down, 2 left-right, "
           f"3 / 4 the same over an odd extent), got {a.split}", span)
    expect(a.id is None or (isinstance(a.id, int) and a.id >= 0), op,
           f"id must be a non-negative integer, got {a.id}", span)


def _no_value(name: str):
    return lambda a: "_pto.cc_noop()"


def _push_infer(op: str):
    def infer(a: OpArgs, span: Span):
        expect(isinstance(a.tile.type, TileType), op, "pushes a tile", span)
        _check_split(op, a, span)
        return TupleType(())
    return infer


def _pop_infer(op: str, default_space: MemorySpace):
    def infer(a: OpArgs, span: Span):
        expect(a.shape is not None and a.dtype is not None, op,
               "the popped tile's shape and dtype are not known", span,
               "annotate the target: x: pl.Tile[[16, 16], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(...), "
               "or pass shape=[...] and dtype=...")
        _check_split(op, a, span)
        shape = static_ints(op, "shape", a.shape, span)
        valid = None if a.valid_shape is None else valid_extents(op, a.valid_shape.elements, shape, span)
        return TileType(shape, a.dtype, a.target_memory or default_space, valid or None)
    return infer


def valid_extents(op: str, elements, shape, span: Span) -> tuple:
    """A popped (or lane-shared) tile's ``valid_shape``: one extent per axis, each a constant within
    the axis or an integer scalar (a run-time extent)."""
    expect(len(elements) == len(shape), op, f"valid_shape needs {len(shape)} extents, got {len(elements)}", span)
    valid = []
    for e, n in zip(elements, shape):
        if isinstance(e, ConstInt):
            expect(0 <= e.value <= n, op, f"valid_shape extent {e.value} is outside [0, {n}]", span)
            valid.append(e.value)
        else:
            expect(isinstance(getattr(e, "type", None), ScalarType) and e.type.dtype.is_int(), op,
                   "a valid_shape extent must be an int or an integer scalar", span)
            valid.append(e)
    return tuple(valid)


for _name, _dir in _PUSH_DIR.items():
    register(OpDef(
        name=_name,
        params=(Param("tile", "tile"), Param("split", "str", 0), Param("lane_stride", "str", None),
                Param("id", "str", None)),
        infer=_push_infer(_name), ref=lambda a, d=_dir: f"_pto.cc_push({d!r}, {a.id}, {a.tile}, {a.split})",
        sim=lambda a, dst, where="", d=_dir: (f"yield from _cc.push({d!r}, {a.id}, {a.tile}, {a.split}, "
                                             f"{where!r})"),
        dsl=_name.split(".")[1], operand_kinds=("tile",), waits=True, traits=_GANG,
        doc=f"push a tile into the {_dir} pipe (waits while its ring is full)",
    ))

for _name, _dir in _POP_DIR.items():
    register(OpDef(
        name=_name,
        params=(Param("shape", "ints", None, optional=True), Param("dtype", "dtype", None),
                Param("split", "str", 0), Param("lane_stride", "str", None), Param("id", "str", None),
                Param("target_memory", "mem", None),
                # (ours: the popped tile's valid region, from a pl.TileView(valid_shape=[...]) of the
                # assignment's annotation; ints or integer scalars — the printed form states it here)
                Param("valid_shape", "ints", None, optional=True)),
        infer=_pop_infer(_name, MemorySpace.Mat if _dir == "v2c" else MemorySpace.Vec),
        ref=lambda a, d=_dir: f"_pto.cc_pop({d!r}, {a.id}, {a.split})",
        sim=lambda a, dst, where="", d=_dir: f"yield from _cc.pop({d!r}, {a.id}, {dst}, {a.split}, {where!r})",
        dsl=_name.split(".")[1], operand_kinds=(), waits=True, traits=_GANG,
        doc=f"pop the next tile of the {_dir} pipe (waits until one is pushed)",
    ))

for _name, _dir in _FREE_DIR.items():
    register(OpDef(
        name=_name,
        params=(Param("tile", "tile"), Param("split", "str", None), Param("id", "str", None)),
        infer=_statement, ref=_no_value(_name),
        sim=lambda a, dst, where="", d=_dir: f"_cc.free({d!r}, {a.id}, {a.tile}, {where!r})",
        dsl=_name.split(".")[1], operand_kinds=("tile",), waits=True, traits=_GANG,
        doc=f"release the oldest popped slot of the {_dir} pipe to its producer",
    ))


def _init_infer(op: str):
    def infer(a: OpArgs, span: Span):
        expect(a.dir_mask in (1, 2, 3), op, f"dir_mask must be 1 (c2v), 2 (v2c) or 3 (both), got {a.dir_mask}",
               span)
        expect(isinstance(a.slot_size, int) and a.slot_size > 0, op,
               f"slot_size must be a positive byte count, got {a.slot_size}", span)
        for k in ("slot_num", "local_slot_num"):
            v = getattr(a, k)
            expect(v is None or (isinstance(v, int) and v > 0), op, f"{k} must be a positive integer, got {v!r}", span)
        if a.slot_num is not None and a.local_slot_num is not None:
            expect(a.local_slot_num <= a.slot_num, op, f"local_slot_num ({a.local_slot_num}) must be <= slot_num "
                   f"({a.slot_num})", span)
        return TupleType(())
    return infer


for _side in ("aic", "aiv"):
    _name = f"tile.{_side}_initialize_pipe"
    register(OpDef(
        name=_name,
        params=(Param("c2v_consumer_buf", "scalar", None), Param("v2c_consumer_buf", "scalar", None),
                # (keyword-only in the DSL: defaults so that they may follow the optional buffers; the
                # type rule requires them)
                Param("dir_mask", "str", None), Param("slot_size", "str", None), Param("slot_num", "str", None),
                Param("local_slot_num", "str", None), Param("id", "str", None)),
        infer=_init_infer(_name), ref=_no_value(_name),
        sim=lambda a, dst, where="", s=_side: (f"_cc.init_pipe({s!r}, {a.dir_mask}, {a.slot_size}, "
                                              f"{a.slot_num}, {a.local_slot_num}, {a.id}, {where!r})"),
        dsl=f"{_side}_initialize_pipe", operand_kinds=(), waits=True, traits=_GANG,
        doc=f"declare a cross-core pipe on the {_side.upper()} side",
    ))


def _reserve_infer(a: OpArgs, span: Span):
    expect(isinstance(a.name, str) and a.name, "tile.reserve_buffer", "name must be a non-empty string", span)
    expect(isinstance(a.size, int) and a.size > 0, "tile.reserve_buffer",
           f"size must be a positive byte count, got {a.size}", span)
    expect(isinstance(a.base, int) and a.base >= -1, "tile.reserve_buffer",
           f"base must be pl.AUTO (-1) or a byte address, got {a.base}", span)
    return ScalarType(INT32)


def _import_infer(a: OpArgs, span: Span):
    expect(isinstance(a.name, str) and isinstance(a.peer_func, str), "tile.import_peer_buffer",
           "name and peer_func must be strings", span)
    return ScalarType(INT32)


register(OpDef(
    name="tile.reserve_buffer",
    params=(Param("name", "str"), Param("size", "str"), Param("base", "str", -1)),
    infer=_reserve_infer, ref=_no_value("tile.reserve_buffer"),
    sim=lambda a, dst, where="": f"_cc.reserve({a.name}, {a.size}, {a.base}, {where!r})",
    dsl="reserve_buffer", operand_kinds=(), waits=True,
    doc="reserve the named slot buffer of a pipe this core consumes (its INT32 address)",
))
register(OpDef(
    name="tile.import_peer_buffer",
    params=(Param("name", "str"), Param("peer_func", "str")),
    infer=_import_infer, ref=_no_value("tile.import_peer_buffer"),
    sim=lambda a, dst, where="": f"_cc.import_peer({a.name}, {a.peer_func}, {where!r})",
    dsl="import_peer_buffer", operand_kinds=(), waits=True,
    doc="the address of the slot buffer a peer function of the group reserved",
))
