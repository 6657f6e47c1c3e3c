"""Reduction 3: the summation order is part of a reduction's meaning.

``pl.row_sum(t, tmp)`` (a scratch tile) sums in binary-tree order: pairwise halving, one vector op
per level, log2(n) levels. ``pl.tile.row_sum(t)`` (no scratch; also what the tensor-level
``pl.row_sum(tensor)`` lowers to) sums sequentially, left to right, rounding to FP32 after every
add. Over 4096 columns the two differ in the last bits; each is reproduced exactly by a numpy
float32 implementation of its order, and the tree is (typically) closer to the exact sum.
"""
import numpy as np
import torch

import pypto.language as pl
from softmax import run_everywhere


@pl.jit
def row_sum_tree(a: pl.Tensor[[4, 4096], pl.FP32], out: pl.Out[pl.Tensor[[4, 1], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [4, 4096])
        tmp = pl.create_tile([4, 4096], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        out = pl.store(pl.row_sum(t, tmp), [0, 0], out)
    return out


@pl.jit
def row_sum_sequential(a: pl.Tensor[[4, 4096], pl.FP32], out: pl.Out[pl.Tensor[[4, 1], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [4, 4096])
        out = pl.store(pl.tile.row_sum(t), [0, 0], out)
    return out


def np_tree(x):
    cur = [x[:, j] for j in range(x.shape[1])]
    while len(cur) > 1:
        n, h = len(cur), len(cur) // 2
        cur = [cur[i] + cur[n - h + i] for i in range(h)] + ([cur[h]] if n % 2 else [])
    return cur[0][:, None]


def np_sequential(x):
    acc = x[:, 0].copy()
    for j in range(1, x.shape[1]):
        acc = acc + x[:, j]
    return acc[:, None]


if __name__ == "__main__":
    torch.manual_seed(0)
    a = torch.randn(4, 4096)
    out = torch.zeros(4, 1)
    tree_expected = torch.from_numpy(np_tree(a.numpy()))
    seq_expected = torch.from_numpy(np_sequential(a.numpy()))
    assert not torch.equal(tree_expected, seq_expected)
    for where, got in run_everywhere(row_sum_tree, (a,), out).items():
        assert torch.equal(got, tree_expected), where
        print(f"tree row_sum on {where}: OK")
    for where, got in run_everywhere(row_sum_sequential, (a,), out).items():
        assert torch.equal(got, seq_expected), where
        print(f"sequential row_sum on {where}: OK")
    exact = a.double().sum(dim=1, keepdim=True)
    print("tree error      :", (tree_expected.double() - exact).abs().flatten().tolist())
    print("sequential error:", (seq_expected.double() - exact).abs().flatten().tolist())
