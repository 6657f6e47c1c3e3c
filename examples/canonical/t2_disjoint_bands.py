"""T2 (spec §7): four tasks write disjoint 64-row bands of one output, bare ``pl.Tensor``
annotations, N=4, TILE=64, COLS=128: ``out = a * 2``.

Each band task writes ``out``; by default the runtime would order them (write after write on the
same buffer). The bands do not overlap, so the ordering is unnecessary: ``no_dep_args=[out]``
opts ``out`` out of the dependency tracking of each task (``bands_no_dep``), or the whole loop
runs in ``pl.manual_scope()`` where no automatic edges are made (``bands_manual``). Both are
unchecked assertions of independence.
"""
import torch

import pypto.language as pl
from _check import check

N, TILE, COLS = 4, 64, 128


@pl.jit
def bands_no_dep(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    for i in pl.range(N):
        with pl.at(level=pl.Level.CORE_GROUP, no_dep_args=[out]):
            t = pl.load(a, [i * TILE, 0], [TILE, COLS])
            out = pl.store(pl.mul(t, 2.0), [i * TILE, 0], out)
    return out


@pl.jit
def bands_manual(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.manual_scope():
        for i in pl.range(N):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(a, [i * TILE, 0], [TILE, COLS])
                out = pl.store(pl.mul(t, 2.0), [i * TILE, 0], out)
    return out


def main():
    torch.manual_seed(0)
    a = torch.randn(N * TILE, COLS)
    for kernel in (bands_no_dep, bands_manual):
        check(kernel, (a, torch.zeros(N * TILE, COLS)), a * 2, rtol=1e-4, atol=1e-4)


if __name__ == "__main__":
    main()
