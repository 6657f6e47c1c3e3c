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
