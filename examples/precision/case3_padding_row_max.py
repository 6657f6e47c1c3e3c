"""Case 3 — row maxima all 0.0 for all-negative data, only on partial tiles (seed step 2).

The last block of a row loop is narrower than the tile, so it is loaded with ``valid_shape``: the
columns past the valid width are padding (zero after the load). Reductions read the whole physical
tile, so the zero padding beats every negative value. It is expected behaviour of the hardware, not
a compiler bug: fill the padding with the identity of the reduction first,
``pl.fillpad(t, pl.PadValue.min)`` before ``row_max`` (``zero`` before a sum, ``max`` before a min).
The compiler also says so (diagnostic PTO-P001). Full tiles are right either way.
Run: python examples/precision/case3_padding_row_max.py
"""
import torch

import pypto.language as pl
from pypto.runtime import RunConfig

ROWS, TILE, WIDTH = 32, 64, 100     # the second 64-wide block holds only 36 valid columns


@pl.jit
def block_row_max(x: pl.Tensor[[ROWS, 128], pl.FP32], out: pl.Out[pl.Tensor[[ROWS, 2], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="full_block"):
        t = pl.load(x, [0, 0], [ROWS, TILE])
        tmp = pl.create_tile([ROWS, TILE], dtype=pl.FP32)
        out = pl.store(pl.row_max(t, tmp), [0, 0], out)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="last_block"):
        t = pl.load(x, [0, TILE], [ROWS, TILE], valid_shape=[ROWS, WIDTH - TILE])
        tmp = pl.create_tile([ROWS, TILE], dtype=pl.FP32)
        out = pl.store(pl.row_max(t, tmp), [0, 1], out)
    return out


@pl.jit
def block_row_max_fixed(x: pl.Tensor[[ROWS, 128], pl.FP32], out: pl.Out[pl.Tensor[[ROWS, 2], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="full_block"):
        t = pl.load(x, [0, 0], [ROWS, TILE])
        tmp = pl.create_tile([ROWS, TILE], dtype=pl.FP32)
        out = pl.store(pl.row_max(t, tmp), [0, 0], out)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="last_block"):
        t = pl.load(x, [0, TILE], [ROWS, TILE], valid_shape=[ROWS, WIDTH - TILE])
        f = pl.fillpad(t, pl.PadValue.min)
        tmp = pl.create_tile([ROWS, TILE], dtype=pl.FP32)
        out = pl.store(pl.row_max(f, tmp), [0, 1], out)
    return out


def main() -> str:
    torch.manual_seed(0)
    x = -torch.rand(ROWS, 128) - 0.5                # all negative
    x[:, WIDTH:] = float("nan")                     # past the logical width: never meant to be read
    expected = torch.stack([x[:, :TILE].max(1).values, x[:, TILE:WIDTH].max(1).values], dim=1)
    cfg = RunConfig(platform="a2a3sim")
    out = torch.zeros(ROWS, 2)
    compiled = block_row_max.compile(x, out, config=cfg)
    assert "PTO-P001" in {d.code for d in compiled.diagnostics}, "the compiler should flag the padded reduction"
    block_row_max(x, out, config=cfg)
    assert torch.equal(out[:, 0], expected[:, 0]), "the full block is right"
    assert torch.equal(out[:, 1], torch.zeros(ROWS)), "the partial block's maxima are the padding's 0.0"
    fixed = torch.zeros(ROWS, 2)
    block_row_max_fixed(x, fixed, config=cfg)
    assert torch.equal(fixed, expected), "fillpad(min) gives the true maxima"
    return "step 2: padding took part in row_max (expected behaviour); fixed by pl.fillpad(t, pl.PadValue.min)"


if __name__ == "__main__":
    print(main())
