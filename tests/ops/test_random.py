"""random (TRANDOM, A5): simulator == reference bit for bit, and both == an independent oracle, a
scalar Python Philox-4x32 written from the published algorithm (checked against the Random123 known
answer vectors) with TRANDOM's counter layout; seeds as 32-bit words, counter carries, the valid
region, 7 / 10 rounds, INT32 / UINT32; A2/A3 and bad arguments refused with located errors."""
from __future__ import annotations

import pytest
import torch

import kernels_random as K
import ops_harness as H
from pypto.errors import PyptoError

COVERED_OPS = {"tile.random", "tensor.random"}
M32 = 0xFFFFFFFF


def philox_block(ctr, key, rounds):
    """Philox-4x32 of one counter (4 words, word 0 least significant), plain Python ints."""
    c = list(ctr)
    k0, k1 = key
    for _ in range(rounds):
        p0, p1 = c[0] * 0xD2511F53, c[2] * 0xCD9E8D57
        c = [((p1 >> 32) ^ c[1] ^ k0) & M32, p1 & M32, ((p0 >> 32) ^ c[3] ^ k1) & M32, p0 & M32]
        k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32
    return c


def test_philox_known_answers():
    """Random123's published Philox-4x32-10 known-answer vectors."""
    assert philox_block([0, 0, 0, 0], [0, 0], 10) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    assert philox_block([M32] * 4, [M32, M32], 10) == [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]
    assert philox_block([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0], 10) == \
        [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


def oracle(seeds, shape, valid, rounds):
    """TRANDOM element by element: row r, loop l, lane n -> counter + (r * L + l) * (S // 4) + n."""
    k = [s & M32 for s in seeds[:2]]
    c = [s & M32 for s in seeds[2:]]
    base = c[0] | c[1] << 32 | c[2] << 64 | c[3] << 96
    rows, cols = valid
    loops = -(-cols // 256)
    out = torch.zeros(shape, dtype=torch.int64)
    for r in range(rows):
        for lp in range(loops):
            for n in range(64):
                v = (base + (r * loops + lp) * (shape[1] // 4) + n) % (1 << 128)
                words = philox_block([(v >> (32 * i)) & M32 for i in range(4)], k, rounds)
                for w in range(4):
                    col = 256 * lp + 64 * w + n
                    if col < cols:
                        out[r, col] = words[w]
    return out


def _bits(t):
    return t.view(torch.int32).to(torch.int64) & M32


def both(kernel, args, out_index=-1):
    ref = H.run_ref(kernel, args)[out_index]
    sim = H.run_sim(kernel, args, "a5sim")[out_index]
    H.assert_same_bits(sim, ref, f"{kernel.__name__} on a5sim")
    return ref


def test_tile_random_default():
    out = both(K.t_random, [torch.zeros(4, 256, dtype=torch.uint32)])
    assert out.dtype == torch.uint32
    assert torch.equal(_bits(out), oracle((0x1234, 0x5678, 1, 2, 3, 4), (4, 256), (4, 256), 10))


@pytest.mark.parametrize("seeds", [(1, 2, 3, 4), (-1, 0x7FFFFFFF, -1, -1), (0, 0, -64, 5)])
def test_tile_random_runtime_seeds_int32_rounds7(seeds):
    """Runtime seeds (negative: their two's complement word); c0 = -64 carries into c1 for the later
    lanes; 600 columns: three loops per row, the last partial."""
    k0, k1, c0, c3 = seeds
    out = both(K.t_random_seeds, [k0, k1, c0, c3, torch.zeros(3, 600, dtype=torch.int32)])
    assert out.dtype == torch.int32
    assert torch.equal(_bits(out), oracle((k0, k1, c0, 0, 0, c3), (3, 600), (3, 600), 7))


def test_tile_random_valid_region():
    init = torch.full((8, 64), 0x55, dtype=torch.uint32)
    out = both(K.t_random_valid, [init.clone()])
    want = _bits(init.clone())
    want[:5, :40] = oracle((7, 8, 9, 10, 11, 12), (8, 64), (5, 40), 10)[:5, :40]
    assert torch.equal(_bits(out), want)        # only the valid region is stored


def test_tensor_random_counter_wraps():
    out = both(K.tensor_random, [torch.zeros(2, 128, dtype=torch.uint32)])
    assert torch.equal(_bits(out), oracle((-1, -2, -1, -1, -1, -1), (2, 128), (2, 128), 10))


def test_refusals():
    with pytest.raises(PyptoError, match=r"does not exist on a2a3sim \(only on a5\)"):
        H.run_sim(K.t_random, [torch.zeros(4, 256, dtype=torch.uint32)], "a2a3sim")
    with pytest.raises(PyptoError, match="dtype must be INT32 or UINT32"):
        H.run_sim(K.random_bad_dtype, [torch.zeros(4, 64)], "a5sim")


def test_printed_program_parses_back():
    from catalog_harness import assert_roundtrips

    assert_roundtrips(K.t_random_valid, [torch.zeros(8, 64, dtype=torch.uint32)])
