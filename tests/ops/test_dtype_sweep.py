"""Every op x every dtype (issue 13, item 12): each combination either runs with the simulator and
the reference executor agreeing bit for bit, or is rejected with a located error — never a crash
inside torch (UINT16/32/64 and BOOL used to pass the type rules of the arithmetic ops and fail in
the simulator).

Kernels are generated from one template per op (below) into module files (kernels are parsed from
their source) and run through the differential fuzzer's executor. ``test_templates_cover_every_op``
keeps the sweep complete: a new ``pl.<op>`` needs a template here (or a reason to be excluded).
"""
from __future__ import annotations

import pytest
import torch

from pypto.ops.registry import all_ops
from pypto.tools.difffuzz.execute import load_module, run_case
from pypto.tools.difffuzz.generate import DTYPES, LOW_PRECISION_DATA, _data

# the torch float8 formats too (issue 15): they only move and cast, every other op refuses them
SWEPT = (*DTYPES, *LOW_PRECISION_DATA)

R, C = 8, 32

# op -> body (a statement list inside the pl.at scope assigning ``r``; ``x``, ``y`` [R, C], ``v``
# [R, 1], ``w`` [1, C], ``f`` [R, C] FP32 are the parameters) — the tensor form; ``TILE``: the tile
# form, storing into ``out`` of the input dtype
T = {
    **{op: f"r = pl.{op}(x, y)" for op in ("add", "sub", "mul", "div", "maximum", "minimum")},
    **{f"{op}s": f"r = pl.{op}(x, 2)" for op in ("add", "sub", "mul", "div", "maximum", "minimum")},
    **{op: f"r = pl.{op}(x)" for op in ("exp", "neg", "abs", "log", "sqrt", "rsqrt", "recip", "relu")},
    **{op: f"r = pl.{op}(x)" for op in ("row_sum", "row_max", "row_min", "col_sum", "col_max", "col_min")},
    "fillpad": "r = pl.fillpad(x, pl.PadValue.zero)",
    "cmp": "r = pl.cmp(x, y, cmp_type=2)",
    "cmps": "r = pl.cmps(x, 2, cmp_type=0)",
    "sel": "r = pl.sel(pl.cmp(x, y, cmp_type=2), x, y)",
    "sels": "r = pl.sels(pl.cmp(x, y, cmp_type=2), x, 2)",
    **{f"row_expand{s}": f"r = pl.row_expand{s}(x, v)" for s in ("", "_add", "_sub", "_mul", "_div", "_max",
                                                                   "_min", "_expdif")},
    **{f"col_expand{s}": f"r = pl.col_expand{s}(x, w)" for s in ("", "_add", "_sub", "_mul", "_div", "_max",
                                                                   "_min", "_expdif")},
    "expands": "r = pl.expands(x, 2)",
    "full": "r = pl.full([R, C], dtype=pl.DT, value=1)",
    "reshape": "r = pl.reshape(x, [C, R])",
    "transpose": "r = pl.transpose(x, 0, 1)",
    "concat": "r = pl.concat(x, y)",
    "slice": "r = pl.slice(x, [R, 16], [0, 16])",
    "read": "s = pl.read(x, [1, 2])\n        r = pl.full([R, C], dtype=pl.DT, value=s)",
    "assemble": "r = pl.add(x, y)\n        r = pl.assemble(r, pl.slice(y, [R, 16], [0, 0]), [0, 16])",
    "cast": "r = pl.cast(x, pl.FP32)",
    "cast_from_fp32": "r = pl.cast(f, pl.DT)",
    "matmul": "r = pl.matmul(x, m, out_dtype=pl.FP32)",
    "matmul_acc": "a = pl.matmul(x, m, out_dtype=pl.FP32)\n        r = pl.matmul_acc(a, x, m)",
    "dump_tag": "r = pl.add(x, y)",
    "debug_print": "r = pl.add(x, y)\n        pl.debug_print(r)",
    "create_tensor": "t[:] = pl.add(x, y)\n        r = pl.mul(t, y)",
}
# statements of the orchestration before the pl.at scope
PRE = {"dump_tag": "pl.dump_tag(x)", "create_tensor": "t = pl.create_tensor([R, C], dtype=pl.DT)"}
TILE = {
    **{f"tile_{op}": (f"tmp = pl.create_tile([R, C], dtype=pl.DT, target_memory=pl.Mem.Vec)\n"
                      f"        out = pl.store(pl.{op}(pl.load(x, [0, 0], [R, C]), tmp), [0, 0], out)")
       for op in ("row_sum", "row_max", "row_min", "col_sum", "col_max", "col_min")},
    "load_store": "out = pl.store(pl.load(x, [0, 0], [R, C]), [0, 0], out)",
    "move": "out = pl.store(pl.move(pl.load(x, [0, 0], [R, C]), target_memory=pl.Mem.Vec), [0, 0], out)",
    "extract": ("t = pl.load(x, [0, 0], [R, C], target_memory=pl.Mem.Mat)\n"
                "        out = pl.store(pl.move(pl.extract(t, [0, 0], [R, C], target_memory=pl.Mem.Left), "
                "target_memory=pl.Mem.Vec), [0, 0], out)"),
}
# reduction results are [R, 1] / [1, C]
_TILE_OUT = {"tile_row_sum": (R, 1), "tile_row_max": (R, 1), "tile_row_min": (R, 1),
             "tile_col_sum": (1, C), "tile_col_max": (1, C), "tile_col_min": (1, C)}
# dsl names not swept here, and why
EXCLUDED = {
    "create_tile": "covered by the tile reduction templates (their tmp_tile)",
    "task_id_array": "no element dtype", "task_dummy": "no element dtype", "task_id_set": "no element dtype", "task_id_get": "no element dtype",
    # issue 15's families (merged after this sweep was written): each is swept over the dtypes it takes,
    # with its refusals checked, in its own module (test_bitwise, test_argreduce, test_elementwise_ext,
    # test_index, test_create, test_sort); templates here are follow-up work
    **{n: "issue-15 family: per-dtype tests in its own module" for n in (
        "and_", "or_", "xor", "not_", "shl", "shr", "row_prod", "col_prod", "row_argmax", "row_argmin",
        "col_argmax", "col_argmin", "fmod", "rem", "sin", "cos", "prelu", "lrelu", "addc", "subc", "addsc",
        "subsc", "part_add", "part_mul", "part_max", "part_min", "gather", "scatter", "scatter_update",
        "mgather", "ci", "tri", "sort32", "mrgsort", "gather_mask", "scatter_mask",
        "mscatter", "fillpad_expand", "fillpad_inplace", "reinterpret_view", "write", "set_validshape",
        "transpose_view", "dim", "random", "gather_compare", "create_l1", "gather_row", "paged_gather", "gatherb", "expand_clone")},
    # the matmul variants: swept over every operand dtype (and refused ones) in test_matmul_ext
    **{n: "matmul variant: per-dtype tests in test_matmul_ext" for n in (
        "batch_matmul", "matmul_bias", "gemv", "gemv_acc", "gemv_bias")},
    # the MX matmuls take FP8E4M3FN data and FP8E8M0 scales only (their type rule refuses the rest):
    # tested in test_matmul_mx (FP8 / FP4-cast operands, random and special values, refusals)
    **{n: "MX matmul: FP8E4M3FN / FP8E8M0 only, tests in test_matmul_mx" for n in (
        "matmul_mx", "matmul_mx_acc", "matmul_mx_bias")},
    # the cross-core pipe ops move whole tiles between an AIC and an AIV core (a byte copy, no arithmetic):
    # they exist only inside AIC / AIV members of a Group, which these InCore templates are not; their
    # dtypes are exercised in tests/mixed and tests/ops/test_cross_core.py
    **{n: "cross-core pipe op: AIC/AIV members only (tests/mixed)" for n in (
        "aic_initialize_pipe", "aiv_initialize_pipe", "import_peer_buffer", "reserve_buffer", "tfree_to_aic",
        "tfree_to_aiv", "tpop_from_aic", "tpop_from_aiv", "tpush_to_aic", "tpush_to_aiv")},
    # the named crossings of a pl.split_aiv region: only inside a region (the parser supplies the mode),
    # folded into pipe pushes / pops by ExpandMixedKernel; tests/mixed/test_split_aiv.py runs them
    **{n: "split_aiv crossing: region only (tests/mixed/test_split_aiv.py)" for n in (
        "aiv_shard", "aic_gather")},
}


def _module(dt: str) -> str:
    lines = ["import pypto.language as pl", f"R, C = {R}, {C}", ""]
    for name, body in T.items():
        lines += ["", "@pl.jit",
                  f"def k_{name}(x: pl.Tensor[[R, C], pl.{dt}], y: pl.Tensor[[R, C], pl.{dt}], "
                  f"v: pl.Tensor[[R, 1], pl.{dt}], w: pl.Tensor[[1, C], pl.{dt}], f: pl.Tensor[[R, C], pl.FP32], "
                  f"m: pl.Tensor[[C, R], pl.{dt}]):",
                  *(["    " + PRE[name].replace("pl.DT", f"pl.{dt}")] if name in PRE else []),
                  "    with pl.at(level=pl.Level.CORE_GROUP):",
                  "        " + body.replace("pl.DT", f"pl.{dt}"),
                  "    return r"]
    for name, body in TILE.items():
        shape = list(_TILE_OUT.get(name, (R, C)))
        lines += ["", "@pl.jit",
                  f"def k_{name}(x: pl.Tensor[[R, C], pl.{dt}], out: pl.Out[pl.Tensor[{shape}, pl.{dt}]]):",
                  "    with pl.at(level=pl.Level.CORE_GROUP):",
                  "        " + body.replace("pl.DT", f"pl.{dt}"),
                  "    return out"]
    return "\n".join(lines) + "\n"


def test_templates_cover_every_op():
    names = {op.dsl for op in all_ops().values() if op.dsl}
    covered = set()
    for body in (*T.values(), *TILE.values(), *PRE.values()):
        covered |= {n for n in names if f"pl.{n}(" in body}
    assert names - covered - set(EXCLUDED) == set()


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    d = tmp_path_factory.mktemp("dtype_sweep")
    return {dt: load_module(_module(dt), d / f"sweep_{dt}.py", f"_dtype_sweep_{dt}") for dt in SWEPT}


def _args(name: str, dt: str):
    import random

    rng = random.Random(hash((name, dt)) & 0xFFFF)
    if name in TILE:
        return [_data(rng, (R, C), dt), torch.zeros(_TILE_OUT.get(name, (R, C)),
                                                     dtype=_data(rng, (1, 1), dt).dtype)]
    return [_data(rng, (R, C), dt), _data(rng, (R, C), dt), _data(rng, (R, 1), dt), _data(rng, (1, C), dt),
            _data(rng, (R, C), "FP32"), _data(rng, (C, R), dt)]


@pytest.mark.parametrize("name", [*T, *TILE])
def test_op_runs_alike_or_is_rejected_with_a_location(modules, name):
    outcomes = {}
    for dt in SWEPT:
        kernel = getattr(modules[dt], f"k_{name}")
        out = run_case(kernel, _args(name, dt), "a2a3sim", 0, limit_s=60)
        outcomes[dt] = out
        assert out.kind in ("agree", "rejected"), f"{name} {dt}: {out.kind}: {out.detail}\n{out.error}"
        if out.kind == "rejected":
            assert "error:" in out.error and ":" in out.error.split("error:")[0], out.error
    # the float dtypes the hardware computes run (a sweep that rejects everything proves nothing)
    assert outcomes["FP32"].kind == "agree", outcomes["FP32"].error
    # data movement runs on the low-precision formats (bit for bit); computing on them is refused
    for dt in LOW_PRECISION_DATA:
        if name in _MOVES:
            assert outcomes[dt].kind == "agree", (dt, outcomes[dt].error)
        elif name not in _MAY_MOVE:
            assert outcomes[dt].kind == "rejected", (name, dt)


# templates that only move data: they run on the low-precision dtypes; _MAY_MOVE: the rest of the
# templates that do not compute either (the a2a3 sweep platform has no FP8 casts, so they are refused)
_MOVES = {"reshape", "transpose", "concat", "slice", "load_store", "move", "extract"}
_MAY_MOVE = {"cast", "cast_from_fp32", "create_tensor", "assemble"}
