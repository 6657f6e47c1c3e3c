"""Bit-exact model of the MX (micro-scaled) matmul and of the packed GM layouts of its scales.

``matmul_mx(A, A_scale, B, B_scale)``: ``A`` is ``[M, K]`` and ``B`` ``[K, N]`` FP8E4M3FN; each run of
32 consecutive elements along K shares one FP8E8M0 scale (``2 ** (code - 127)``, code 0xFF = NaN):
``A_scale`` is ``[M, ceil(K/32)]`` (one scale per row and K group), ``B_scale`` ``[ceil(K/32), N]``
(one per K group and column). The result is the FP32 matrix

    C[m, n] = round_fp32( sum_k  A[m, k] * A_scale[m, k // 32] * B[k, n] * B_scale[k // 32, n] )

Numerics (the decision, and why): every element and scale is decoded exactly to float64
(:func:`pypto.numerics.formats.decode`, not torch's conversion); a product of two E4M3 values and
two powers of two is exact in float64 (8 significant bits, exponents within +-300); the K sum is
accumulated in float64 and rounded ONCE to FP32 (round half to even, overflow to inf), which is what
the reference's golden computes (float64 matmul, then ``.to(float32)``) with ``rtol = atol = 0``.
For inputs whose products span less than ~45 binades (any realistic MX data: E4M3 spans 17, the
scales are per-group) the float64 sum is exact, so the result is the correctly rounded exact sum.
The accumulator starts at +0: an all-zero sum is +0, never -0. ``matmul_mx_acc`` / ``_bias`` add
the FP32 ``acc`` / ``bias`` (``[1, N]``, broadcast over rows) into the same float64 sum before that
one rounding. NaN (an E4M3 NaN code, an E8M0 0xFF scale) propagates to every output it reaches
(E8M0 has no zero, so a NaN scale times a zero element is still NaN).

Packed scale layouts (the reference's ``MX_A_ZZ`` / ``MX_B_NN`` GM tensors, as its ST packs them):
the logical scale matrix is cut into blocks of 16 rows (A) or columns (B) by 2 K groups; each
block's 32 bytes are contiguous, blocks in row-major order of (row block, group pair) for A and
(column block, group pair) for B, and inside a block the 2 groups of one row / column are adjacent.
:func:`unpack_index` gives, for each logical element of a window, its flat index in the packed
tensor; ``tile.load`` gathers through it, so a tile always holds logical scales.
"""
from __future__ import annotations

import torch

from pypto.numerics.formats import decode

GROUP = 32          # K elements per MX scale
BLOCK = 16          # rows (A) / columns (B) per packed scale block
PAIR = 2            # K groups per packed scale block


def groups(k: int) -> int:
    """Scale groups along K: ``ceil(K / 32)``."""
    return (k + GROUP - 1) // GROUP


def unpack_index(layout: str, shape, offsets, extent) -> torch.Tensor:
    """Flat indices into a packed scale tensor of logical ``shape`` (``[M, G]`` for ``"MX_A_ZZ"``,
    ``[G, N]`` for ``"MX_B_NN"``) of the logical window at ``offsets`` of ``extent``, as an int64
    tensor of ``extent``."""
    rows, cols = (int(d) for d in shape)
    r = torch.arange(int(offsets[0]), int(offsets[0]) + int(extent[0]), dtype=torch.int64)[:, None]
    c = torch.arange(int(offsets[1]), int(offsets[1]) + int(extent[1]), dtype=torch.int64)[None, :]
    if layout == "MX_A_ZZ":        # logical [M, G]: the row m blocks by 16, the group g pairs
        m, g, npairs = r, c, cols // PAIR
    elif layout == "MX_B_NN":      # logical [G, N]: the column n blocks by 16, the group g pairs
        m, g, npairs = c, r, rows // PAIR
    else:
        raise ValueError(f"not a packed MX scale layout: {layout!r}")
    return ((m // BLOCK) * npairs + g // PAIR) * (BLOCK * PAIR) + (m % BLOCK) * PAIR + g % PAIR


def scale_values(codes: torch.Tensor) -> torch.Tensor:
    """Exact float64 values ``2 ** (code - 127)`` of FP8E8M0 scale codes (0xFF: NaN)."""
    return decode(codes.contiguous().view(torch.uint8), "FP8E8M0")


def _values(x: torch.Tensor) -> torch.Tensor:
    return decode(x.contiguous().view(torch.uint8), "FP8E4M3FN")


def matmul_mx(lhs: torch.Tensor, lhs_scale: torch.Tensor, rhs: torch.Tensor, rhs_scale: torch.Tensor,
              acc: torch.Tensor | None = None, bias: torch.Tensor | None = None) -> torch.Tensor:
    """The FP32 result of the MX matmul (see the module docstring); ``lhs`` / ``rhs`` are
    float8_e4m3fn tensors, the scales float8_e8m0fnu, ``acc`` ``[M, N]`` / ``bias`` ``[1, N]`` FP32."""
    k = lhs.shape[1]
    kg = torch.arange(k) // GROUP
    a = _values(lhs) * scale_values(lhs_scale)[:, kg]
    b = _values(rhs) * scale_values(rhs_scale)[kg, :]
    total = torch.matmul(a, b) + 0.0          # + 0.0: the accumulator starts at +0 (no -0 sum)
    if acc is not None:
        total = total + acc.to(torch.float64)
    if bias is not None:
        total = total + bias.to(torch.float64)
    return total.to(torch.float32)
