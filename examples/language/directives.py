"""Parse-time directives (pl.static_print / pl.static_assert / pl.const) and pl.dump_tag snapshots."""
import torch
from _check import check

import pypto.language as pl
from pypto.runtime.simulator import last_dumps


@pl.jit
def plus_one_squared(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    pl.static_print(f"a is {a}")
    pl.static_assert(a.shape[1] == 128, "expects 128 columns")
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, pl.const(1, pl.FP32))
    pl.dump_tag(out)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(out, out)
    return out


if __name__ == "__main__":
    a = torch.randn(64, 128)
    check(plus_one_squared, (a,), (a + 1) * (a + 1))
    torch.testing.assert_close(last_dumps()[0][1], a + 1)
