"""The benchmark's Qwen3-style decode layer (benchmarks/model_kernels.decode_layer) at a small size,
against torch eager doing the same math; and the KV cache rows it writes in place."""
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import model_kernels as M  # noqa: E402

from pypto.runtime import RunConfig, run  # noqa: E402


def test_qwen3_decode_layer_matches_torch():
    T, NH, NKV, D, I, B, ctx = 8, 2, 1, 128, 512, 128, 256   # hidden 256: one K chunk pair per projection
    mb, H = ctx // B, NH * D
    g = torch.Generator().manual_seed(3)

    def w(*shape, fan_in=1):
        return (torch.randn(*shape, generator=g) / math.sqrt(fan_in)).to(torch.bfloat16)

    x, w_in, w_post = w(T, H), (1 + w(1, H).float() / 10).to(torch.bfloat16), (1 + w(1, H).float() / 10).to(torch.bfloat16)
    wq, wk, wv, wo = w(H, H, fan_in=H), w(H, NKV * D, fan_in=H), w(H, NKV * D, fan_in=H), w(H, H, fan_in=H)
    wg, wu, wd = w(H, I, fan_in=H), w(H, I, fan_in=H), w(I, H, fan_in=I)
    k_cache, v_cache = w(NKV * T * mb * B, D), w(NKV * T * mb * B, D)
    table = torch.randperm(T * mb, generator=g).to(torch.int32)
    lens = torch.full((T,), ctx, dtype=torch.int32)
    ang = (ctx - 1) * 1.0e6 ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
    cos, sin = ang.cos().float().expand(T, -1).contiguous(), ang.sin().float().expand(T, -1).contiguous()
    kc_ref, vc_ref, k0 = k_cache.clone(), v_cache.clone(), k_cache.clone()
    out, ref = torch.zeros(T, H), torch.zeros(T, H)
    common = (x, w_in, wq, wk, wv, cos, sin)
    tail = (table, lens, wo, w_post, wg, wu, wd, 1e-6, 1 / math.sqrt(D))
    run(M.decode_layer(T, NH, NKV, D, I, B, mb), *common, k_cache, v_cache, *tail, out,
        config=RunConfig(platform="a2a3sim", sim_seed=0))
    M.torch_decode_layer(*common, kc_ref, vc_ref, *tail, ref, tokens=T, heads=NH, kv_heads=NKV, dim=D, inter=I,
                         block=B, max_blocks=mb)
    assert ref.abs().max() > 0.5
    assert (out - ref).abs().max() <= 5e-3
    # exactly one row per request changed (the new token's, the last row of its last page), as in torch
    changed = (k_cache != k0).any(dim=1).nonzero().flatten()
    assert len(changed) == T
    assert torch.equal(changed, (kc_ref != k0).any(dim=1).nonzero().flatten())
    rel = ((k_cache.float() - kc_ref.float()).abs() / kc_ref.float().abs().clamp_min(2.0**-126)).max()
    assert rel <= 2.0**-7 and torch.equal(v_cache, vc_ref)
