"""Random kernels for the differential fuzzer, each with an independent float64 oracle.

A generated case is the source of a module holding one ``@pl.jit`` kernel, its arguments, and (for
float kernels) the expected output computed in float64 by a torch expression tree the generator
builds alongside the DSL expression — not by anything of pypto. Shapes, dtypes, ops and the
kernel's structure (tensor form, tile form, a loop over row blocks, a ``pl.parallel`` loop of
tasks) are drawn from a seeded ``random.Random``, so a case is reproducible from its seed.

Every dtype the language has is drawn (integers, unsigned, BOOL, the floats), on purpose: each
combination must either run with both executors agreeing or be rejected with a located error.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

import torch

DTYPES = ("FP32", "FP16", "BF16", "INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "UINT64", "BOOL")
FLOATS = ("FP32", "FP16", "BF16")
# the low-precision dtypes a user tensor can hold (torch float8 formats); not in DTYPES: the fuzzer
# computes on its operands, these only move and cast
LOW_PRECISION_DATA = ("FP8E4M3FN", "FP8E5M2", "FP8E8M0")

# (DSL function, float64 torch expression over operand sources, float only)
UNARY = {"neg": ("-({0})", False), "abs": ("torch.abs({0})", False), "relu": ("torch.relu({0})", False),
         "exp": ("torch.exp({0})", True), "sqrt": ("torch.sqrt(torch.abs({0}))", True)}
BINARY = {"add": "({0} + {1})", "sub": ("({0} - {1})"), "mul": "({0} * {1})",
          "maximum": "torch.maximum({0}, {1})", "minimum": "torch.minimum({0}, {1})", "div": "({0} / {1})"}
ROW_REDUCE = {"row_sum": "({0}).sum(-1, keepdim=True)", "row_max": "({0}).amax(-1, keepdim=True)",
              "row_min": "({0}).amin(-1, keepdim=True)"}
EXPAND = {"row_expand_add": "({0} + {1})", "row_expand_sub": "({0} - {1})", "row_expand_mul": "({0} * {1})",
          "row_expand_max": "torch.maximum({0}, {1})"}


@dataclass
class Case:
    """One generated kernel: module source, entry name, arguments, expected float64 output of the
    last argument (or None), and what the oracle's tolerance is scaled by."""

    seed: int
    source: str
    entry: str
    args: list
    expected: torch.Tensor | None = None
    depth: int = 1
    dtype: str = "FP32"
    notes: list = field(default_factory=list)


def _data(rng: random.Random, shape, dtype: str) -> torch.Tensor:
    g = torch.Generator().manual_seed(rng.randrange(1 << 30))
    if dtype in FLOATS:
        return torch.randn(tuple(shape), generator=g).to(getattr(torch, {"FP32": "float32", "FP16": "float16",
                                                                           "BF16": "bfloat16"}[dtype]))
    from pypto.language.dtypes import dtype_from_name

    tdt = dtype_from_name(dtype).torch
    if dtype in LOW_PRECISION_DATA:
        # exact codes of the format, from normal values (FP8E8M0, a scale, from positive ones)
        from pypto.numerics.cast import cast_tensor

        x = torch.randn(tuple(shape), generator=g, dtype=torch.float64) * 4
        return cast_tensor(x.abs() if dtype == "FP8E8M0" else x, tdt, "rint")
    if dtype == "BOOL":
        return torch.randint(0, 2, tuple(shape), generator=g).to(torch.bool)
    lo, hi = (0, 100) if dtype.startswith("UINT") else (-50, 50)
    return torch.randint(lo, hi, tuple(shape), generator=g).to(tdt)


class _Expr:
    """Builds a random expression: DSL source and float64 source side by side."""

    def __init__(self, rng: random.Random, dtype: str, leaves: list[str]):
        self.rng, self.dtype, self.leaves = rng, dtype, leaves
        self.float = dtype in FLOATS

    def build(self, depth: int) -> tuple[str, str, int]:
        """(DSL source, float64 source, depth used)."""
        rng = self.rng
        if depth == 0 or rng.random() < 0.25:
            leaf = rng.choice(self.leaves)
            return leaf, f"{leaf}64", 0
        kind = rng.choice(("unary", "binary", "binary", "scalar"))
        if kind == "unary":
            ops = [k for k, (_, f) in UNARY.items() if self.float or not f]
            op = rng.choice(ops)
            d, r, n = self.build(depth - 1)
            dsl = f"pl.{op}(pl.abs({d}))" if op == "sqrt" else f"pl.{op}({d})"
            return dsl, UNARY[op][0].format(r), n + 1
        if kind == "binary":
            ops = [k for k in BINARY if self.float or k != "div"]
            op = rng.choice(ops)
            d1, r1, n1 = self.build(depth - 1)
            d2, r2, n2 = self.build(depth - 1)
            if op == "div":   # keep the divisor away from zero
                d2, r2 = f"pl.add(pl.abs({d2}), 1.0)", f"(torch.abs({r2}) + 1.0)"
            return f"pl.{op}({d1}, {d2})", BINARY[op].format(r1, r2), max(n1, n2) + 1
        op = rng.choice(("add", "sub", "mul", "maximum"))
        s = rng.choice((2.0, 0.5, -1.5, 3.0)) if self.float else rng.choice((2, 3, -1))
        d, r, n = self.build(depth - 1)
        return f"pl.{op}({d}, {s!r})", BINARY[op].format(r, f"torch.tensor({float(s)!r}, dtype=torch.float64)"), n + 1


def generate(seed: int) -> Case:
    """The generated case of ``seed``."""
    rng = random.Random(seed)
    # mostly floats (the oracle applies), every dtype sometimes
    dtype = rng.choice(FLOATS) if rng.random() < 0.7 else rng.choice(DTYPES)
    from pypto.language.dtypes import dtype_from_name

    item = max(1, dtype_from_name(dtype).itemsize)
    cols = rng.choice([c for c in (8, 16, 32, 64, 128) if c * item >= 32] or [32])
    rows = rng.choice((1, 2, 4, 8, 16))
    form = rng.choice(("tensor", "tile", "rows_loop", "parallel", "reduce"))
    blocks = rng.choice((2, 3, 4)) if form in ("rows_loop", "parallel") else 1
    total = rows * blocks
    ex = _Expr(rng, dtype, ["x", "y"])
    depth = rng.choice((1, 2, 3))
    dsl, ref, used = ex.build(depth)
    name = f"gen_{seed}"
    sig = (f"x: pl.Tensor[[{total}, {cols}], pl.{dtype}], y: pl.Tensor[[{total}, {cols}], pl.{dtype}], "
           f"out: pl.Out[pl.Tensor[[{total}, {cols if form != 'reduce' else 1}], pl.{dtype}]]")
    body: list[str] = []
    if form == "tensor":
        body += ["    with pl.at(level=pl.Level.CORE_GROUP):", f"        out[:] = {dsl}"]
    elif form == "tile":
        body += ["    with pl.at(level=pl.Level.CORE_GROUP):",
                 f"        x = pl.load(x, [0, 0], [{rows}, {cols}])",
                 f"        y = pl.load(y, [0, 0], [{rows}, {cols}])",
                 f"        out = pl.store({dsl}, [0, 0], out)"]
    elif form in ("rows_loop", "parallel"):
        loop = "pl.range" if form == "rows_loop" else "pl.parallel"
        # a sequential loop inside one task, or one task per iteration of a parallel loop
        if form == "rows_loop":
            body += ["    with pl.at(level=pl.Level.CORE_GROUP):", f"        for i in {loop}({blocks}):"]
        else:
            body += [f"    for i in {loop}({blocks}):", "        with pl.at(level=pl.Level.CORE_GROUP):"]
        ind = "            "
        body += [f"{ind}xt = pl.load(x, [i * {rows}, 0], [{rows}, {cols}])",
                 f"{ind}yt = pl.load(y, [i * {rows}, 0], [{rows}, {cols}])",
                 f"{ind}out = pl.store({_rename(dsl)}, [i * {rows}, 0], out)"]
    else:  # reduce: a row reduction (with tmp_tile: the tree order) of the expression, shape [R, 1]
        red = rng.choice(sorted(ROW_REDUCE))
        body += ["    with pl.at(level=pl.Level.CORE_GROUP):",
                 f"        xt = pl.load(x, [0, 0], [{rows}, {cols}])",
                 f"        yt = pl.load(y, [0, 0], [{rows}, {cols}])",
                 f"        tmp = pl.create_tile([{rows}, {cols}], dtype=pl.{dtype}, target_memory=pl.Mem.Vec)",
                 f"        e = {_rename(dsl)}",
                 f"        out = pl.store(pl.{red}(e, tmp), [0, 0], out)"]
        ref = ROW_REDUCE[red].format(ref)
        used += 1
    src = "\n".join(["import pypto.language as pl", "", "", "@pl.jit", f"def {name}({sig}):", *body,
                     "    return out", ""])
    x, y = _data(rng, (total, cols), dtype), _data(rng, (total, cols), dtype)
    out = torch.zeros((total, cols if form != "reduce" else 1), dtype=x.dtype)
    expected = None
    if dtype in FLOATS:
        x64, y64 = x.double(), y.double()
        expected = eval(ref, {"torch": torch, "x64": x64, "y64": y64})
    return Case(seed, src, name, [x, y, out], expected, max(used, 1), dtype)


def _rename(dsl: str) -> str:
    """The expression over the loaded tiles ``xt`` / ``yt`` instead of the tensors ``x`` / ``y``."""
    import re

    return re.sub(r"\b([xy])\b", r"\1t", dsl)


_RTOL = {"FP32": 1e-5, "FP16": 1e-2, "BF16": 4e-2}


def oracle_mismatch(case: Case, got: torch.Tensor) -> str:
    """Empty when ``got`` (the reference executor's output, in the case's dtype) is within the
    float64 oracle's tolerance, else what differs. The oracle checks meaning, not last bits (those
    are the executors' bit-for-bit comparison): ``rtol * 4**depth * (1 + max |expected|)``,
    with the expected value first rounded to the dtype (so an overflow to inf is expected too)."""
    exp = case.expected.to(got.dtype).double()
    g = got.double()
    same_special = (torch.isnan(exp) & torch.isnan(g)) | (torch.isinf(exp) & (exp == g))
    finite = torch.isfinite(exp)
    scale = 1.0 + (float(exp[finite].abs().max()) if bool(finite.any()) else 0.0)
    tol = _RTOL[case.dtype] * 4 ** case.depth * scale
    bad = ~same_special & ~((g - exp).abs() <= tol)
    if not bool(bad.any()):
        return ""
    idx = bad.nonzero()[0].tolist()
    return (f"{int(bad.sum())} elements off the float64 oracle by more than {tol:.3g}; first at {idx}: "
            f"{got[tuple(idx)].item()!r} vs {case.expected[tuple(idx)].item()!r}")
