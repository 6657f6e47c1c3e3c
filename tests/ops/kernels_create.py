"""Kernels for tests/ops/test_create_sort.py (ci / arange, tri, sort32, mrgsort, gather_mask)."""
import pypto.language as pl


@pl.jit
def t_arange(s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.arange(s, [1, 48])
    return out


@pl.jit
def t_ci_desc_i16(s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.tensor.ci(s, [1, 40], dtype=pl.INT16, descending=True)
    return out


@pl.jit
def p_ci(s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.ci(s, [1, 64], dtype=pl.UINT32), [0, 0], out)
    return out


@pl.jit
def p_arange_u16(s: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.arange(s, [1, 32], dtype=pl.UINT16, descending=True), [0, 0], out)
    return out


@pl.jit
def p_tri_lower(d: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tri(d, [16, 32], dtype=pl.FP32), [0, 0], out)
    return out


@pl.jit
def p_tri_upper_valid(d: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.tri(d, [16, 32], valid_shape=[10, 20], dtype=pl.INT8, upper=True), [0, 0], out)
    return out


@pl.jit
def bad_ci_rows(out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.arange(0, [4, 32])
    return out


@pl.jit
def sort32_pairs(src: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.load(src, [0, 0], [8, 64])
        i = pl.load(idx, [0, 0], [8, 64])
        out = pl.store(pl.tile.sort32(s, i), [0, 0], out)
    return out


@pl.jit
def sort_1x128(src: pl.Tensor, idx: pl.Tensor, vals: pl.Out[pl.Tensor], ids: pl.Out[pl.Tensor]):
    """sort32, one format-1 merge, then the values and the indices out of the pairs."""
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.load(src, [0, 0], [1, 128])
        i = pl.load(idx, [0, 0], [1, 128])
        merged = pl.tile.mrgsort(pl.tile.sort32(s, i), block_len=64)
        vals = pl.store(pl.tile.gather_mask(merged, mask_pattern=pl.tile.MaskPattern.P0101), [0, 0], vals)
        ids = pl.store(pl.tile.gather_mask(merged, pl.tile.MaskPattern.P1010, output_dtype=pl.UINT32), [0, 0], ids)
    return vals, ids


@pl.jit
def sort_tensor_2048(src: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    """The tensor-level pipeline: sort32, then three format-1 merges (64, 256, 1024)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.sort32(src, idx)
        bl = pl.const(64, pl.INDEX)
        for k in pl.range(3):
            acc = pl.mrgsort(acc, block_len=bl)     # a runtime block_len: 64, 256, 1024
            bl = bl * 4
        out[:] = acc
    return out


@pl.jit
def merge_two(a: pl.Tensor, ia: pl.Tensor, b: pl.Tensor, ib: pl.Tensor, out: pl.Out[pl.Tensor]):
    """Two sorted halves (sort32 + merges each), then a format-2 2-way merge."""
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.tile.mrgsort(pl.tile.sort32(pl.load(a, [0, 0], [1, 128]), pl.load(ia, [0, 0], [1, 128])), block_len=64)
        y = pl.tile.mrgsort(pl.tile.sort32(pl.load(b, [0, 0], [1, 128]), pl.load(ib, [0, 0], [1, 128])), block_len=64)
        tmp = pl.create_tile([1, 512], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        out = pl.store(pl.tile.mrgsort(x, y, tmp=tmp), [0, 0], out)
    return out


@pl.jit
def sort_tensor_val_idx(src: pl.Tensor, idx: pl.Tensor, vals: pl.Out[pl.Tensor], ids: pl.Out[pl.Tensor]):
    """Tensor level: sort32, merges, then the mask form of pl.gather for the values and the indices."""
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.tensor.sort32(src, idx)
        acc = pl.tensor.mrgsort(acc, block_len=64)
        acc = pl.mrgsort(acc, block_len=256)
        vals[:] = pl.gather(acc, mask_pattern=pl.tile.MaskPattern.P0101)
        ids[:] = pl.tensor.gather(acc, mask_pattern=pl.tile.MaskPattern.P1010, output_dtype=pl.UINT32)
    return vals, ids
