"""T1 (spec §7): a two-task graph through a scratch tensor, 128x128 FP32.

``stage1`` writes ``scratch = x + x``; ``stage2`` reads it: ``out = scratch + scratch``. In
``task_graph`` the edge stage1 -> stage2 is derived automatically (stage2 reads what stage1
wrote); in ``task_graph_declared`` stage1's TaskId is bound (``as first``) and passed to stage2 as
``deps=[first]`` as well. Both compute ``(x + x) + (x + x)``.
"""
import torch

import pypto.language as pl
from _check import check


@pl.jit
def task_graph(x: pl.Tensor[[128, 128], pl.FP32], scratch: pl.Out[pl.Tensor[[128, 128], pl.FP32]],
               out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="stage1"):
        scratch[:] = pl.add(x, x)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="stage2"):
        out[:] = pl.add(scratch, scratch)
    return out


@pl.jit
def task_graph_declared(x: pl.Tensor[[128, 128], pl.FP32], scratch: pl.Out[pl.Tensor[[128, 128], pl.FP32]],
                        out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="stage1") as first:
        scratch[:] = pl.add(x, x)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="stage2", deps=[first]):
        out[:] = pl.add(scratch, scratch)
    return out


def main():
    torch.manual_seed(0)
    x = torch.randn(128, 128)
    z = torch.zeros(128, 128)
    for kernel in (task_graph, task_graph_declared):
        check(kernel, (x, z, z), {1: x + x, 2: (x + x) + (x + x)}, rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
    main()
