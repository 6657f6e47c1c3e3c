"""pl.dynamic (spec D1): a dynamic entry drives a fixed [32, 64] kernel; new extents do not recompile."""
import torch

import pypto.language as pl
from pypto.runtime import RunConfig

N = pl.dynamic("N")


@pl.jit.incore
def rows(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(x, [0, 0], [32, 64])
    out = pl.store(pl.mul(t, 2.0), [0, 0], out)
    return out


@pl.jit
def drive(x: pl.Tensor[[N, 64], pl.FP32], out: pl.Out[pl.Tensor[[N, 64], pl.FP32]]):
    out = rows(x, out)
    return out


if __name__ == "__main__":
    for platform in ("a2a3sim", "a5sim"):
        for extent in (32, 96):
            x = torch.randn(extent, 64)
            out = torch.zeros(extent, 64)
            drive(x, out, config=RunConfig(platform=platform))
            torch.testing.assert_close(out[:32], x[:32] * 2, atol=1e-4, rtol=1e-4)
    assert drive.cache_info() == 2, drive.cache_info()  # one artifact per platform, none per extent
    print("[PASS] drive")
