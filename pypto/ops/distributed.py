"""The distributed ops of ``pypto.language.distributed`` (``pld``) as they appear in a kernel:
communication-context queries, signals (notify / wait), cross-rank data movement
(remote_load / remote_store, put / get) and the kernel-level collectives.

Each op is a ``dist.*`` registry entry whose simulator form calls :mod:`pypto.ops.support.dist`
(``_pto.dist``), which reaches the other ranks through the world the engine installed for the
thread running this rank. Ops that may have to wait for another rank (wait, barrier, the
collectives) are generators in the kernel (``yield from``): the rank's scheduler keeps running
its other cores while one waits. Each call records its source location (``where``), which a
deadlock report names.

The reference executor (``torch_codegen``) runs the same functions, so it too needs a world: a
distributed kernel has meaning only inside a multi-rank run.
"""
from __future__ import annotations

import enum

from pypto.errors import InvalidOperationError, Span
from pypto.ir.types import ScalarType, TensorType, TileType, TupleType
from pypto.language.dtypes import INT32
from pypto.language.enums import AtomicType, MemorySpace
from pypto.ops.registry import OpArgs, OpDef, Param, register
from pypto.ops.rules import expect, static_ints
from pypto.ops.traits import GlobalMemoryAccess, MemorySpaces

_WHERE = Param("where", "str", None)


def _where(span: Span) -> str:
    return f"{span.file}:{span.line}" if span is not None and not span.is_unknown() else "<unknown>"


def _enum_name(v, allowed: tuple[str, ...], what: str, op: str, span: Span) -> str:
    """An enum member (``pld.NotifyOp.AtomicAdd``) or its name, as the name string."""
    name = v.name if isinstance(v, enum.Enum) else v
    if name not in allowed:
        raise InvalidOperationError(f"pld.{op}: {what} must be one of {', '.join(allowed)}, got {v!r}", span)
    return name


def _with_where(names: tuple[str, ...], enums: dict | None = None):
    """dsl_args: bind positionals to ``names`` (the reference's order), normalise enum operands to
    names and record the call's source location. The reference's keyword ``op=`` is our
    ``reduce_op`` / ``notify_op`` (``OpArgs.op`` is the op's definition)."""
    def fix(args: list, kwargs: dict, span: Span):
        kw = dict(kwargs)
        if "op" in kw:
            target = next((n for n in names if n.endswith("_op")), None)
            if target is not None:
                kw[target] = kw.pop("op")
        for n, v in zip(names, args):
            if n in kw:
                raise InvalidOperationError(f"pld: got multiple values for '{n}'", span)
            kw[n] = v
        for n, (allowed, what) in (enums or {}).items():
            if n in kw:
                kw[n] = _enum_name(kw[n], allowed, what, names[0], span)
        kw.setdefault("where", _where(span))
        return [], kw
    return fix


def _scalar_i32(a: OpArgs, span: Span):
    return ScalarType(INT32)


def _none(a: OpArgs, span: Span):
    return TupleType(())


def _tensor_of(name: str):
    def infer(a: OpArgs, span: Span):
        t = getattr(a, name).type
        expect(isinstance(t, TensorType), "dist", f"'{name}' must be a window tensor", span)
        return t
    return infer


register(OpDef(
    name="dist.world_size", params=(_WHERE,), infer=_scalar_i32,
    ref=lambda a: "_pto.dist.world_size()", sim=lambda a, dst: "_pto.dist.world_size()",
    dsl_args=_with_where(()), doc="the number of ranks of the program (in a kernel)",
))
register(OpDef(
    name="dist.get_comm_ctx", params=(Param("tensor", "tensor"), _WHERE), infer=_scalar_i32,
    ref=lambda a: f"_pto.dist.comm_ctx({a.tensor})", sim=lambda a, dst: f"_pto.dist.comm_ctx({a.tensor})",
    dsl_args=_with_where(("tensor",)),
    doc="the communication context of the window a DistributedTensor lies in (an INT32 handle)",
))
for _q in ("rank", "nranks"):
    register(OpDef(
        name=f"dist.{_q}", params=(Param("ctx", "scalar"), _WHERE), infer=_scalar_i32,
        ref=(lambda q: lambda a: f"_pto.dist.{q}({a.ctx})")(_q),
        sim=(lambda q: lambda a, dst: f"_pto.dist.{q}({a.ctx})")(_q),
        dsl_args=_with_where(("ctx",)),
        doc="this rank's index in the context's group" if _q == "rank" else "ranks of the context's group",
    ))

_NOTIFY_OPS = ("Set", "AtomicAdd")
_CMPS = ("Eq", "Ne", "Gt", "Ge", "Lt", "Le")


def _notify_infer(a: OpArgs, span: Span):
    expect(isinstance(a.tensor.type, TensorType) and a.tensor.type.dtype == INT32, "pld.system.notify",
           "the signal must be an INT32 window tensor", span)
    expect(len(a.offsets.elements) == len(a.tensor.type.shape), "pld.system.notify",
           "offsets must index one cell of the signal", span)
    return TupleType(())


register(OpDef(
    name="dist.notify",
    params=(Param("tensor", "tensor", aliases=("target",)), Param("peer", "scalar"), Param("offsets", "ints"),
            Param("value", "scalar"), Param("notify_op", "str", "AtomicAdd"), _WHERE),
    infer=_notify_infer,
    ref=lambda a: f"_pto.dist.notify({a.tensor}, {a.offsets}, {a.peer}, {a.value}, {a.notify_op}, {a.where})",
    sim=lambda a, dst: f"_pto.dist.notify({a.tensor}, {a.offsets}, {a.peer}, {a.value}, {a.notify_op}, {a.where})",
    traits=(GlobalMemoryAccess("write"),),
    dsl_args=_with_where(("tensor", "peer", "offsets", "value", "notify_op"), {"notify_op": (_NOTIFY_OPS, "op")}),
    doc="set or atomically add to one cell of a peer's signal window",
))


def _wait_infer(a: OpArgs, span: Span):
    expect(isinstance(a.tensor.type, TensorType) and a.tensor.type.dtype == INT32, "pld.system.wait",
           "the signal must be an INT32 window tensor", span)
    expect(len(a.offsets.elements) == len(a.tensor.type.shape), "pld.system.wait",
           "offsets must index one cell of the signal", span)
    return TupleType(())


for _w in ("wait", "defer_wait"):
    register(OpDef(
        name=f"dist.{_w}",
        params=(Param("tensor", "tensor", aliases=("signal",)), Param("offsets", "ints"), Param("expected", "scalar"),
                Param("cmp", "str", "Ge"), _WHERE),
        infer=_wait_infer,
        ref=lambda a: f"_pto.dist.run_now(_pto.dist.wait({a.tensor}, {a.offsets}, {a.expected}, {a.cmp}, {a.where}))",
        sim=lambda a, dst: f"(yield from _pto.dist.wait({a.tensor}, {a.offsets}, {a.expected}, {a.cmp}, {a.where}))",
        traits=(GlobalMemoryAccess("read"),),
        dsl_args=_with_where(("tensor", "offsets", "expected", "cmp"), {"cmp": (_CMPS, "cmp")}),
        doc="block until this rank's signal cell compares to expected"
            + ("" if _w == "wait" else " (the reference defers it to the task's completion; here it waits in place)"),
    ))

register(OpDef(
    name="dist.barrier", params=(Param("tensor", "tensor"), _WHERE), infer=_tensor_of("tensor"),
    ref=lambda a: f"_pto.dist.run_now(_pto.dist.barrier({a.tensor}, {a.where}))",
    sim=lambda a, dst: f"(yield from _pto.dist.barrier({a.tensor}, {a.where}))",
    traits=(GlobalMemoryAccess("read"),), writes="tensor", dsl_args=_with_where(("tensor",)),
    doc="all ranks of the signal window's group meet; returns the signal",
))


def _rl_infer(a: OpArgs, span: Span):
    expect(isinstance(a.tensor.type, TensorType), "pld.tile.remote_load", "the source must be a window tensor", span)
    shape = static_ints("pld.tile.remote_load", "shape", a.shape, span)
    return TileType(shape, a.tensor.type.dtype, MemorySpace.Vec)


register(OpDef(
    name="dist.remote_load",
    params=(Param("tensor", "tensor", aliases=("target",)), Param("peer", "scalar"), Param("offsets", "ints"),
            Param("shape", "ints"), _WHERE),
    infer=_rl_infer,
    ref=lambda a: f"_pto.dist.remote_load_ref({a.tensor}, {a.peer}, {a.offsets}, {a.shape}, {a.where})",
    sim=lambda a, dst: f"_pto.dist.remote_load({dst}, {a.tensor}, {a.peer}, {a.offsets}, {a.where})",
    traits=(GlobalMemoryAccess("read"), MemorySpaces((), MemorySpace.Vec)),
    dsl_args=_with_where(("tensor", "peer", "offsets", "shape")),
    doc="copy a region of a peer's window into a new tile",
))


def _rs_infer(a: OpArgs, span: Span):
    expect(isinstance(a.tile.type, (TileType, TensorType)), "pld.tile.remote_store",
           "the source must be a tile (or, pld.tensor.remote_store, a tensor)", span)
    expect(isinstance(a.tensor.type, TensorType) and a.tensor.type.dtype == a.tile.type.dtype,
           "pld.tile.remote_store", "the target must be a window tensor of the tile's dtype", span)
    return a.tensor.type


register(OpDef(
    name="dist.remote_store",
    params=(Param("tile", "value", aliases=("src_tile", "src")), Param("tensor", "tensor", aliases=("target",)),
            Param("peer", "scalar"), Param("offsets", "ints"), Param("atomic", "atomic", AtomicType.None_), _WHERE),
    infer=_rs_infer,
    ref=lambda a: (f"_pto.dist.remote_store({a.tile}, {a.tensor}, {a.peer}, {a.offsets}, "
                   f"{a.atomic == repr(AtomicType.Add)}, {a.where})"),
    sim=lambda a, dst: (f"_pto.dist.remote_store({a.tile}, {a.tensor}, {a.peer}, {a.offsets}, "
                        f"{a.atomic == repr(AtomicType.Add)}, {a.where})"),
    traits=(GlobalMemoryAccess("write"),),
    dsl_args=_with_where(("tile", "tensor", "peer", "offsets", "atomic")),
    doc="write a tile into a region of a peer's window",
))


def _pg_infer(op: str):
    def infer(a: OpArgs, span: Span):
        d, s = a.dst.type, a.src.type
        expect(isinstance(d, TensorType) and isinstance(s, TensorType), op, "dst and src must be tensors", span)
        expect(d.dtype == s.dtype, op, f"dst is {d.dtype.name}, src {s.dtype.name}", span)
        if a.shape is None:
            nd = ns = 1
            for x in d.shape:
                nd *= x if isinstance(x, int) else 1
            for x in s.shape:
                ns *= x if isinstance(x, int) else 1
            expect(nd == ns, op, f"dst {list(d.shape)} and src {list(s.shape)} differ in size", span,
                   "give shape= (and dst_offsets= / src_offsets=) to move a region")
        else:
            expect(a.dst_offsets is None or len(a.dst_offsets.elements) == len(d.shape), op,
                   "dst_offsets must index every dim of dst", span)
            expect(a.src_offsets is None or len(a.src_offsets.elements) == len(s.shape), op,
                   "src_offsets must index every dim of src", span)
        return d
    return infer


_REGION = (Param("dst_offsets", "ints", None, optional=True), Param("src_offsets", "ints", None, optional=True),
           Param("shape", "ints", None, optional=True))
_CHUNKS = (Param("chunk_rows", "str", 0), Param("chunk_cols", "str", 0), Param("pipeline", "bool", False))

register(OpDef(
    name="dist.put",
    params=(Param("dst", "tensor"), Param("peer", "scalar"), Param("src", "tensor"), *_REGION,
            Param("atomic", "atomic", AtomicType.None_), *_CHUNKS, _WHERE),
    infer=_pg_infer("pld.tensor.put"),
    ref=lambda a: (f"_pto.dist.put({a.dst}, {a.peer}, {a.src}, {a.atomic == repr(AtomicType.Add)}, {a.where}, "
                   f"{a.dst_offsets}, {a.src_offsets}, {a.shape})"),
    sim=lambda a, dst: (f"_pto.dist.put({a.dst}, {a.peer}, {a.src}, {a.atomic == repr(AtomicType.Add)}, {a.where}, "
                        f"{a.dst_offsets}, {a.src_offsets}, {a.shape})"),
    traits=(GlobalMemoryAccess("write"),), dsl_args=_with_where(("dst", "peer", "src", "dst_offsets", "src_offsets", "shape")),
    doc="copy a local tensor (or a region of it) into a window region of a peer (chunking: no effect here)",
))
register(OpDef(
    name="dist.get",
    params=(Param("dst", "tensor"), Param("peer", "scalar"), Param("src", "tensor"), *_REGION, *_CHUNKS, _WHERE),
    infer=_pg_infer("pld.tensor.get"),
    ref=lambda a: f"_pto.dist.get({a.dst}, {a.peer}, {a.src}, {a.where}, {a.dst_offsets}, {a.src_offsets}, {a.shape})",
    sim=lambda a, dst: (f"_pto.dist.get({a.dst}, {a.peer}, {a.src}, {a.where}, {a.dst_offsets}, {a.src_offsets}, "
                        f"{a.shape})"),
    traits=(GlobalMemoryAccess("read"),), writes="dst", dsl_args=_with_where(("dst", "peer", "src", "dst_offsets", "src_offsets", "shape")),
    doc="copy a peer's window region into a local tensor (or a region of it)",
))

# ---------------------------------------------------------------- kernel-level collectives
_REDUCE_OPS = ("Sum", "Max", "Min", "Prod")


def _coll(name: str, params: tuple, call: str, writes: str, doc: str, enums=None, order=None):
    pnames = tuple(p.name for p in params)
    register(OpDef(
        name=f"dist.{name}", params=(*params, _WHERE), infer=_tensor_of(writes),
        ref=lambda a: f"_pto.dist.run_now(_pto.dist.{call}({', '.join(str(getattr(a, n)) for n in order or pnames)}, "
                      f"{a.where}))",
        sim=lambda a, dst: f"(yield from _pto.dist.{call}({', '.join(str(getattr(a, n)) for n in order or pnames)}, "
                           f"{a.where}))",
        traits=(GlobalMemoryAccess("write"),), writes=writes, dsl_args=_with_where(pnames, enums), doc=doc,
    ))


_SIG = Param("signal", "tensor", None)
_coll("allreduce", (Param("target", "tensor"), _SIG, Param("reduce_op", "str", "Sum"), Param("mode", "str", "mesh"),
                    Param("core_num", "str", 1)),
      "allreduce", "target", "every rank's target becomes the reduction over the group (seeded rank order)",
      {"reduce_op": (_REDUCE_OPS, "op")}, order=("target", "reduce_op"))
_coll("allgather", (Param("local", "tensor"), Param("target", "tensor"), _SIG), "allgather", "target",
      "target holds every rank's local data, in group-rank order along dim 0", order=("local", "target"))
_coll("reduce_scatter", (Param("target", "tensor"), _SIG, Param("reduce_op", "str", "Sum")), "reduce_scatter", "target",
      "rank i's chunk i (dim 0) of target becomes the reduction of every rank's chunk i",
      {"reduce_op": (_REDUCE_OPS, "op")}, order=("target", "reduce_op"))
_coll("broadcast", (Param("target", "tensor"), _SIG, Param("root", "str", 0)), "broadcast", "target",
      "every rank's target becomes the root's", order=("target", "root"))
_coll("all_to_all", (Param("input", "tensor"), Param("target", "tensor"), _SIG), "all_to_all", "target",
      "chunk j of rank i's input lands in chunk i of rank j's target", order=("input", "target"))
_coll("all_to_all_v", (Param("input", "tensor"), Param("target", "tensor"), _SIG, Param("send_counts", "tensor"),
                       Param("recv_counts", "tensor")), "all_to_all_v", "target",
      "variable-count all-to-all: per-peer blocks of target.shape[0] // n rows; recv_counts get the clamped counts",
      order=("input", "target", "send_counts", "recv_counts"))
