"""gather, scatter, scatter_update, mgather: simulator == reference bit for bit (both platforms, every
data dtype they take, special float values), and both equal a Python-loop oracle; duplicates (last
in row-major order wins), boundary indices (0, bound - 1), out-of-range indices (a run-time error
where the device is undefined; mgather's clamp / wrap / zero policies), partially valid index tiles
(padding never dereferenced).
"""
from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernels_index as K
import ops_harness as H
from pypto.errors import InvalidOperationError, PyptoError
from pypto.runtime import RunConfig

COVERED_OPS = {"tile.scatter_mask", "tensor.gather", "tile.gather", "tensor.scatter", "tile.scatter", "tensor.scatter_update",
               "tile.scatter_update", "tile.mgather"}

DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int16)
SETTINGS = settings(max_examples=20, deadline=None, report_multiple_bugs=False,
                    suppress_health_check=[HealthCheck.too_slow])


def data(seed, shape, dtype):
    if dtype.is_floating_point:
        return H.make_data(seed, shape, dtype, "special")
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-1000, 1000, shape, generator=g).to(dtype)


def indices(seed, shape, bound, dup: bool):
    """Random indices in [0, bound) with 0 and bound - 1 present; ``dup``: few distinct values."""
    g = torch.Generator().manual_seed(seed)
    hi = min(bound, 4) if dup else bound
    x = torch.randint(0, hi, shape, generator=g, dtype=torch.int32)
    x.view(-1)[0] = 0
    x.view(-1)[-1] = bound - 1
    return x


def both(kernel, args, platform):
    sim, ref = H.run_sim(kernel, args, platform), H.run_ref(kernel, args)
    H.assert_same_bits(sim[-1], ref[-1], f"{kernel.__name__} on {platform}")
    return ref[-1]


@SETTINGS
@given(dtype=st.sampled_from(DTYPES), platform=st.sampled_from(H.PLATFORMS), seed=st.integers(0, 2 ** 30),
       rows=st.integers(1, 12), k=st.integers(1, 80), explicit=st.booleans())
def test_tensor_gather(dtype, platform, seed, rows, k, explicit):
    a = data(seed, (12, 48), dtype)
    idx = indices(seed + 1, (rows, k), 48, False)
    out = both(K.t_gather_explicit if explicit else K.t_gather, [a, idx, torch.zeros(rows, k, dtype=dtype)], platform)
    want = torch.zeros(rows, k, dtype=dtype)
    for b in range(rows):
        for j in range(k):
            want[b, j] = a[b, int(idx[b, j])]
    H.assert_same_bits(out, want, "gather vs oracle")


@SETTINGS
@given(dtype=st.sampled_from(DTYPES), platform=st.sampled_from(H.PLATFORMS), seed=st.integers(0, 2 ** 30))
def test_tile_gather_flat_partial_indices(dtype, platform, seed):
    a = data(seed, (16, 64), dtype)
    idx = indices(seed + 1, (8, 32), 1024, False)
    idx[6:, :] = -1                # outside the valid [6, 20]: never dereferenced
    idx[:, 20:] = 5000
    init = data(seed + 2, (8, 32), dtype)
    out = both(K.p_gather_flat, [a, idx, init], platform)
    flat = a.reshape(-1)
    want = init.clone()
    for i in range(6):
        for j in range(20):
            want[i, j] = flat[int(idx[i, j])]
    H.assert_same_bits(out, want, "tile.gather vs oracle")


@SETTINGS
@given(dtype=st.sampled_from(DTYPES), platform=st.sampled_from(H.PLATFORMS), seed=st.integers(0, 2 ** 30),
       dup=st.booleans())
def test_scatter(dtype, platform, seed, dup):
    base = data(seed, (8, 64), dtype)
    src = data(seed + 1, (8, 32), dtype)
    idx = indices(seed + 2, (8, 32), 64, dup)
    out = both(K.t_scatter, [base, idx, src, torch.zeros_like(base)], platform)
    want = base.clone()
    for b in range(8):
        for j in range(32):                    # row-major order: the last duplicate wins
            want[b, int(idx[b, j])] = src[b, j]
    H.assert_same_bits(out, want, "scatter vs oracle")


@SETTINGS
@given(dtype=st.sampled_from(DTYPES), platform=st.sampled_from(H.PLATFORMS), seed=st.integers(0, 2 ** 30),
       dup=st.booleans())
def test_tile_scatter_flat(dtype, platform, seed, dup):
    base = data(seed, (16, 64), dtype)
    src = data(seed + 1, (8, 32), dtype)
    idx = indices(seed + 2, (8, 32), 1024, dup)
    idx[7, 31] = -1                            # outside the valid [6, 20]: not scattered
    out = both(K.p_scatter_flat, [base, src, idx, torch.zeros_like(base)], platform)
    want = base.clone().reshape(-1)
    for i in range(6):
        for j in range(20):
            want[int(idx[i, j])] = src[i, j]
    H.assert_same_bits(out, want.reshape(16, 64), "tile.scatter vs oracle")


@SETTINGS
@given(dtype=st.sampled_from(DTYPES), platform=st.sampled_from(H.PLATFORMS), seed=st.integers(0, 2 ** 30),
       dup=st.booleans(), tile=st.booleans())
def test_scatter_update(dtype, platform, seed, dup, tile):
    x = data(seed, (32, 32), dtype)
    src = data(seed + 1, (8, 32), dtype)
    idx = indices(seed + 2, (2, 4), 32, dup)
    out = both(K.p_scatter_update if tile else K.t_scatter_update, [x, idx, src, torch.zeros_like(x)], platform)
    want = x.clone()
    for k, r in enumerate(idx.reshape(-1).tolist()):
        want[r] = src[k]
    H.assert_same_bits(out, want, "scatter_update vs oracle")


@pytest.mark.parametrize("mode", ("clamp", "wrap", "zero"))
@pytest.mark.parametrize("dtype", DTYPES + (torch.int8, torch.uint8), ids=str)
def test_mgather_row_policies(mode, dtype):
    mem = data(1, (20, 32), dtype) if dtype != torch.uint8 else torch.randint(0, 255, (20, 32), dtype=torch.uint8)
    idx = torch.tensor([0, 19, 20, 25, -1, 3, 3, 7, 100, 2, 19, 1, -7, -7, -7, -7], dtype=torch.int32).view(16, 1)
    out = both(getattr(K, f"mgather_row_{mode}"), [mem, idx, torch.zeros(16, 32, dtype=dtype)], "a2a3sim")
    want = torch.zeros(16, 32, dtype=dtype)
    for i in range(12):                        # the index tile is valid in its first 12 rows
        u = int(idx[i, 0]) & 0xFFFFFFFF
        if u >= 20:
            if mode == "zero":
                continue
            u = 19 if mode == "clamp" else u % 20
        want[i] = mem[u]
    H.assert_same_bits(out, want, f"mgather {mode} vs oracle")


def test_mgather_elem_wraps():
    mem = torch.randn(20, 32)
    idx = torch.randint(-5, 1000, (8, 32), dtype=torch.int32)
    out = both(K.mgather_elem, [mem, idx, torch.zeros(8, 32)], "a5sim")
    flat = mem.reshape(-1)
    for i in range(8):
        for j in range(20):
            assert out[i, j].item() == flat[(int(idx[i, j]) & 0xFFFFFFFF) % 640].item()
    assert torch.all(out[:, 20:] == 0)


# ------------------------------------------------------------------ out-of-range indices
def test_out_of_range_is_a_run_time_error():
    a = torch.randn(12, 48)
    idx = torch.zeros(4, 8, dtype=torch.int32)
    idx[2, 5] = 48
    with pytest.raises(PyptoError, match=r"gather: index 48 at \[2, 5\] is out of range \[0, 48\)"):
        H.run_sim(K.t_gather, [a, idx, torch.zeros(4, 8)], "a2a3sim")
    idx[2, 5] = -1                              # read as 0xFFFFFFFF
    with pytest.raises(PyptoError, match="index 4294967295"):
        H.run_ref(K.t_gather, [a, idx, torch.zeros(4, 8)])
    mem = torch.randn(20, 32)
    with pytest.raises(PyptoError, match="gather_oob='undefined'"):
        H.run_sim(K.mgather_row_undefined, [mem, torch.full((16, 1), 20, dtype=torch.int32), torch.zeros(16, 32)],
                  "a2a3sim")
    x = torch.randn(32, 32)
    with pytest.raises(PyptoError, match="scatter_update: index 32"):
        H.run_sim(K.t_scatter_update, [x, torch.full((2, 4), 32, dtype=torch.int32), torch.randn(8, 32), x],
                  "a5sim")


def test_poisoned_index_padding_is_not_dereferenced():
    """Under sim_poison the padding of the index tile is 0xFF bytes (-1): it must not be read."""
    a = torch.randn(16, 64)
    idx = indices(3, (8, 32), 1024, False)
    cfg = RunConfig(platform="a2a3sim", sim_poison=True)
    out = torch.zeros(8, 32)
    K.p_gather_flat(a, idx, out, config=cfg)
    assert torch.equal(out[:6, :20], a.reshape(-1)[idx[:6, :20].long()])


def _msg(kernel, args):
    with pytest.raises(InvalidOperationError) as ei:
        H.run_sim(kernel, args, "a2a3sim")
    return str(ei.value)


def test_type_errors():
    a = torch.randn(12, 48)
    assert "indices must be INT32" in _msg(K.t_gather, [a, torch.zeros(4, 8), torch.zeros(4, 8)])
    assert "index shape [13, 8] exceeds input shape [12, 48] on axis 0" in _msg(K.t_gather, [a, torch.zeros(13, 8, dtype=torch.int32),
                                                                  torch.zeros(13, 8)])
    msg = _msg(K.t_scatter, [a, torch.zeros(4, 8, dtype=torch.int32), torch.zeros(4, 9), a])
    assert "index must have src's shape" in msg and "kernels_index.py" in msg


@pytest.mark.parametrize("kernel", ("t_gather", "p_gather_flat", "t_scatter", "p_scatter_update", "mgather_elem"))
def test_printed_programs_parse_back(kernel):
    from catalog_harness import assert_roundtrips

    i = torch.zeros
    args = {"t_gather": [i(12, 48), i(4, 8, dtype=torch.int32), i(4, 8)],
            "p_gather_flat": [i(16, 64), i(8, 32, dtype=torch.int32), i(8, 32)],
            "t_scatter": [i(8, 64), i(8, 32, dtype=torch.int32), i(8, 32), i(8, 64)],
            "p_scatter_update": [i(32, 32), i(2, 4, dtype=torch.int32), i(8, 32), i(32, 32)],
            "mgather_elem": [i(20, 32), i(8, 32, dtype=torch.int32), i(8, 32)]}[kernel]
    assert_roundtrips(getattr(K, kernel), args)


@pytest.mark.parametrize("dtype, iv, pats", [
    (torch.bfloat16, torch.int16, [0x7FC0, 0x7F81, 0x7FC5, -1, 0x3F80]),
    (torch.float16, torch.int16, [0x7E00, 0x7C01, 0x7E55, -1, 0x3C00]),
])
def test_nan_payloads_survive_gather_and_scatter(dtype, iv, pats):
    """Regression: torch.gather is not a bit copy for half types (BF16 NaNs become 0xFFFF, FP16
    signalling NaNs are quieted); the index ops move bit patterns."""
    row = torch.tensor(pats * 9 + [0, 0, 0], dtype=iv)[:48]
    a = row.repeat(12, 1).view(dtype)
    idx = torch.arange(5, dtype=torch.int32).repeat(4, 1)
    out = both(K.t_gather, [a, idx, torch.zeros(4, 5, dtype=dtype)], "a2a3sim")
    assert out.view(iv)[0].tolist() == pats
    src = a[:8, :32].contiguous()
    out = both(K.t_scatter, [torch.zeros(8, 64, dtype=dtype), torch.arange(32, dtype=torch.int32).repeat(8, 1), src,
                             torch.zeros(8, 64, dtype=dtype)], "a5sim")
    assert torch.equal(out[:, :32].view(iv), src.view(iv))


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16, torch.int16), ids=str)
def test_scatter_mask_forms(dtype):
    even, odd = data(1, (8, 32), dtype), data(2, (8, 32), dtype)
    dst = data(3, (8, 64), dtype)
    out = both(K.scatter_mask_pair, [even, odd, dst, torch.zeros_like(dst)], "a2a3sim")
    want = dst.clone()
    want[:, 0::2], want[:, 1::2] = even, odd
    H.assert_same_bits(out, want, "scatter mask vs oracle")
    src = data(4, (8, 16), dtype)
    out = both(K.p_scatter_mask4, [src, dst, torch.zeros_like(dst)], "a5sim")
    want = dst.clone()
    want[:, 2::4] = src
    H.assert_same_bits(out, want, "tile.scatter_mask vs oracle")


def test_scatter_update_dim_keyword():
    x = data(5, (32, 32), torch.float32)
    idx = torch.tensor([[3, 1, 3, 30], [0, 5, 6, 7]], dtype=torch.int32)
    src = data(6, (8, 32), torch.float32)
    out = both(K.p_scatter_update_kw, [x, idx, src, torch.zeros_like(x)], "a2a3sim")
    want = x.clone()
    for k, r in enumerate(idx.reshape(-1).tolist()):
        want[r] = src[k]
    H.assert_same_bits(out, want, "scatter_update(dim=-2) vs oracle")
    from catalog_harness import assert_roundtrips

    assert_roundtrips(K.scatter_mask_pair, [torch.zeros(8, 32), torch.zeros(8, 32), torch.zeros(8, 64), torch.zeros(8, 64)])


@pytest.mark.parametrize("dim, ishape", [(-1, (2, 3, 5)), (1, (2, 3, 8)), (-3, (3, 2, 8)), (0, (5, 8, 8))])
def test_tensor_gather_rank3_any_dim(dim, ishape):
    a = data(8, (8, 8, 8), torch.float32)
    g = torch.Generator().manual_seed(9)
    idx = torch.randint(0, 8, ishape, generator=g, dtype=torch.int32)
    out = both(K.t_gather_nd, [a, idx, dim, torch.zeros(ishape)], "a2a3sim")
    H.assert_same_bits(out, torch.gather(a, dim, idx.long()), "rank-3 gather vs torch.gather (FP32 is a bit copy)")
    from catalog_harness import assert_roundtrips

    assert_roundtrips(K.t_gather_nd, [a, idx, dim, torch.zeros(ishape)])
