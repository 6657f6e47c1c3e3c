"""Bitwise ops (``and_ or_ xor not_ shl shr`` and the scalar forms ``ands ors xors shls shrs``) on
every integer dtype: the simulator equals the reference executor bit for bit, and both equal an
independent oracle (Python's unbounded integers, reduced to the dtype's bits) on random bit patterns
and the boundary values (0, -1, 1, the dtype's min and max; shift amounts 0, w-1, w, > w).

Full tensors (``t_*``, dispatching ``pl.<name>``) and partial tiles (``p_*``, explicit
``pl.tile.<name>``, valid [13, 37] of [16, 64]: only the valid region is written).
"""
from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernels_bitwise as K
from kernel_templates import filename   # the kernels' (generated) source file
import ops_harness as H
import pypto.language as pl
from pypto.errors import InvalidOperationError, PyptoError, SimulationError
from pypto.runtime import RunConfig

COVERED_OPS = {f"{lvl}.{op}" for lvl in ("tensor", "tile")
               for op in ("and_", "ands", "or_", "ors", "xor", "xors", "not_", "shl", "shls", "shr", "shrs")}

INT_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64,
              torch.uint8, torch.uint16, torch.uint32, torch.uint64)
SIGNED_VIEW = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
BINARY = ("and", "or", "xor", "shl", "shr")
SETTINGS = settings(max_examples=30, deadline=None, report_multiple_bugs=False,
                    suppress_health_check=[HealthCheck.too_slow])


def width(dtype) -> int:
    return 8 * torch.empty((), dtype=dtype).element_size()


def signed(dtype) -> bool:
    return dtype not in (torch.uint8, torch.uint16, torch.uint32, torch.uint64)


def values(t: torch.Tensor) -> list:
    """Element values as Python ints (unsigned dtypes read through their signed view)."""
    w = width(t.dtype)
    vals = t.view(SIGNED_VIEW[w // 8]).flatten().tolist()
    return vals if signed(t.dtype) else [v & ((1 << w) - 1) for v in vals]


def from_values(vals, shape, dtype) -> torch.Tensor:
    w = width(dtype)
    wrapped = [(v & ((1 << w) - 1)) for v in vals]
    sv = [v - (1 << w) if v >= 1 << (w - 1) else v for v in wrapped]
    return torch.tensor(sv, dtype=SIGNED_VIEW[w // 8]).reshape(shape).view(dtype)


def oracle(op: str, a: torch.Tensor, b) -> torch.Tensor:
    """The op on Python ints; ``b`` a tensor or an int. Python's ``>>`` is arithmetic on negative
    values and logical on non-negative ones (unsigned dtypes read as non-negative)."""
    w = width(a.dtype)
    xs = values(a)
    ks = values(b) if isinstance(b, torch.Tensor) else [b] * len(xs)
    if not isinstance(b, torch.Tensor) and op in ("and", "or", "xor"):
        # the scalar is reduced to the dtype's bits first (read as the tile dtype)
        ks = values(from_values([b], [1], a.dtype)) * len(xs)
    f = {"and": lambda x, k: x & k, "or": lambda x, k: x | k, "xor": lambda x, k: x ^ k,
         "shl": lambda x, k: x << min(k, w), "shr": lambda x, k: x >> min(k, w)}[op]
    return from_values([f(x, k) for x, k in zip(xs, ks)], a.shape, a.dtype)


def rand_bits(seed: int, shape, dtype) -> torch.Tensor:
    """Uniform random bit patterns plus ~25% boundary values (0, +-1, min, max)."""
    g = torch.Generator().manual_seed(seed)
    w = width(dtype)
    sd = SIGNED_VIEW[w // 8]
    lo, hi = torch.iinfo(sd).min, torch.iinfo(sd).max
    x = torch.randint(lo, hi, tuple(shape), generator=g, dtype=torch.int64)
    x[torch.rand(tuple(shape), generator=g) < 0.02] = hi
    specials = torch.tensor([0, -1, 1, lo, hi, lo + 1, hi - 1], dtype=torch.int64)
    pick = torch.rand(tuple(shape), generator=g) < 0.25
    x = torch.where(pick, specials[torch.randint(0, len(specials), tuple(shape), generator=g)], x)
    return x.to(sd).view(dtype)


def rand_amounts(seed: int, shape, dtype) -> torch.Tensor:
    """Shift amounts in [0, w + 8], with 0, w-1, w, w+1 frequent."""
    g = torch.Generator().manual_seed(seed)
    w = width(dtype)
    k = torch.randint(0, w + 9, tuple(shape), generator=g)
    pick = torch.rand(tuple(shape), generator=g) < 0.3
    edges = torch.tensor([0, w - 1, w, w + 1])
    k = torch.where(pick, edges[torch.randint(0, 4, tuple(shape), generator=g)], k)
    return k.to(SIGNED_VIEW[w // 8]).view(dtype)


def check(kernel, args, platform):
    sim, ref = H.run_sim(kernel, args, platform), H.run_ref(kernel, args)
    H.assert_same_bits(sim[-1], ref[-1], f"{kernel.__name__} on {platform}")
    return ref[-1]


def valid_part(t):
    return t[:13, :37]


@SETTINGS
@given(op=st.sampled_from(BINARY), dtype=st.sampled_from(INT_DTYPES), platform=st.sampled_from(H.PLATFORMS),
       seed=st.integers(0, 2 ** 30), partial=st.booleans(), shape=st.tuples(st.integers(1, 16), st.integers(1, 64)))
def test_array_rhs(op, dtype, platform, seed, partial, shape):
    shape = (16, 64) if partial else shape
    a = rand_bits(seed, shape, dtype)
    b = rand_amounts(seed + 1, shape, dtype) if op in ("shl", "shr") else rand_bits(seed + 1, shape, dtype)
    init = rand_bits(seed + 2, shape, dtype)
    out = check(getattr(K, ("p_" if partial else "t_") + op), [a, b, init], platform)
    want = oracle(op, a, b)
    if partial:
        H.assert_same_bits(valid_part(out), valid_part(want), f"{op} vs oracle")
        mask = torch.ones(shape, dtype=torch.bool)
        mask[:13, :37] = False
        H.assert_same_bits(out[mask], init[mask], "outside the valid region")
    else:
        H.assert_same_bits(out, want, f"{op} vs oracle")


@SETTINGS
@given(op=st.sampled_from(BINARY), dtype=st.sampled_from(INT_DTYPES), platform=st.sampled_from(H.PLATFORMS),
       seed=st.integers(0, 2 ** 30), partial=st.booleans(), data=st.data())
def test_scalar_rhs(op, dtype, platform, seed, partial, data):
    shape = (16, 64) if partial else (7, 33)
    w = width(dtype)
    if op in ("shl", "shr"):
        s = data.draw(st.sampled_from([0, 1, w - 1, w, w + 3, 2 ** 31 - 1]), "amount")
    else:   # INT32 scalar: any 32-bit value (reduced to the tile's bits)
        s = data.draw(st.sampled_from([0, -1, 1, 0x5A, 0xFF, 0x7FFF, -(2 ** 31), 2 ** 31 - 1])
                      | st.integers(-(2 ** 31), 2 ** 31 - 1), "scalar")
    a = rand_bits(seed, shape, dtype)
    init = rand_bits(seed + 2, shape, dtype)
    out = check(getattr(K, ("p_" if partial else "t_") + op + "s"), [a, s, init], platform)
    want = oracle(op, a, s)
    H.assert_same_bits(valid_part(out) if partial else out, valid_part(want) if partial else want, f"{op}s vs oracle")


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
@pytest.mark.parametrize("partial", (False, True), ids=("full", "partial"))
def test_not(dtype, partial):
    shape = (16, 64) if partial else (5, 40)
    a = rand_bits(7, shape, dtype)
    init = rand_bits(8, shape, dtype)
    out = check(K.p_not if partial else K.t_not, [a, init], "a2a3sim")
    want = from_values([~v for v in values(a)], shape, dtype)
    H.assert_same_bits(valid_part(out) if partial else out, valid_part(want) if partial else want, "not vs oracle")


def test_shift_kinds_explicitly():
    """Arithmetic right shift on signed dtypes, logical on unsigned (the same bit pattern)."""
    bits = torch.tensor([[-128, -1, 64, 127]], dtype=torch.int8)
    out = torch.zeros_like(bits)
    got_s = H.run_sim(K.t_shrs, [bits, 3, out], "a2a3sim")[-1]
    assert got_s.tolist() == [[-16, -1, 8, 15]]
    ub = bits.view(torch.uint8)
    got_u = H.run_sim(K.t_shrs, [ub, 3, out.view(torch.uint8)], "a2a3sim")[-1]
    assert got_u.tolist() == [[16, 31, 8, 15]]
    # amounts >= the width: the mathematical limit
    got = H.run_sim(K.t_shrs, [bits, 9, out], "a5sim")[-1]
    assert got.tolist() == [[-1, -1, 0, 0]]
    got = H.run_sim(K.t_shls, [bits, 8, out], "a5sim")[-1]
    assert got.tolist() == [[0, 0, 0, 0]]


def test_explicit_tensor_spellings():
    a = rand_bits(3, (8, 16), torch.int32)
    b = rand_bits(4, (8, 16), torch.int32)
    outs = [torch.zeros_like(a) for _ in range(4)]
    sim = H.run_sim(K.tensor_explicit, [a, b, *outs], "a2a3sim")
    ref = H.run_ref(K.tensor_explicit, [a, b, *outs])
    for s, r in zip(sim[2:], ref[2:]):
        H.assert_same_bits(s, r, "tensor_explicit")
    assert torch.equal(sim[2], a ^ b)
    assert torch.equal(sim[3], a ^ 0x5A)
    assert torch.equal(sim[4], a >> 3)
    assert torch.equal(sim[5], ~(a & 0xF0))


def test_mixed_dtypes_promote():
    a = rand_bits(5, (4, 8), torch.int16)
    b = rand_bits(6, (4, 8), torch.int32)
    out = torch.zeros(4, 8, dtype=torch.int32)
    got = check(K.t_and, [a, b, out], "a2a3sim")
    assert torch.equal(got, a.to(torch.int32) & b)


# ------------------------------------------------------------------ errors
def _error(kernel, args, exc=InvalidOperationError):
    with pytest.raises(exc) as ei:
        H.run_sim(kernel, args, "a2a3sim")
    return str(ei.value)


def test_float_operand_is_refused_with_a_span():
    a = torch.zeros(4, 8)
    msg = _error(K.t_and, [a, a, a])
    assert "needs an integer left operand, got FP32" in msg and filename(K.t_and) in msg and "^" in msg
    assert "pl.cast" in msg


def test_negative_constant_shift_is_refused():
    a = torch.zeros(4, 8, dtype=torch.int32)
    msg = _error(K.t_shls, [a, -1, a])
    assert "shift amount must be >= 0, got -1" in msg and filename(K.t_shls) in msg


def test_negative_runtime_shift_is_a_run_time_error():
    a = torch.ones(4, 8, dtype=torch.int32)
    cfg = RunConfig(platform="a2a3sim")
    compiled = K.t_shls.compile(a, pl.RUNTIME, a.clone(), config=cfg)
    out = torch.zeros_like(a)
    compiled(a, 2, out, config=cfg)
    assert torch.equal(out, a << 2)
    with pytest.raises(PyptoError, match="negative shift amount -3"):
        compiled(a, -3, out, config=cfg)


def test_negative_shift_amount_array_is_a_run_time_error():
    a = torch.ones(4, 8, dtype=torch.int16)
    b = torch.zeros(4, 8, dtype=torch.int16)
    b[2, 3] = -5
    with pytest.raises(PyptoError, match="negative shift amount -5"):
        H.run_sim(K.t_shl, [a, b, a], "a2a3sim")
    with pytest.raises(SimulationError, match="negative shift amount -5"):
        H.run_ref(K.t_shl, [a, b, a])


def test_shape_mismatch_is_refused():
    a = torch.zeros(4, 8, dtype=torch.int32)
    b = torch.zeros(4, 4, dtype=torch.int32)
    msg = _error(K.t_xor, [a, b, a])
    assert "operand shapes differ" in msg


@pytest.mark.parametrize("kernel", ("p_xor", "p_xors", "t_xor", "t_shrs", "p_not", "p_and", "t_ors"))
def test_printed_programs_parse_back(kernel):
    from catalog_harness import assert_roundtrips

    a = torch.zeros(16, 64, dtype=torch.int32)
    args = [a, 3, a] if kernel.endswith("s") else ([a, a] if "not" in kernel else [a, a, a])
    assert_roundtrips(getattr(K, kernel), args)
