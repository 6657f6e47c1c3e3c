"""``python -m pypto.tools.op_reference [-o docs/ops.md]``: the op reference, generated from the registry.

For every registered op (``pypto.ops.registry``): its IR name and ``pl.`` spelling, the signature
(parameters in schema order with their kinds and defaults), the dtypes its type rule accepts, its
meaning (the op's ``doc`` and its reference semantics: the torch expression ``torch_codegen`` runs,
shown on the parameter names) and the numerics contract of its family. Nothing here is written by
hand per op: a new op appears with its registry entry, and ``tests/tools/test_op_reference.py``
fails until the page is regenerated.

Dtypes are found by asking the type rule: every value operand (tensor, tile or scalar) is given
one dtype at a time on a ``[16, 16]`` operand (``[16, 1]`` / ``[1, 16]`` for the second operand of
a row / column broadcast), attributes keep their defaults. Ops whose rule needs more than that
(a layout, an index tile, matching shapes of another form) say "see the rule" rather than guess.
Decision: the numerics contract is stated per op family (the module that defines the op), since the
family shares it; a family without one fails the test.
"""
from __future__ import annotations

import sys

from pypto.tools import generated_file

# the numerics contract of each op family (the module of pypto/ops/ defining the op)
FAMILY_CONTRACT = {
    "elementwise": "FP16/BF16 operands are computed in FP32 and rounded once to the storage dtype per op "
                   "(as the vector unit does; for + - * / this is the correctly rounded result); FP32 per "
                   "IEEE round-to-nearest-even; integers wrap in two's complement. Simulator == reference "
                   "bit for bit (tests/ops).",
    "elementwise_ext": "As elementwise: one rounding to the result dtype per op; simulator == reference bit for "
                       "bit, each op checked against a float64 computation in its test module.",
    "broadcast": "As elementwise, the smaller operand repeated along the broadcast axis; no extra rounding.",
    "bitwise": "Exact integer operations on the bit patterns (pypto/numerics/intops.py); shift counts as "
               "documented in docs/language.md (bitwise section).",
    "compare": "Exact: IEEE comparisons (NaN compares unequal), select moves bit patterns unchanged.",
    "cast": "Bit-exact model of the device's conversion (pypto/numerics/cast.py) under the seven rounding "
            "modes, with the platform's overflow and saturation rules; chains the platform lacks natively "
            "are listed with their exactness in docs/cast-chains.md.",
    "reduction": "A defined order: the device's binary tree when a tmp tile is given, sequential otherwise; "
                 "the partial sums are rounded to the operand dtype at each step (no wider accumulator; see "
                 "docs/numerics.md#reductions-order-and-precision). The whole tile is reduced, padding included.",
    "argreduce": "Only the valid extent of the reduced axis takes part. Products in a defined order (binary "
                 "tree with tmp_tile, else sequential), rounded per step to the operand dtype (integers wrap); "
                 "arg reductions are exact: ties give the lowest index, a NaN is the extreme.",
    "matmul": "FP16/BF16 inputs multiplied exactly and accumulated in FP32 (INT8 in INT32); the sum of one "
              "task is one call laid out as for that task alone, so the blocking is the same on every run.",
    "padding": "Data movement only: the valid region is copied bit for bit, the padding set to the pad value.",
    "memory": "Data movement only: bit patterns preserved (atomic stores add in completion order).",
    "layout": "Data movement only: bit patterns preserved.",
    "index": "Data movement only (bit patterns, NaN payloads included); out-of-range indices are a "
             "simulation error unless the op's mode says otherwise.",
    "creation": "Exact integers in the result dtype (wrapping in it); random reproduces the device's "
                "Philox-4x32 generator bit for bit.",
    "sort": "Exact: comparisons and bit-pattern moves; descending, NaN first; ties within a sort32 block by "
            "the smaller index value, in a merge the earlier list first (docs/language.md, sort section).",
    "views": "Data movement only: bit patterns preserved (reinterpret_view reads the same bytes as another "
             "dtype; write converts its scalar as full does).",
    "paged": "Data movement only (bit patterns preserved); an index, block or row out of range is a "
             "located error (at compile time for constant offsets, else at run time).",
    "shape_ops": "Exact: an extent (a static one folds to its int at compile time).",
    "block_ops": "Exact: launch geometry (block index and count of a multi-block task, core counts).",
    "matmul_ext": "As matmul: FP32 (INT32) products accumulated in K order; a bias is the accumulator's "
                  "initial value, added once; a batched product is one 2-D product per batch.",
    "matmul_mx": "FP8E4M3FN data and FP8E8M0 scales (one per 32 K elements) decoded exactly, the K sum "
                 "accumulated in float64 from +0 (acc / bias included) and rounded once to FP32, ties to even, "
                 "overflow to inf; NaN data or a NaN scale propagates (pypto/numerics/mx.py).",
    "debug_ops": "No numerics: a snapshot or a print of the value as it is.",
    "task_ops": "No numerics: task bookkeeping.",
    "array_ops": "Exact: integer / BOOL scalar elements of an on-core array, read and written as stored "
                 "(a bad index is a located error).",
    "cross_core": "Exact: a pipe moves a tile's bytes between an AIC and an AIV core unchanged (a split "
                  "carries a half); no arithmetic.",
    "prefetch": "No numerics: a cache hint that changes no value; the simulator models the transfer's time "
                "(hidden behind the work before the wait), not an L2.",
    "aiv_split": "Exact: the named crossings of a pl.split_aiv region become pipe pushes / pops, which move "
                 "a tile's bytes unchanged (each lane its half, the cube the joined tile); no arithmetic.",
    "sync": "No numerics: flags, events, barriers and fences order work and change no value (a wait that "
            "can never end is a located error; docs/simulator.md, \"Synchronisation\").",
    "distributed": "put / get / remote_load / remote_store copy bytes exactly; a collective reduces in the "
                   "operand dtype, one rounding per step, over the ranks in an order drawn from sim_seed "
                   "(docs/distributed.md), bit-identical to that fixed-order chain.",
}

_SHAPE = [16, 16]


def family(op) -> str:
    """The family of an op: the pypto/ops module its reference semantics is defined in."""
    fn = op.ref or op.infer
    return fn.__module__.rsplit(".", 1)[-1]


def _kind_text(p) -> str:
    kind = {"value": "tensor|tile", "any": "tensor|tile|scalar"}.get(p.kind, p.kind)
    if p.required:
        return f"{p.name}: {kind}"
    d = p.default
    d = d.name if hasattr(d, "name") and not isinstance(d, str) else repr(d)
    return f"{p.name}: {kind} = {d}"


def signature(op) -> str:
    """``name(p: kind, q: kind = default, ...)``."""
    return f"{op.name}({', '.join(_kind_text(p) for p in op.params)})"


def _operand(p, index: int, op, dtype):
    from pypto.ir.nodes import ConstFloat, ConstInt, Var
    from pypto.ir.types import ScalarType, TensorType, TileType

    shape = list(_SHAPE)
    if index == 1 and "row_expand" in op.name:
        shape = [16, 1]
    if index == 1 and "col_expand" in op.name:
        shape = [1, 16]
    kind = p.kind
    if kind in ("value", "any"):
        kind = op.level
    if kind == "tensor":
        return Var(p.name, TensorType(shape, dtype))
    if kind == "tile":
        return Var(p.name, TileType(shape, dtype))
    if kind == "scalar":
        return ConstFloat(1.0, dtype) if dtype.is_float() else ConstInt(1, dtype)
    return None


def dtypes(op) -> list[str] | None:
    """The dtypes the type rule accepts for the op's value operands (all given the same dtype), or
    None when the rule needs more than uniform operands to answer."""
    from pypto.errors import Span
    from pypto.language.dtypes import ALL_DTYPES

    values = [p for p in op.params if p.kind in ("tensor", "tile", "value", "any") and p.required]
    if not values or any(p.kind in ("ints", "task_ids") and p.required for p in op.params):
        return None
    ok = []
    for dt in ALL_DTYPES:
        if dt.name in ("INDEX", "TASK_ID"):
            continue
        args = []
        try:
            for i, p in enumerate(op.params):
                if p.kind in ("tensor", "tile", "value", "any", "scalar") and p.required:
                    args.append(_operand(p, i, op, dt))
                elif p.kind == "dtype" and p.required:
                    args.append(dt)
                else:
                    args.append(None if p.required else p.default)
            op.infer_type(tuple(args), Span.unknown())
        except Exception:  # noqa: BLE001 - a rejection (or a rule needing more) means "not this dtype"
            continue
        ok.append(dt.name)
    return ok or None


def semantics(op) -> str:
    """The reference semantics on the parameter names (the torch source ``torch_codegen`` emits)."""
    from pypto.ops.registry import Src

    args = []
    for p in op.params:
        if p.kind in ("tensor", "tile", "value", "any", "scalar", "ints", "task_ids"):
            args.append(Src(p.name, None))
        else:
            args.append(Src(p.name if p.required or p.default is None else repr(p.default), None))
    try:
        text = op.ref(op.args(tuple(args)))
    except Exception:  # noqa: BLE001 - a ref that needs operand types: name it, do not guess
        return ""
    return " ".join(str(text).split())


def render() -> str:
    """The whole page (Markdown)."""
    from pypto.ops.registry import all_ops

    ops = all_ops()
    by_family: dict[str, list] = {}
    for name in sorted(ops):
        by_family.setdefault(family(ops[name]), []).append(ops[name])
    out = ["# Op reference (generated)", "",
           "Generated from the op registry by `python -m pypto.tools.op_reference -o docs/ops.md`; do not edit by "
           "hand (tests/tools/test_op_reference.py checks it is current). Per op: the `pl.` call that "
           "dispatches to it, the signature in schema order (value kinds `tensor`, `tile`, `scalar`; attributes "
           "`ints`, `dtype`, `mode`, ... with defaults), the dtypes its type rule accepts on uniform operands "
           "(\"see the rule\": the rule needs more than that to answer), its meaning and the torch expression "
           "the reference executor runs. Each family states its numerics contract once. The language guide is "
           "[language.md](language.md), the numerics [numerics.md](numerics.md).", ""]
    out.append("Families: " + ", ".join(f"[{f}](#{f}-{len(v)}-ops)" for f, v in sorted(by_family.items()))
               + f". {len(ops)} ops in all.")
    for fam in sorted(by_family):
        members = by_family[fam]
        out += ["", f"## {fam} ({len(members)} ops)", "",
                f"Numerics: {FAMILY_CONTRACT.get(fam, '(no contract stated)')}", "",
                "| op | `pl.` call | signature | dtypes | meaning | reference (torch) |",
                "|---|---|---|---|---|---|"]
        for op in members:
            dts = dtypes(op)
            dsl = f"`pl.{op.dsl}`" if op.dsl else ""
            ref = semantics(op)
            cells = [f"`{op.name}`", dsl, f"`{signature(op)}`", ", ".join(dts) if dts else "see the rule",
                     op.doc or "", f"`{ref}`" if ref else ""]
            out.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    """Write the page (``-o``) or print it."""
    return generated_file.main("pypto.tools.op_reference",
                              "Write the op reference generated from the op registry.", render, argv)


if __name__ == "__main__":
    sys.exit(main())
