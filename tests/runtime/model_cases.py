"""Small cases of the benchmark model programs (benchmarks/model_kernels.py) for runtime tests."""
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import model_kernels as M  # noqa: E402


def qwen3_case(kv_heads: int = 1, inter: int = 256, seed: int = 3):
    """``(program, args)`` of a Qwen3-style decode layer at a test size (8 tokens, 2 query heads of
    128, context 256 in pages of 128): BF16 weights scaled by 1/16, a shuffled page table."""
    T, NH, NKV, D, I, B, ctx = 8, 2, kv_heads, 128, inter, 128, 256
    mb, H = ctx // B, NH * D
    g = torch.Generator().manual_seed(seed)

    def w(*shape):
        return (torch.randn(*shape, generator=g) / 16).to(torch.bfloat16)

    lens = torch.full((T,), ctx, dtype=torch.int32)
    args = (w(T, H), w(1, H), w(H, H), w(H, NKV * D), w(H, NKV * D), torch.rand(T, D // 2), torch.rand(T, D // 2),
            w(NKV * T * mb * B, D), w(NKV * T * mb * B, D), torch.randperm(T * mb, generator=g).to(torch.int32),
            lens, w(H, H), w(1, H), w(H, I), w(H, I), w(I, H), 1e-6, 1 / math.sqrt(D), torch.zeros(T, H))
    return M.decode_layer(T, NH, NKV, D, I, B, mb), args
