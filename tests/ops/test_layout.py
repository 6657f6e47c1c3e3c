"""full, reshape, transpose, concat, slice, read, tile.assemble and (atomic) tensor.assemble:
simulator == reference bit for bit on both platforms for FP32/FP16/BF16/INT32, full tensors and
partial tiles (valid [13, 37] of [16, 64], padding of the output untouched), and the reference
equal to torch indexing: these ops move data without arithmetic, so the bound is **0 ULP**
(bit-exact; ``full`` equals ``torch.full(value).to(dtype)``, the atomic adds equal the same
torch additions on integer-valued data, exact in every dtype).

Semantics: transpose == ``.T`` (the valid shape transposes too); concat == ``torch.cat(dim=-1)``
(result valid shape ``[valid rows, Na + valid cols of b]``); slice/read/assemble == indexing
(``tile.slice`` of a partial tile keeps the part of the valid region it covers); reshape is
row-major and rejects a partial tile.
"""
from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import kernels_ext as K
import ops_harness as H
from pypto.errors import InvalidOperationError, PyptoError

COVERED_OPS = ({f"{lvl}.{op}" for lvl in ("tensor", "tile") for op in ("full", "reshape", "transpose", "concat",
                                                                         "slice", "read")}
               | {"tile.assemble", "tensor.assemble"})

DTYPES = H.FLOAT_DTYPES + (torch.int32,)
SETTINGS = settings(max_examples=15, report_multiple_bugs=False, phases=(Phase.explicit, Phase.reuse, Phase.generate),
                    deadline=None, suppress_health_check=[HealthCheck.too_slow])


def data(seed, shape, dtype, kind="special"):
    return H.make_data(seed, shape, dtype, "int" if dtype == torch.int32 else kind)


def region_of(init, value, rows, cols):
    """``init`` with ``value[:rows, :cols]`` written at the origin."""
    out = init.clone()
    out[:rows, :cols] = value[:rows, :cols]
    return out


def intvalued(seed, shape, dtype):
    """Small integers (exact sums in every dtype)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-8, 8, shape, generator=g).to(dtype)


# name -> (args(seed, dtype), expected(args)); the last arg is the output
def _cases():
    c = {}
    c["t_reshape"] = (lambda s, d: [data(s, (16, 64), d), data(s + 1, (32, 32), d)],
                      lambda a: a[0].reshape(32, 32))
    c["p_reshape"] = (lambda s, d: [data(s, (16, 64), d), data(s + 1, (64, 16), d)],
                      lambda a: a[0].reshape(64, 16))
    c["t_transpose"] = (lambda s, d: [data(s, (16, 64), d), data(s + 1, (64, 16), d)], lambda a: a[0].T)
    c["p_transpose"] = (lambda s, d: [data(s, (16, 64), d), data(s + 1, (64, 16), d)],
                        lambda a: region_of(a[1], a[0][:13, :37].T, 37, 13))
    c["t_concat"] = (lambda s, d: [data(s, (16, 32), d), data(s + 1, (16, 32), d), data(s + 2, (16, 64), d)],
                     lambda a: torch.cat([a[0], a[1]], dim=-1))
    c["p_concat"] = (lambda s, d: [data(s, (16, 32), d), data(s + 1, (16, 32), d), data(s + 2, (16, 64), d)],
                     lambda a: region_of(a[2], torch.cat([a[0], a[1][:, :20]], dim=-1), 13, 52))
    c["t_slice"] = (lambda s, d: [data(s, (16, 64), d), data(s + 1, (8, 32), d)], lambda a: a[0][4:12, 16:48])
    c["t_slice_onchip"] = (lambda s, d: [data(s, (16, 64), d, "normal"), data(s + 1, (8, 32), d)],
                           lambda a: (a[0] + a[0])[4:12, 16:48])
    c["t_slice_orch"] = (lambda s, d: [data(s, (16, 64), d, "normal"), data(s + 1, (8, 32), d)],
                         lambda a: a[0][4:12, 16:48] * 2)
    c["p_slice"] = (lambda s, d: [data(s, (16, 64), d), data(s + 1, (8, 32), d)],
                    lambda a: region_of(a[1], a[0][4:12, 16:37], 8, 21))
    c["p_slice_valid"] = (lambda s, d: [data(s, (16, 64), d), data(s + 1, (8, 32), d)],
                          lambda a: region_of(a[1], a[0][8:13, 32:39], 5, 7))
    c["t_read"] = (lambda s, d: [data(s, (16, 64), d, "normal"), data(s + 1, (16, 64), d)],
                   lambda a: a[0] + a[0][3, 5])
    c["p_read"] = (lambda s, d: [data(s, (16, 64), d, "normal"), data(s + 1, (16, 64), d)],
                   lambda a: region_of(a[1], a[0] * a[0][12, 36], 13, 37))
    c["t_read_orch"] = (lambda s, d: [data(s, (16, 64), d, "normal"), data(s + 1, (16, 64), d)],
                        lambda a: a[0] + a[0][1, 2])
    c["p_assemble"] = (lambda s, d: [data(s, (16, 64), d), data(s + 1, (8, 32), d), data(s + 2, (16, 64), d)],
                       lambda a: _assembled(a[0], a[1], 4, 16))
    c["t_assemble_atomic"] = (lambda s, d: [intvalued(s, (16, 64), d), intvalued(s + 1, (16, 64), d)],
                              lambda a: a[1] + a[0] * 2)
    c["t_assemble_atomic_split"] = (lambda s, d: [intvalued(s, (64, 64), d), intvalued(s + 1, (16, 64), d)],
                                    lambda a: a[1] + a[0][0:16] + a[0][16:32] + a[0][32:48] + a[0][48:64])
    return c


def _assembled(target, src, r, c):
    out = target.clone()
    out[r:r + src.shape[0], c:c + src.shape[1]] = src
    return out


CASES = _cases()
# float-only: the kernel multiplies/adds with a float literal (2.0) that promotes INT32 to FP32
FLOAT_ONLY = {"t_slice_orch", "t_assemble_atomic"}
SWEEP = [(n, d) for n in CASES for d in DTYPES if not (d == torch.int32 and n in FLOAT_ONLY)]


def run_case(name, dtype, platform, seed):
    mk, want_fn = CASES[name]
    args = mk(seed, dtype)
    kernel = getattr(K, name)
    if "atomic" in name and dtype == torch.bfloat16 and platform == "a5sim":
        # a BF16 atomic add exists on a2a3 only (the reference's SupportsBf16AtomicAdd)
        with pytest.raises(PyptoError, match="an atomic add into a BF16 tensor exists only on a2a3"):
            H.run_sim(kernel, args, platform)
        platform = "a2a3sim"
    sim, ref = H.run_sim(kernel, args, platform), H.run_ref(kernel, args)
    H.assert_same_bits(sim[-1], ref[-1], f"{name} on {platform}")
    want = want_fn(args)
    if want.dtype != dtype:  # a Python scalar promoted the expectation
        want = want.to(dtype)
    H.assert_same_bits(ref[-1], want.contiguous(), f"{name} {dtype} vs torch")


@pytest.mark.parametrize("name,dtype", SWEEP, ids=[f"{n}-{d}" for n, d in SWEEP])
def test_layout_sweep(name, dtype):
    """Every kernel x dtype on both platforms; reference == torch indexing bit for bit."""
    for i, platform in enumerate(H.PLATFORMS):
        run_case(name, dtype, platform, 17 + i)


@SETTINGS
@given(name=st.sampled_from(sorted(CASES)), dtype=st.sampled_from(DTYPES), platform=st.sampled_from(H.PLATFORMS),
       seed=st.integers(0, 2 ** 30))
def test_layout_random(name, dtype, platform, seed):
    if dtype == torch.int32 and name in FLOAT_ONLY:
        return
    run_case(name, dtype, platform, seed)


@SETTINGS
@given(dtype=st.sampled_from(DTYPES), platform=st.sampled_from(H.PLATFORMS), seed=st.integers(0, 2 ** 30),
       shape=st.tuples(st.integers(1, 24), st.integers(1, 80)))
def test_transpose_random_shapes(dtype, platform, seed, shape):
    a = data(seed, shape, dtype)
    args = [a, data(seed + 1, shape[::-1], dtype)]
    sim, ref = H.run_sim(K.t_transpose, args, platform), H.run_ref(K.t_transpose, args)
    H.assert_same_bits(sim[-1], ref[-1], f"transpose on {platform}")
    H.assert_same_bits(ref[-1], a.T.contiguous(), "transpose == .T")


@pytest.mark.parametrize("platform", H.PLATFORMS)
@pytest.mark.parametrize("dtype,tag,value", [(torch.float32, "fp32", 0.1), (torch.float16, "fp16", 0.1),
                                             (torch.bfloat16, "bf16", 0.1), (torch.int32, "i32", 7)])
@pytest.mark.parametrize("level", ("t", "p"))
def test_full(level, dtype, tag, value, platform):
    kernel = getattr(K, f"{level}_full_{tag}")
    args = [data(3, (16, 64), dtype)]
    sim, ref = H.run_sim(kernel, args, platform), H.run_ref(kernel, args)
    H.assert_same_bits(sim[-1], ref[-1], f"{kernel.__name__} on {platform}")
    H.assert_same_bits(ref[-1], torch.full((16, 64), value, dtype=dtype), "full == torch.full")


def test_atomic_assemble_accumulates():
    """InOut + atomic add: the kernel adds into the existing contents (run twice: 2x the parts)."""
    from pypto.runtime import RunConfig

    a = intvalued(1, (64, 64), torch.float32)
    out = torch.ones(16, 64)
    for platform in H.PLATFORMS:
        o = out.clone()
        K.t_assemble_atomic_split(a, o, config=RunConfig(platform=platform))
        K.t_assemble_atomic_split(a, o, config=RunConfig(platform=platform))
        assert torch.equal(o, out + 2 * a.reshape(4, 16, 64).sum(0)), platform


def test_reshape_of_partial_tile_is_rejected_with_caret():
    a = torch.zeros(16, 64)
    with pytest.raises(InvalidOperationError, match="cannot reshape a partial tile") as ei:
        K.p_reshape_partial.lower(a, torch.zeros(64, 16))
    msg = str(ei.value)
    assert "^" in msg and "fillpad" in msg, msg


def test_reshape_element_count_mismatch():
    with pytest.raises(InvalidOperationError, match="element counts differ") as ei:
        K.t_reshape.lower(torch.zeros(16, 16), torch.zeros(32, 32))
    assert "^" in str(ei.value)


def test_concat_row_mismatch():
    with pytest.raises(InvalidOperationError, match="row counts differ") as ei:
        K.t_concat.lower(torch.zeros(16, 32), torch.zeros(8, 32), torch.zeros(16, 64))
    assert "^" in str(ei.value)


def test_slice_out_of_bounds():
    with pytest.raises(InvalidOperationError) as ei:
        K.t_slice.lower(torch.zeros(8, 40), torch.zeros(8, 32))
    assert "tensor.slice" in str(ei.value) and "^" in str(ei.value)


def test_read_out_of_bounds():
    with pytest.raises(InvalidOperationError, match="out of bounds") as ei:
        K.t_read.lower(torch.zeros(2, 4), torch.zeros(2, 4))
    assert "^" in str(ei.value)
