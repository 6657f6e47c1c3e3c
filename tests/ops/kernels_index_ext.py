"""Kernels for tests/ops/test_index_ext.py (mscatter, gatherb, gather_row, paged_gather, gather_compare)."""
import pypto.language as pl


@pl.jit
def mscatter(src: pl.Tensor, idx: pl.Tensor, out: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.load(src, [0, 0], [8, 32])
        ti = pl.load(idx, [0, 0], [8, 32])
        out = pl.mscatter(s, ti, out)
    return out


@pl.jit
def mscatter_partial(src: pl.Tensor, idx: pl.Tensor, out: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.load(src, [0, 0], [8, 32])
        ti = pl.load(idx, [0, 0], [8, 32], valid_shape=[5, 17])
        out = pl.tile.mscatter(s, ti, output_tensor=out)
    return out


@pl.jit
def gc_tile_eq(src: pl.Tensor, kv: pl.Tensor, out_dst: pl.Out[pl.Tensor], out_cnt: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        k: pl.Scalar[pl.INT32] = pl.tensor.read(kv, [0])
        s = pl.load(src, [0, 0], [16, 64], valid_shape=[12, 60])
        tmp = pl.create_tile([1, 64], dtype=pl.UINT8, target_memory=pl.Mem.Vec)
        d, c = pl.tile.gather_compare(s, k, tmp, cmp_mode="eq", offset=3, out_cols=16)
        out_dst = pl.store(d, [0, 0], out_dst)
        out_cnt = pl.store(c, [0, 0], out_cnt)
    return out_dst, out_cnt


@pl.jit
def gc_tensor(src: pl.Tensor, kv: pl.Tensor, mode: pl.INDEX, out_dst: pl.Out[pl.Tensor],
              out_cnt: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        k: pl.Scalar[pl.FP16] = pl.tensor.read(kv, [0])
        d, c = pl.tensor.gather(src, kvalue=k, cmp_mode=mode, out_cols=64, count_dtype=pl.UINT32)
        out_dst = pl.assemble(out_dst, d, [0, 0])
        out_cnt = pl.assemble(out_cnt, c, [0, 0])
    return out_dst, out_cnt


@pl.jit
def gc_overflow(src: pl.Tensor, kv: pl.Tensor, out_dst: pl.Out[pl.Tensor], out_cnt: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        k: pl.Scalar[pl.INT32] = pl.tensor.read(kv, [0])
        d, c = pl.gather(src, kvalue=k, cmp_mode="ge", out_cols=4)
        out_dst = pl.assemble(out_dst, d, [0, 0])
        out_cnt = pl.assemble(out_cnt, c, [0, 0])
    return out_dst, out_cnt


@pl.jit
def paged_vec(src: pl.Tensor, idx: pl.Tensor, bt: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        g = pl.paged_gather(src, idx, bt, block_size=16, size=64, max_indices=16, space=pl.MemorySpace.Vec,
                            col_off=32)
        out = pl.assemble(out, g, [0, 0])
    return out


@pl.jit
def paged_mat(src: pl.Tensor, idx: pl.Tensor, bt: pl.Tensor, eye: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        g = pl.paged_gather(src, idx, bt, block_size=16, size=128, max_indices=16, space=pl.MemorySpace.Mat,
                            is_b_matrix=True)
        out = pl.assemble(out, pl.matmul(eye, g, out_dtype=pl.FP32), [0, 0])
    return out


@pl.jit
def gather_row_l1(src: pl.Tensor, n: pl.Tensor, eye: pl.Tensor, out: pl.Out[pl.Tensor]):
    """Sentinel rows 64.. first, then a runtime number of rows from row 0 (valid_shape)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        rows = pl.cast(pl.read(n, [0]), pl.INDEX)
        kv = pl.create_l1([32, 128], pl.FP16)
        kv = pl.gather_row(kv, src, [0, 0], [64, 0], [32, 128])
        kv = pl.gather_row(kv, src, [0, 0], [0, 0], [32, 128], valid_shape=[rows, 128])
        out = pl.assemble(out, pl.matmul(eye, kv, out_dtype=pl.FP32), [0, 0])
    return out


@pl.jit
def gather_row_tile(src: pl.Tensor, out: pl.Out[pl.Tensor]):
    """Tile form in Vec, rows in reverse order into slots, one transposed block via Mat is not used."""
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.tile.full([8, 64], dtype=pl.FP32, value=-1.0)
        for r in pl.range(6):
            acc = pl.tile.gather_row(acc, src, [r, 0], [20 - r * 3, 8], [1, 64])
        out = pl.store(acc, [0, 0], out)
    return out


@pl.jit
def gather_row_trans(src: pl.Tensor, eye: pl.Tensor, out: pl.Out[pl.Tensor]):
    """A [1, 16] row placed as a [16, 1] column of a b-operand, for each of 8 columns."""
    with pl.at(level=pl.Level.CORE_GROUP):
        kv = pl.create_l1([16, 8], pl.FP16, transpose=True)
        for c in pl.range(8):
            kv = pl.gather_row(kv, src, [0, c], [c * 2, 0], [1, 16], transpose=True)
        out = pl.assemble(out, pl.matmul(eye, kv, out_dtype=pl.FP32), [0, 0])
    return out


@pl.jit
def gatherb_same(src: pl.Tensor, off: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.load(src, [0, 0], [16, 64])
        o = pl.load(off, [0, 0], [4, 8], valid_shape=[3, 8])
        out = pl.store(pl.gatherb(s, o), [0, 0], out)
    return out


@pl.jit
def gatherb_as_i8(src: pl.Tensor, off: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.load(src, [0, 0], [16, 64])
        o = pl.load(off, [0, 0], [4, 8])
        out = pl.store(pl.tile.gatherb(s, o, output_dtype=pl.INT8), [0, 0], out)
    return out


@pl.jit
def paged_short(src: pl.Tensor, idx: pl.Tensor, bt: pl.Tensor, out: pl.InOut[pl.Tensor]):
    """10 indices, max_indices 16: rows 10.. are zero, in the tensor-level meaning and lowered alike."""
    with pl.at(level=pl.Level.CORE_GROUP):
        g = pl.paged_gather(src, idx, bt, block_size=16, size=64, max_indices=16, space=pl.MemorySpace.Vec)
        out = pl.assemble(out, g, [0, 0])
    return out
