"""Integer arithmetic torch's CPU kernels lack: add / sub / mul / maximum / minimum on UINT16 /
UINT32 / UINT64 (wrap-around modulo 2**w, unsigned order), integer division on A5 (INT16 / INT32,
truncating toward zero; INT_MIN / -1 wraps; a zero divisor is a run-time error; a2a3 refuses it at
compile time), and ``subs`` keeping an integer array's dtype. Oracle: Python's own integers."""
from __future__ import annotations

import pytest
import torch

import kernels_int_arith as K
import ops_harness as H
from pypto.errors import PyptoError, SimulationError

COVERED_OPS: set = set()      # tile/tensor add sub mul maximum minimum div subs: test_elementwise

_W = {torch.uint16: 16, torch.uint32: 32, torch.uint64: 64}
_SIGNED = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}


def _uints(seed, dtype):
    """Random patterns of the unsigned dtype, with 0, 1, the top bit and all ones in the first row."""
    w = _W[dtype]
    g = torch.Generator().manual_seed(seed)
    s = torch.randint(-2 ** 31, 2 ** 31, (8, 64), generator=g, dtype=torch.int64)
    s = (s * 0x9E3779B97F4A7C15 + seed) if w == 64 else s
    x = s.to(_SIGNED[dtype]) if w < 64 else s
    x.view(-1)[:4] = torch.tensor([0, 1, -(2 ** (w - 1)), -1], dtype=x.dtype)
    return x.view(dtype)


def _py(x: torch.Tensor) -> list[int]:
    """Unsigned values as Python ints (through the signed view; independent of torch's uint ops)."""
    w = _W[x.dtype]
    return [v % (1 << w) for v in x.view(_SIGNED[x.dtype]).reshape(-1).tolist()]


def _from_py(vals, dtype) -> torch.Tensor:
    w = _W[dtype]
    signed = [v - (1 << w) if v >= 1 << (w - 1) else v for v in vals]
    return torch.tensor(signed, dtype=_SIGNED[dtype]).reshape(8, 64).view(dtype)


_ORACLE = {
    "u_add": lambda x, y, w: (x + y) % (1 << w),
    "u_sub": lambda x, y, w: (x - y) % (1 << w),
    "u_mul": lambda x, y, w: (x * y) % (1 << w),
    "u_max": lambda x, y, w: max(x, y),
    "u_min": lambda x, y, w: min(x, y),
}


def _same(actual, expected, what):
    assert torch.equal(actual.view(_SIGNED[actual.dtype]), expected.view(_SIGNED[expected.dtype])), what


@pytest.mark.parametrize("dtype", (torch.uint16, torch.uint32, torch.uint64), ids=str)
@pytest.mark.parametrize("kernel", sorted(_ORACLE))
def test_wide_unsigned_wrap_around(kernel, dtype):
    a, b = _uints(1, dtype), _uints(2, dtype)
    want = _from_py([_ORACLE[kernel](x, y, _W[dtype]) for x, y in zip(_py(a), _py(b))], dtype)
    k = getattr(K, kernel)
    args = [a, b, torch.zeros(8, 64, dtype=_SIGNED[dtype]).view(dtype)]
    ref = H.run_ref(k, args)[-1]
    _same(ref, want, f"{kernel} reference == Python ints")
    for platform in H.PLATFORMS:
        _same(H.run_sim(k, args, platform)[-1], ref, f"{kernel} on {platform}")


def _trunc_div(x: int, y: int, w: int) -> int:
    q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
    return (q + (1 << (w - 1))) % (1 << w) - (1 << (w - 1))    # INT_MIN / -1 wraps


@pytest.mark.parametrize("dtype", (torch.int16, torch.int32), ids=str)
def test_integer_division_truncates_on_a5(dtype):
    info = torch.iinfo(dtype)
    g = torch.Generator().manual_seed(7)
    a = torch.randint(info.min, info.max, (8, 64), generator=g, dtype=torch.int64)
    b = torch.randint(-300, 300, (8, 64), generator=g, dtype=torch.int64)
    b[b == 0] = 7
    a[0, :6] = torch.tensor([info.min, info.min, -7, 7, -7, 0])
    b[0, :6] = torch.tensor([-1, 1, 2, -2, -2, -5])
    a, b = a.to(dtype), b.to(dtype)
    w = 8 * a.element_size()
    want = torch.tensor([_trunc_div(x, y, w) for x, y in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist())],
                        dtype=dtype).reshape(8, 64)
    args = [a, b, torch.zeros(8, 64, dtype=dtype)]
    H.assert_same_bits(H.run_ref(K.i_div, args)[-1], want, "reference == Python ints")
    H.assert_same_bits(H.run_sim(K.i_div, args, "a5sim")[-1], want, "a5sim == Python ints")


def test_integer_division_refusals():
    a = torch.ones(8, 64, dtype=torch.int32)
    with pytest.raises(PyptoError, match=r"integer division \(INT32\) exists only on A5"):
        H.run_sim(K.i_div, [a, a, torch.zeros(8, 64, dtype=torch.int32)], "a2a3sim")
    b = a.clone()
    b[3, 5] = 0
    with pytest.raises(SimulationError, match=r"integer division by zero at element \[3, 5\]"):
        H.run_sim(K.i_div, [a, b, torch.zeros(8, 64, dtype=torch.int32)], "a5sim")


def test_subs_keeps_the_integer_dtype():
    g = torch.Generator().manual_seed(3)
    a = torch.randint(-30000, 30000, (8, 64), generator=g, dtype=torch.int16)
    args = [a, torch.zeros(8, 64, dtype=torch.int16)]
    want = a - 2                                   # 2.75 converted toward zero, INT16 arithmetic
    H.assert_same_bits(H.run_ref(K.i16_subs_f32, args)[-1], want)
    for platform in H.PLATFORMS:
        H.assert_same_bits(H.run_sim(K.i16_subs_f32, args, platform)[-1], want, platform)


def test_unsigned_scalar_forms_stay_refused():
    with pytest.raises(PyptoError, match="UINT32 operands are not supported"):
        H.run_sim(K.u_adds_refused, [torch.zeros(8, 64, dtype=torch.int32).view(torch.uint32),
                                     torch.zeros(8, 64, dtype=torch.int32).view(torch.uint32)], "a5sim")


def test_integer_division_checks_only_the_valid_region():
    # the loads leave zeros outside [5, 37]: not a division by zero anyone observes
    a = torch.full((8, 64), -9, dtype=torch.int32)
    b = torch.full((8, 64), 2, dtype=torch.int32)
    init = torch.full((8, 64), 77, dtype=torch.int32)
    want = init.clone()
    want[:5, :37] = -4
    H.assert_same_bits(H.run_ref(K.i_div_partial, [a, b, init])[-1], want)
    H.assert_same_bits(H.run_sim(K.i_div_partial, [a, b, init], "a5sim")[-1], want)
    b[4, 36] = 0
    with pytest.raises(SimulationError, match=r"integer division by zero at element \[4, 36\]"):
        H.run_sim(K.i_div_partial, [a, b, init], "a5sim")


_INT_TILE_DTYPES = (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64)
_SCALAR_OPS = {"add": K.i_adds_f, "mul": K.i_muls_f, "max": K.i_maxs_f, "min": K.i_mins_f}


def _ints(dtype, seed):
    """Random values over the dtype's range, its extremes and 0 / +-1 / +-2 in the first row."""
    info = torch.iinfo(dtype)
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(info.min, info.max, (8, 64), generator=g, dtype=torch.int64)
    x.view(-1)[:7] = torch.tensor([info.min, info.max, 0, 1, -1 if info.min else 2, 2, info.min + 1])
    return x.to(dtype)


def _wrap(v: int, dtype) -> int:
    info = torch.iinfo(dtype)
    w = info.bits
    return (v - info.min) % (1 << w) + info.min


@pytest.mark.parametrize("op", sorted(_SCALAR_OPS))
@pytest.mark.parametrize("dtype", _INT_TILE_DTYPES, ids=str)
def test_tile_scalar_ops_keep_the_integer_dtype(op, dtype):
    """tile.adds / muls / maximums / minimums on an integer tile with a float scalar: the result
    keeps the tile's dtype; the scalar is converted toward zero (-2.75 -> -2; UINT8: 254, the
    conversion's wrap) and the arithmetic wraps. Oracle: Python integers."""
    a = _ints(dtype, 11)
    s = -2 if dtype != torch.uint8 else torch.tensor(-2.75, dtype=torch.float64).to(torch.uint8).item()
    fn = {"add": lambda v: v + s, "mul": lambda v: v * s, "max": lambda v: max(v, s), "min": lambda v: min(v, s)}[op]
    want = torch.tensor([_wrap(fn(v), dtype) for v in a.reshape(-1).tolist()], dtype=torch.int64).to(dtype)
    want = want.reshape(8, 64)
    args = [a, torch.zeros(8, 64, dtype=dtype)]
    H.assert_same_bits(H.run_ref(_SCALAR_OPS[op], args)[-1], want)
    for platform in H.PLATFORMS:
        H.assert_same_bits(H.run_sim(_SCALAR_OPS[op], args, platform)[-1], want, platform)


@pytest.mark.parametrize("dtype", (torch.int16, torch.int32), ids=str)
def test_tile_divs_on_an_integer_tile(dtype):
    """tile.divs on INT16 / INT32 (A5): the scalar converted toward zero, integer division truncating
    toward zero (INT_MIN / -2 is exact); a2a3 refuses it; a scalar that converts to 0 is a run-time
    error, as a zero divisor of tile.div is."""
    a = _ints(dtype, 5)
    q = [abs(v) // 2 * (-1 if v > 0 else 1) for v in a.reshape(-1).tolist()]   # v / -2, toward zero
    want = torch.tensor([_wrap(v, dtype) for v in q], dtype=torch.int64).to(dtype).reshape(8, 64)
    args = [a, torch.zeros(8, 64, dtype=dtype)]
    H.assert_same_bits(H.run_ref(K.i_divs_f, args)[-1], want)
    H.assert_same_bits(H.run_sim(K.i_divs_f, args, "a5sim")[-1], want, "a5sim")
    with pytest.raises(PyptoError, match=r"integer division \((INT16|INT32)\) exists only on A5"):
        H.run_sim(K.i_divs_f, args, "a2a3sim")
    with pytest.raises(SimulationError, match="tile.divs: integer division by zero"):
        H.run_sim(K.i_divs_0, args, "a5sim")


def test_tensor_muls_on_an_integer_tensor_promotes():
    """tensor.muls keeps the reference's tensor rule (INT32 with a float scalar -> FP32): lowered as a
    cast to FP32, then tile.muls; the product is exact in FP32 for these magnitudes."""
    a = torch.randint(-1000, 1000, (8, 64), generator=torch.Generator().manual_seed(2), dtype=torch.int32)
    want = (a.to(torch.float64) * -2.75).to(torch.float32)
    args = [a, torch.zeros(8, 64, dtype=torch.float32)]
    H.assert_same_bits(H.run_ref(K.i_muls_tensor, args)[-1], want)
    for platform in H.PLATFORMS:
        H.assert_same_bits(H.run_sim(K.i_muls_tensor, args, platform)[-1], want, platform)
