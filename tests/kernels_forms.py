"""Kernels for tests/test_forms.py: language forms programs written for the reference use, and the
wrong results found while trying them (statement-form stores, valid shapes under annotations)."""
import pypto.language as pl


# ---------------------------------------------------------------- statement-form pl.store
@pl.jit
def stmt_store_two_scopes(a: pl.Tensor[[64, 64], pl.FP32], scratch: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
                          out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        pl.store(pl.add(t, t), [0, 0], scratch)          # result not rebound: still a write
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.load(scratch, [0, 0], [64, 64])
        out = pl.store(pl.add(s, 1.0), [0, 0], out)
    return out


@pl.jit
def stmt_store_loop(a: pl.Tensor[[128, 64], pl.FP32], scratch: pl.Out[pl.Tensor[[128, 64], pl.FP32]],
                    out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]):
    for i in pl.range(2):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [i * 64, 0], [64, 64])
            pl.store(pl.mul(t, 3.0), [i * 64, 0], scratch)
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.load(scratch, [0, 0], [128, 64])
        out = pl.store(pl.sub(s, 1.0), [0, 0], out)
    return out


# ---------------------------------------------------------------- valid shapes through annotations
@pl.jit
def valid_tail_subs(src: pl.Tensor[[32, 64], pl.FP32], out: pl.InOut[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s: pl.Tile[[32, 64], pl.FP32] = pl.load(src, [0, 0], [32, 64], valid_shape=[20, 47])
        r: pl.Tile[[32, 64], pl.FP32] = pl.tile.subs(s, 2.0)
        out = pl.store(r, [0, 0], out)
    return out


@pl.jit
def valid_tail_row_expand_add(src: pl.Tensor[[32, 64], pl.FP32], row: pl.Tensor[[32, 1], pl.FP32],
                              out: pl.InOut[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s: pl.Tile[[32, 64], pl.FP32] = pl.load(src, [0, 0], [32, 64], valid_shape=[20, 64])
        r: pl.Tile[[32, 1], pl.FP32] = pl.load(row, [0, 0], [32, 1], valid_shape=[20, 1])
        res: pl.Tile[[32, 64], pl.FP32] = pl.tile.row_expand_add(s, r)
        out = pl.store(res, [0, 0], out)
    return out


# ---------------------------------------------------------------- FP16 column sum (TCOLSUM order)
@pl.jit
def col_sum_fp16_tree(a: pl.Tensor[[32, 64], pl.FP16], out: pl.Out[pl.Tensor[[1, 64], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t: pl.Tile[[32, 64], pl.FP16] = pl.load(a, [0, 0], [32, 64])
        tmp: pl.Tile[[32, 64], pl.FP16] = pl.tile.create([32, 64], dtype=pl.FP16, target_memory=pl.MemorySpace.Vec)
        r: pl.Tile[[1, 64], pl.FP16] = pl.tile.col_sum(t, tmp)
        out = pl.store(r, [0, 0], out)
    return out


# ---------------------------------------------------------------- inline helpers with statement stores
@pl.jit.inline
def plus_one_into(a: pl.Tensor, c: pl.Tensor):
    pl.dump_tag(a)
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [128, 128])
        pl.store(pl.add(t, 1.0), [0, 0], c)
    return c


@pl.jit.inline
def twice_into(a: pl.Tensor, c: pl.Tensor):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [128, 128])
        pl.store(pl.mul(t, 2.0), [0, 0], c)
    return c


@pl.jit
def inline_stmt_stores(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    mid = pl.create_tensor([128, 128], dtype=pl.FP32)
    pl.dump_tag(mid)
    mid = plus_one_into(a, mid)
    c = twice_into(mid, c)
    return c
