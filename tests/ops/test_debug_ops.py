"""tensor.dump_tag (pl.dump_tag): a snapshot of a tensor at a point of the orchestration."""
import torch

import pypto.language as pl
from pypto.runtime import RunConfig
from pypto.runtime.simulator import last_dumps

COVERED_OPS = {"tensor.dump_tag"}


@pl.jit
def dump_twice(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, a)
    pl.dump_tag(out)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(out, out)
    pl.dump_tag(out)
    return out


def test_dump_tag_snapshots_in_program_order():
    a = torch.randn(64, 128)
    for plat in ("a2a3sim", "a5sim"):
        out = torch.zeros(64, 128)
        dump_twice(a, out, config=RunConfig(platform=plat))
        d = last_dumps()
        assert [t for t, _ in d] == ["out", "out"] or len(d) == 2
        torch.testing.assert_close(d[0][1], a + a)
        torch.testing.assert_close(d[1][1], (a + a) * (a + a))
        torch.testing.assert_close(out, (a + a) * (a + a))
