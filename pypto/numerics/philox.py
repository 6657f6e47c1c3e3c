"""The counter-based generator of ``random`` (the device's TRANDOM): Philox-4x32 with 7 or 10 rounds,
and the way TRANDOM assigns counters to the elements of a tile.

Facts (pto-isa, TRANDOM and its CPU model, which this reproduces bit for bit):

* One block: a 128-bit counter ``(c0, c1, c2, c3)`` (c0 least significant) and a 64-bit key
  ``(k0, k1)``. A round: ``p0 = c0 * 0xD2511F53``, ``p1 = c2 * 0xCD9E8D57`` (64-bit products);
  the new state is ``(hi(p1) ^ c1 ^ k0, lo(p1), hi(p0) ^ c3 ^ k1, lo(p0))``; then the key is bumped,
  ``k0 += 0x9E3779B9``, ``k1 += 0xBB67AE85`` (mod 2**32).
* A tile, row-major with row stride ``S`` elements, valid region ``R x C``: one instruction repeat
  covers 256 bytes = 64 32-bit lanes and a block yields 4 words, so a row is done in
  ``L = ceil(C / 256)`` loops. Row ``r``, loop ``l``, lane ``n`` (0..63) uses the counter
  ``counter + (r * L + l) * (S // 4) + n`` (a 128-bit add) and writes its 4 words to the columns
  ``256 * l + 64 * w + n`` (w = 0..3) that are ``< C``. Elements outside the valid region are not
  written by the device.
"""
from __future__ import annotations

import numpy as np

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_MASK = np.uint64(0xFFFFFFFF)
LANES = 64
WORDS = 4


def philox(counters: np.ndarray, key: tuple[int, int], rounds: int) -> np.ndarray:
    """Philox-4x32 on an ``[n, 4]`` array of uint32 counters (word 0 least significant); returns the
    ``[n, 4]`` uint32 outputs."""
    c = [counters[:, i].astype(np.uint64) for i in range(4)]
    k0, k1 = key[0] & 0xFFFFFFFF, key[1] & 0xFFFFFFFF
    for _ in range(rounds):
        p0 = c[0] * _M0
        p1 = c[2] * _M1
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k0), p1 & _MASK,
             (p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k1), p0 & _MASK]
        k0, k1 = (k0 + _W0) & 0xFFFFFFFF, (k1 + _W1) & 0xFFFFFFFF
    return np.stack([x.astype(np.uint32) for x in c], axis=1)


def _add128(base: tuple[int, int, int, int], offsets: np.ndarray) -> np.ndarray:
    """``base + offsets`` as 128-bit integers (``offsets`` >= 0, < 2**63), as ``[n, 4]`` uint32 words."""
    lo = (base[0] & 0xFFFFFFFF) | ((base[1] & 0xFFFFFFFF) << 32)
    hi = (base[2] & 0xFFFFFFFF) | ((base[3] & 0xFFFFFFFF) << 32)
    out = np.empty((offsets.size, 4), dtype=np.uint32)
    for i, off in enumerate(offsets.tolist()):
        s_lo = lo + int(off)
        s_hi = (hi + (s_lo >> 64)) & ((1 << 64) - 1)
        s_lo &= (1 << 64) - 1
        out[i] = (s_lo & 0xFFFFFFFF, s_lo >> 32, s_hi & 0xFFFFFFFF, s_hi >> 32)
    return out


def trandom(key: tuple[int, int], counter: tuple[int, int, int, int], rows: int, cols: int, row_stride: int,
            rounds: int) -> np.ndarray:
    """The ``[rows, cols]`` uint32 values TRANDOM writes into the valid region of a tile with row
    stride ``row_stride`` (see the module docstring)."""
    loops = -(-cols // (LANES * WORDS))
    out = np.zeros((rows, loops * LANES * WORDS), dtype=np.uint32)
    if rows == 0 or cols == 0:
        return out[:, :cols]
    step = row_stride // WORDS
    r, l_, n = np.meshgrid(np.arange(rows), np.arange(loops), np.arange(LANES), indexing="ij")
    offs = ((r * loops + l_) * step + n).reshape(-1)
    words = philox(_add128(counter, offs), key, rounds).reshape(rows, loops, LANES, WORDS)
    # column 256 * l + 64 * w + n holds word w of lane n of loop l
    out[:] = words.transpose(0, 1, 3, 2).reshape(rows, -1)
    return out[:, :cols]
