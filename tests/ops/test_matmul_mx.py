"""The MX matmul family (``tile.matmul_mx`` / ``_acc`` / ``_bias``, A5) and the packed MX scale
layouts (``pl.MX_A_ZZ`` / ``pl.MX_B_NN``) that ``tile.load`` unpacks.

Oracle: exact rational arithmetic (``fractions.Fraction``) on the decoded E4M3 / E8M0 values (decoded
here from the format definitions, not by pypto.numerics or torch), the exact sum rounded once to FP32
by hand (round half to even, gradual underflow, overflow to inf). The simulator and the torch
reference executor must both equal it bit for bit, on random codes over the whole E4M3 range
(subnormals, +-0), NaN data and NaN scales, FP32 overflow and underflow, and exact FP32 ties.
"""
from __future__ import annotations

import math
from fractions import Fraction

import pytest
import torch

import kernels_matmul_mx as K
import ops_harness as H
import pypto.runtime as prt
from pypto.debug.torch_codegen import torch_codegen
from pypto.errors import PyptoError
from pypto.ir import compile as ir_compile
from pypto.numerics import mx
from pypto.numerics.formats import fp4_unpack
from pypto.runtime import RunConfig

COVERED_OPS = {"tile.matmul_mx", "tile.matmul_mx_acc", "tile.matmul_mx_bias"}

M, KD, N, G = K.M, K.K, K.N, K.G


# ---------------------------------------------------------------- independent decoding and rounding

def _e4m3(code: int):
    """E4M3FN: 1 sign, 4 exponent (bias 7), 3 mantissa bits; S.1111.111 is NaN, no inf."""
    s, e, m = code >> 7, (code >> 3) & 0xF, code & 7
    if e == 15 and m == 7:
        return None                                       # NaN
    v = Fraction(m, 8) * Fraction(2) ** -6 if e == 0 else (1 + Fraction(m, 8)) * Fraction(2) ** (e - 7)
    return -v if s else v


def _e8m0(code: int):
    """E8M0: 2 ** (code - 127); 0xFF is NaN."""
    return None if code == 0xFF else Fraction(2) ** (code - 127)


def _round_fp32(x) -> float:
    """The FP32 value nearest ``x`` (a Fraction; None is NaN), ties to even, as a Python float."""
    if x is None:
        return math.nan
    if x == 0:
        return 0.0                                        # the accumulator starts at +0
    sign, a = (-1 if x < 0 else 1), abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, -126)                                      # subnormals share the minimum exponent
    q = a / Fraction(2) ** (e - 23)                       # 24-bit significand, in units of the last place
    n, rem = divmod(q.numerator, q.denominator)
    if 2 * rem > q.denominator or (2 * rem == q.denominator and n % 2):
        n += 1
    v = n * Fraction(2) ** (e - 23)
    if v >= Fraction(2) ** 128 - Fraction(2) ** 103:      # past FP32 max (rounds up into 2**128)
        return sign * math.inf
    return sign * float(v)


def _oracle(a_codes, sa, b_codes, sb, add=None) -> torch.Tensor:
    """Exact MX matmul of code tensors (logical scales), ``+ add`` ([M, N] or [1, N] float32), FP32."""
    av = [[_e4m3(c) for c in row] for row in a_codes.tolist()]
    bv = [[_e4m3(c) for c in row] for row in b_codes.tolist()]
    sav = [[_e8m0(c) for c in row] for row in sa.tolist()]
    sbv = [[_e8m0(c) for c in row] for row in sb.tolist()]
    m, k, n = len(av), len(bv), len(bv[0])
    a_s = [[None if av[i][j] is None or sav[i][j // 32] is None else av[i][j] * sav[i][j // 32]
            for j in range(k)] for i in range(m)]
    b_s = [[None if bv[j][c] is None or sbv[j // 32][c] is None else bv[j][c] * sbv[j // 32][c]
            for c in range(n)] for j in range(k)]
    out = torch.empty(m, n, dtype=torch.float32)
    addv = None if add is None else add.double().tolist()
    for i in range(m):
        for c in range(n):
            total = Fraction(0)
            for j in range(k):
                x, y = a_s[i][j], b_s[j][c]
                if x is None or y is None:
                    total = None
                    break
                total += x * y
            extra = None if addv is None else addv[i if len(addv) > 1 else 0][c]
            if extra is not None and not math.isfinite(extra):
                # the exact sum is finite: an inf / NaN acc or bias decides (NaN stays NaN)
                out[i, c] = math.nan if total is None else extra
                continue
            if total is not None and extra is not None:
                total += Fraction(extra)
            out[i, c] = _round_fp32(total)
    return out


# ---------------------------------------------------------------- packing (as the reference's ST packs)

def _pack_a(logical: torch.Tensor) -> torch.Tensor:
    """[M, G] logical A scales -> MX_A_ZZ bytes: 16-row x 2-group blocks, row-major over blocks."""
    m, g = logical.shape
    return logical.reshape(m // 16, 16, g // 2, 2).permute(0, 2, 1, 3).contiguous().reshape(m, g)


def _pack_b(logical: torch.Tensor) -> torch.Tensor:
    """[G, N] logical B scales -> MX_B_NN bytes: 16-column x 2-group blocks, column block major."""
    g, n = logical.shape
    return logical.reshape(g // 2, 2, n // 16, 16).permute(2, 0, 3, 1).contiguous().reshape(g, n)


def _inputs(seed: int, special: bool = False):
    gen = torch.Generator().manual_seed(seed)
    a = torch.randint(0, 256, (M, KD), generator=gen, dtype=torch.int64)
    b = torch.randint(0, 256, (KD, N), generator=gen, dtype=torch.int64)
    # no NaN data in the random part (a NaN poisons its whole row / column; tested separately)
    a[(a & 0x7F) == 0x7F] = 0x38
    b[(b & 0x7F) == 0x7F] = 0x80            # -0
    sa = torch.randint(124, 131, (M, G), generator=gen, dtype=torch.int64)
    sb = torch.randint(124, 131, (G, N), generator=gen, dtype=torch.int64)
    if special:
        a[0], b[:, 0], sa[0], sb[:, 0] = 0, 0, 127, 127
        # row 0 x col 0: 1 * 1 + 1 * 2**-24 (k = 0 and k = 32, scales 2**-12 each): a tie -> 1.0
        a[0, 0] = a[0, 32] = b[0, 0] = b[32, 0] = 0x38                   # 1.0
        sa[0, 1], sb[1, 0] = 127 - 12, 127 - 12
        # row 0 x col 1: 1 + 2 * (1.5 * 2**-24) = 1 + 3 * 2**-24, the tie between 1 + 2**-23 and
        # 1 + 2**-22: to even (1 + 2**-22)
        b[:, 1] = 0
        b[0, 1], b[32, 1], b[64, 1] = 0x38, 0x3C, 0x3C                 # 1, 1.5, 1.5
        a[0, 64], sa[0, 2], sb[0, 1], sb[1, 1], sb[2, 1] = 0x38, 127 - 12, 127, 127 - 12, 127 - 12
        # row 1: all-zero data of both signs -> +0
        a[1] = torch.tensor([0x80, 0x00] * (KD // 2))
        # row 2 x col 2: huge scales -> overflow to +-inf
        a[2], b[:, 2] = 0x7E, 0x7E                                     # 448
        sa[2], sb[:, 2] = 250, 250
        # row 3: subnormal E4M3 data and tiny scales -> FP32 subnormal / zero results
        a[3] = torch.arange(KD) % 8                                    # codes 0..7: 0 and the subnormals
        sa[3] = 127 - 120
        # row 4 x col 4: a NaN scale (E8M0 0xFF) with zero data still gives NaN
        a[4, :32] = 0
        sa[4, 0] = 0xFF
        # row 5: an E4M3 NaN code
        a[5, 7] = 0x7F
    return a.to(torch.uint8), sa.to(torch.uint8), b.to(torch.uint8), sb.to(torch.uint8)


def _run_both(program, args):
    sim = [x.clone() for x in args]
    prt.run(program, *sim, config=RunConfig(platform="a5sim"))
    ref = [x.clone() for x in args]
    ns: dict = {}
    exec(compile(torch_codegen(ir_compile(program, platform="a5sim").lowered), "<ref mx>", "exec"), ns)
    # the reference executor takes FP4 parameters in the simulator's unpacked form
    ns["main"](*[fp4_unpack(x) if x.dtype == torch.float4_e2m1fn_x2 else x for x in ref])
    return sim, ref


def _args(a, sa, b, sb, bias):
    return [a.view(torch.float8_e4m3fn), _pack_a(sa).view(torch.float8_e8m0fnu), b.view(torch.float8_e4m3fn),
            _pack_b(sb).view(torch.float8_e8m0fnu), bias] + [torch.full((M, N), 7.0) for _ in range(3)]


@pytest.mark.parametrize("special", [False, True], ids=["random", "special"])
def test_matmul_mx_family_is_exact(special):
    a, sa, b, sb = _inputs(3 + special, special)
    bias = torch.randn(1, N, generator=torch.Generator().manual_seed(9))
    if special:
        bias[0, :8] = torch.tensor([0.0, -0.0, 1.0, math.inf, -1.0, 0.5, 2.0 ** -149, 3.0])
    sim, ref = _run_both(K.MxAll, _args(a, sa, b, sb, bias))
    base = _oracle(a, sa, b, sb)
    want = {5: base, 6: _oracle(a, sa, b, sb, base), 7: _oracle(a, sa, b, sb, bias)}
    for i, w in want.items():
        H.assert_same_bits(sim[i], w, f"sim output {i}")
        H.assert_same_bits(ref[i], w, f"ref output {i}")
    if special:
        assert sim[5][0, 0].item() == 1.0 and sim[5][0, 1].item() == 1 + 2.0 ** -22 and sim[5][1].eq(0).all() and not torch.signbit(sim[5][1]).any()
        assert math.isinf(sim[5][2, 2].item()) and math.isnan(sim[5][4, 4].item()) and sim[5][5].isnan().all()


def test_fp4_operand_cast_to_fp8_first():
    gen = torch.Generator().manual_seed(5)
    codes = torch.randint(0, 16, (M, KD), generator=gen, dtype=torch.uint8)
    codes.view(-1)[:16] = torch.arange(16, dtype=torch.uint8)
    packed = ((codes[:, 1::2] << 4) | codes[:, 0::2]).contiguous().view(torch.float4_e2m1fn_x2)
    _, sa, b, sb = _inputs(6)
    # FP4 (E2M1) values are exactly E4M3 values: the cast is exact, so the oracle decodes E2M1
    fp4 = [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    e4m3_of = {v: c for c in range(0x80) if (v := _e4m3(c)) is not None}
    a8 = torch.tensor([[(0x80 if c & 8 else 0) | e4m3_of[Fraction(fp4[c & 7])] for c in row]
                       for row in codes.tolist()], dtype=torch.uint8)
    args = [packed, _pack_a(sa).view(torch.float8_e8m0fnu), b.view(torch.float8_e4m3fn),
            _pack_b(sb).view(torch.float8_e8m0fnu), torch.zeros(M, N)]
    sim, ref = _run_both(K.MxFp4, args)
    want = _oracle(a8, sa, b, sb)
    H.assert_same_bits(sim[-1], want, "sim")
    H.assert_same_bits(ref[-1], want, "ref")


def test_unpack_index_inverts_the_packing():
    logical = torch.arange(64 * 8, dtype=torch.int64).reshape(64, 8)
    for layout, pack, t in (("MX_A_ZZ", _pack_a, logical), ("MX_B_NN", _pack_b, logical.T.contiguous())):
        packed = pack(t).reshape(-1)
        idx = mx.unpack_index(layout, t.shape, [0, 0], t.shape)
        assert torch.equal(packed[idx], t)
        # a window (as a partial load reads it)
        idx = mx.unpack_index(layout, t.shape, [2, 1], [5, 3])
        assert torch.equal(packed[idx], t[2:7, 1:4])


def _module(tmp_path, name: str, src: str):
    """Import ``src`` as module ``name`` from a file (kernels are parsed from their source)."""
    import importlib.util
    import sys

    path = tmp_path / f"{name}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod            # inspect finds a class's source through its module
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules[name]
    return mod


@pytest.mark.parametrize("body,match", [
    ("c = pl.matmul_mx(lhs, ls, lhs, rs)", "physical rhs K must be a positive multiple of 64"),
    ("c = pl.matmul_mx(ls, ls, rhs, rs)", "lhs must be FP8E4M3FN, got FP8E8M0"),
    ("c = pl.matmul_mx(lhs, rs, rhs, rs)", "lhs_scale must have shape"),
    ("c = pl.matmul_mx(lhs, ls, rhs, rs, )\n        c = pl.matmul_mx_acc(ls, lhs, ls, rhs, rs)", "acc must be an FP32 tile"),
])
def test_type_rule_errors(tmp_path, body, match):
    src = f'''
import pypto.language as pl
M, K, N, G = 32, 128, 64, 4

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[M, K], pl.FP8E4M3FN], sa: pl.Tensor[[M, G], pl.FP8E8M0, pl.MX_A_ZZ],
               b: pl.Tensor[[K, N], pl.FP8E4M3FN], sb: pl.Tensor[[G, N], pl.FP8E8M0, pl.MX_B_NN],
               out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        lhs = pl.move(pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        ls = pl.move(pl.load(sa, [0, 0], [M, G], target_memory=pl.Mem.Mat), target_memory=pl.Mem.LeftScale)
        rhs = pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        rs = pl.move(pl.load(sb, [0, 0], [G, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.RightScale)
        {body}
        out = pl.store(c, [0, 0], out)
        return out
'''
    with pytest.raises(PyptoError, match=match) as e:
        ir_compile(_module(tmp_path, "mx_bad", src).P, platform="a5sim")
    assert "mx_bad.py:" in str(e.value)


def test_a2a3_is_refused():
    # a2a3 has neither LeftScale / RightScale buffers nor the MX instruction
    with pytest.raises(PyptoError, match=r"LeftScale buffer usage .* limit \(0 bytes\) on a2a3sim|exists only on A5"):
        ir_compile(K.MxAll, platform="a2a3sim")


def test_packed_scale_tensor_is_read_only_by_load(tmp_path):
    src = '''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, sa: pl.Tensor[[32, 4], pl.FP8E8M0, pl.MX_A_ZZ],
               out: pl.Out[pl.Tensor[[32, 4], pl.FP8E8M0]]) -> pl.Tensor[[32, 4], pl.FP8E8M0]:
        v = pl.slice(sa, [16, 4], [0, 0])
        out = pl.assemble(out, pl.load(v, [0, 0], [16, 4]), [0, 0])
        return out
'''
    with pytest.raises(PyptoError, match="packed layout MX_A_ZZ; only pl.load reads it"):
        ir_compile(_module(tmp_path, "mx_view", src).P, platform="a5sim")


def test_layout_annotation_is_checked(tmp_path):
    for ann, match in (("pl.Tensor[[32, 4], pl.FP32, pl.MX_A_ZZ]", "2-D FP8E8M0 MX scale tensor"),
                       ("pl.Tensor[[24, 4], pl.FP8E8M0, pl.MX_A_ZZ]", r"packs \[16, 2\] blocks"),
                       ("pl.Tensor[[32, 4], pl.FP8E8M0, pl.NZ]", "is a tile layout")):
        src = (f'''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, sa: {ann}, out: pl.Out[pl.Tensor[[32, 4], pl.FP32]]) -> pl.Tensor[[32, 4], pl.FP32]:
        return out
''')
        with pytest.raises(PyptoError, match=match):
            _module(tmp_path, "mx_ann", src)


def test_every_stage_round_trips_the_layout():
    """The printed program carries pl.TensorLayout.MX_A_ZZ / MX_B_NN and parses back equal."""
    from pypto.ir import run_pipeline, structural_equal
    from pypto.language import parse

    result = run_pipeline(K.MxAll, {"platform": "a5sim"})
    for stage, program in result.stages:
        text = program.as_python()
        assert "pl.TensorLayout.MX_A_ZZ" in text and "pl.TensorLayout.MX_B_NN" in text, stage
        assert structural_equal(program, parse(text)), stage


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_packed_scale_load_unpacks_in_every_task(platform):
    """A block-parallel copy of a packed scale tensor gives the logical scales whichever way the
    simulator runs the tasks (a gang's plain copy would give the packed bytes)."""
    logical = torch.randint(0, 256, (128, 8), generator=torch.Generator().manual_seed(4), dtype=torch.uint8)
    out = torch.zeros(128, 8, dtype=torch.uint8).view(torch.float8_e8m0fnu)
    prt.run(K.MxScaleCopy, _pack_a(logical).view(torch.float8_e8m0fnu), out, config=RunConfig(platform=platform))
    assert torch.equal(out.view(torch.uint8), logical)


# ---------------------------------------------------------------- property sweep of the numerics

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(1, 3), groups=st.integers(1, 3), n=st.integers(1, 3), data=st.data())
def test_numerics_match_the_exact_oracle(m, groups, n, data):
    """pypto.numerics.mx.matmul_mx (what both executors run) == the exact rational oracle, bit for
    bit, on any E4M3 codes (NaN, subnormals, +-0 included) and E8M0 scales (NaN included) anywhere
    in the exponent range, in a band of 2 binades per draw, with an optional FP32 accumulator of
    small integers and specials. That domain keeps the products within the float64 sum's exact
    range (the contract: float64 accumulation, exact for spreads below ~45 binades;
    pypto/numerics/mx.py), so the one FP32 rounding is the correctly rounded exact sum."""
    k = 32 * groups
    codes = st.integers(0, 255)
    a = torch.tensor(data.draw(st.lists(codes, min_size=m * k, max_size=m * k)), dtype=torch.uint8).reshape(m, k)
    b = torch.tensor(data.draw(st.lists(codes, min_size=k * n, max_size=k * n)), dtype=torch.uint8).reshape(k, n)
    lo = data.draw(st.integers(0, 253))
    scale = st.one_of(st.integers(lo, lo + 1), st.just(0xFF))
    sa = torch.tensor(data.draw(st.lists(scale, min_size=m * groups, max_size=m * groups)),
                      dtype=torch.uint8).reshape(m, groups)
    sb = torch.tensor(data.draw(st.lists(scale, min_size=groups * n, max_size=groups * n)),
                      dtype=torch.uint8).reshape(groups, n)
    acc = None
    if data.draw(st.booleans()):
        vals = st.one_of(st.integers(-64, 64).map(float), st.sampled_from([0.0, -0.0, math.inf, -math.inf, math.nan]))
        acc = torch.tensor(data.draw(st.lists(vals, min_size=m * n, max_size=m * n)),
                           dtype=torch.float32).reshape(m, n)
    got = mx.matmul_mx(a.view(torch.float8_e4m3fn), sa.view(torch.float8_e8m0fnu), b.view(torch.float8_e4m3fn),
                       sb.view(torch.float8_e8m0fnu), acc)
    want = _oracle(a, sa, b, sb, acc)
    # NaN payloads are not part of the contract: compare NaN-ness, then the bits of the rest
    assert torch.equal(got.isnan(), want.isnan())
    keep = ~want.isnan()
    H.assert_same_bits(got[keep], want[keep], "numerics")
