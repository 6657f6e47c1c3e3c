"""Kernels for tests/ops/test_sort16.py (FP16 sort32 / mrgsort; tie order by the index value)."""
import pypto.language as pl


@pl.jit
def sort32_any(src: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.sort32(pl.load(src, [0, 0], [4, 64]), pl.load(idx, [0, 0], [4, 64])), [0, 0], out)
    return out


@pl.jit
def sort_merge16(src: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    """FP16: sort32 of 128 elements, one format-1 merge of 4 runs of 128 halves."""
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.tile.sort32(pl.load(src, [0, 0], [1, 128]), pl.load(idx, [0, 0], [1, 128]))
        out = pl.store(pl.tile.mrgsort(s, block_len=128), [0, 0], out)
    return out


@pl.jit
def merge_two16(a: pl.Tensor, ia: pl.Tensor, b: pl.Tensor, ib: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.tile.mrgsort(pl.tile.sort32(pl.load(a, [0, 0], [1, 128]), pl.load(ia, [0, 0], [1, 128])), block_len=128)
        y = pl.tile.mrgsort(pl.tile.sort32(pl.load(b, [0, 0], [1, 128]), pl.load(ib, [0, 0], [1, 128])), block_len=128)
        tmp = pl.create_tile([1, 1024], dtype=pl.FP16, target_memory=pl.Mem.Vec)
        out = pl.store(pl.tile.mrgsort(x, y, tmp=tmp), [0, 0], out)
    return out


@pl.jit
def bad_block16(src: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.tile.sort32(pl.load(src, [0, 0], [1, 128]), pl.load(idx, [0, 0], [1, 128]))
        out = pl.store(pl.tile.mrgsort(s, block_len=64), [0, 0], out)
    return out
