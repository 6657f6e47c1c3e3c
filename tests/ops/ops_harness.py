"""Helpers for the tests in tests/ops: run a kernel on the simulator and on the reference executor
(``torch_codegen`` output, exec'd), compare bit patterns, measure ULP distances, make test data."""
from __future__ import annotations

import torch

from pypto.debug.torch_codegen import torch_codegen
from pypto.runtime import RunConfig

PLATFORMS = ("a2a3sim", "a5sim")
FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_INT_VIEW = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}

_ref_cache: dict = {}


def _tensors(args):
    return [a for a in args if isinstance(a, torch.Tensor)]


def _key(kernel, args):
    return (kernel.__name__,) + tuple(
        (tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else (type(a).__name__, repr(a)) for a in args)


def run_sim(kernel, args, platform: str) -> list[torch.Tensor]:
    """Run ``kernel`` on the simulator of ``platform`` on clones of ``args``; returns the tensor args
    after the run (outputs are written in place). Python scalars specialise the kernel as constants
    and are not passed to the compiled program."""
    args = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    cfg = RunConfig(platform=platform, sim_seed=0)
    compiled = kernel.compile(*args, config=cfg)
    compiled(*_tensors(args), config=cfg)
    return _tensors(args)


def ref_source(kernel, args) -> str:
    """``torch_codegen`` source of the lowered kernel for this signature (cached)."""
    key = _key(kernel, args)
    if key not in _ref_cache:
        _ref_cache[key] = torch_codegen(kernel.lower(*args))
    return _ref_cache[key]


def run_ref(kernel, args) -> list[torch.Tensor]:
    """Run the reference executor (the torch_codegen module, exec'd) on clones of ``args``."""
    args = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    ns: dict = {}
    exec(compile(ref_source(kernel, args), f"<ref {kernel.__name__}>", "exec"), ns)
    ns[kernel.__name__](*_tensors(args))
    return _tensors(args)


def bits(t: torch.Tensor) -> torch.Tensor:
    """The integer bit pattern of a float tensor (the tensor itself for integer dtypes)."""
    return t.view(_INT_VIEW[t.dtype]) if t.dtype in _INT_VIEW else t


def assert_same_bits(actual: torch.Tensor, expected: torch.Tensor, what: str = "") -> None:
    """Bit-for-bit equality (NaN payloads, signed zeros and all)."""
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    ba, be = bits(actual), bits(expected)
    if not torch.equal(ba, be):
        idx = (ba != be).nonzero()[0].tolist()
        raise AssertionError(f"{what}: {int((ba != be).sum())} elements differ; first at {idx}: "
                             f"{actual[tuple(idx)].item()!r} vs {expected[tuple(idx)].item()!r}")


def ordered(t: torch.Tensor) -> torch.Tensor:
    """Map float bit patterns to int64 keys that are monotone in the float value, so that the
    difference of two keys counts the representable values between them (+0 and -0 coincide)."""
    b = bits(t).to(torch.int64)
    nbits = 8 * t.element_size()
    sign = 1 << (nbits - 1)
    b = b & ((1 << nbits) - 1)  # unsigned pattern
    return torch.where(b >= sign, -(b - sign), b)


def ulp_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Elementwise number of ULPs between ``a`` and ``b`` (same float dtype), as int64. Both NaN
    counts as 0; one NaN counts as a huge distance. Infinities are the next key after MAX, so
    MAX vs inf is 1 ULP."""
    assert a.dtype == b.dtype and a.dtype in _INT_VIEW
    d = (ordered(a) - ordered(b)).abs()
    na, nb = torch.isnan(a), torch.isnan(b)
    d = torch.where(na & nb, torch.zeros_like(d), d)
    return torch.where(na ^ nb, torch.full_like(d, 1 << 40), d)


def make_data(seed: int, shape, dtype: torch.dtype, kind: str = "normal") -> torch.Tensor:
    """Deterministic test data. ``kind``: ``normal`` (N(0,1)), ``wide`` (random signs and binary
    exponents over the dtype's range), ``special`` (wide plus zeros, -0, inf, nan, subnormals),
    ``small`` (for exp: values in [-10, 10]) or ``int`` (int32 in [-2**20, 2**20])."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.int32 or kind == "int":
        return torch.randint(-(2 ** 20), 2 ** 20, tuple(shape), generator=g, dtype=torch.int32).to(dtype)
    if kind == "normal":
        return torch.randn(tuple(shape), generator=g).to(dtype)
    if kind == "small":
        return (torch.rand(tuple(shape), generator=g) * 20 - 10).to(dtype)
    fi = torch.finfo(dtype)
    lo, hi = int(torch.log2(torch.tensor(fi.tiny)).item()) - 4, int(torch.log2(torch.tensor(fi.max)).item())
    mant = 1 + torch.rand(tuple(shape), generator=g, dtype=torch.float64)
    e = torch.randint(lo, hi, tuple(shape), generator=g).to(torch.float64)
    sgn = torch.where(torch.rand(tuple(shape), generator=g) < 0.5, -1.0, 1.0).to(torch.float64)
    x = (sgn * mant * torch.exp2(e)).to(dtype)
    if kind == "special":
        specials = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), fi.tiny / 4, -fi.tiny / 2,
                                 fi.max, -fi.max, 1.0], dtype=dtype)
        pick = torch.rand(tuple(shape), generator=g) < 0.2
        idx = torch.randint(0, len(specials), tuple(shape), generator=g)
        x = torch.where(pick, specials[idx], x)
    return x
