"""Case 2 — an A5 INT32->FP16 cast is blamed; the expansion is exact (seed step 2).

On a5 LegalizeTileCast expands INT32->FP16 into INT32->FP32->FP16 (a2a3 has the native cast). The
chain is bit-identical to the direct conversion, in all three ranges of the argument: exact in FP32
(|x| <= 65504), rounding to 65504 below the overflow midpoint (65504 < |x| < 65520), and overflowing
to inf from 65520 on, even where the FP32 hop itself rounds (|x| > 2^24).
Run: python examples/precision/case2_a5_cast_chain.py
"""
import torch

import pypto.language as pl
from pypto.numerics.cast import cast_tensor
from pypto.numerics.cast_exactness import classify_chain
from pypto.runtime import RunConfig

ROWS, COLS = 16, 128


@pl.jit
def to_fp16(x: pl.Tensor[[ROWS, COLS], pl.INT32], out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(x, pl.FP16)
    return out


SEED_VALUES = [0, 1, 2048, 65504, 65505, 65519, 65520, 70000, 1 << 20, 1 << 24, (1 << 24) + 1, 1 << 25,
               -65504, -65519, -65520, -70000]

RANGES = {
    "exact in FP32 (|x| <= 65504)": [0, 1, 2047, 2048, 2049, 4097, 65504, -65504, -3, 31000],
    "rounds to 65504 (65504 < |x| < 65520)": [65505, 65510, 65519, -65505, -65519],
    "overflows (|x| >= 65520, FP32 hop rounds past 2^24)": [65520, 70000, 1 << 24, (1 << 24) + 1, (1 << 25) + 3,
                                                             2 ** 31 - 1, -65520, -(2 ** 31)],
}


def main() -> str:
    values = torch.zeros(ROWS, COLS, dtype=torch.int32)
    flat = [v for vs in RANGES.values() for v in vs]
    values.view(-1)[: len(flat)] = torch.tensor(flat, dtype=torch.int32)
    g = torch.Generator().manual_seed(0)
    values.view(-1)[len(flat):] = torch.randint(-(2 ** 31), 2 ** 31 - 1, (values.numel() - len(flat),), generator=g,
                                                dtype=torch.int32)
    values[1, :len(SEED_VALUES)] = torch.tensor(SEED_VALUES, dtype=torch.int32)
    chains = {}
    for platform in ("a5sim", "a2a3sim"):
        cfg = RunConfig(platform=platform)
        text = to_fp16.lower(values, torch.zeros(ROWS, COLS, dtype=torch.float16), config=cfg).as_python()
        chains[platform] = text.count("pl.tile.cast(")
        out = torch.zeros(ROWS, COLS, dtype=torch.float16)
        to_fp16(values, out, config=cfg)
        direct = cast_tensor(values, torch.float16, "round")  # the hypothetical one-step INT32->FP16
        assert torch.equal(out.view(torch.int16), direct.view(torch.int16)), platform
        # torch rounds ties to even, pl.cast's default mode "round" rounds ties away from zero; on the
        # seed page's values (row 1, no ties among them) the two agree bit for bit
        seed_row = out[1, :len(SEED_VALUES)]
        assert torch.equal(seed_row.view(torch.int16), values[1, :len(SEED_VALUES)].to(torch.float16).view(torch.int16))
    assert chains == {"a5sim": 2, "a2a3sim": 1}, chains
    verdict = classify_chain(["INT32", "FP32", "FP16"], "round")
    assert verdict.exact
    for name, vs in RANGES.items():
        print(f"  {name}: {len(vs)} values bit-identical")
    return "step 2: the a5 chain INT32->FP32->FP16 is bit-identical to the direct cast (all three ranges)"


if __name__ == "__main__":
    print(main())
