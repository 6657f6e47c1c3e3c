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


# ---------------------------------------------------------------- the reference's op signatures
@pl.jit
def sig_cast_store(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 64])
        h = pl.cast(t, target_type=pl.FP16, mode="rint")
        out = pl.store(h, [0, 0], output_tensor=out, shapes=[32, 64])
    return out


@pl.jit
def sig_sel(x: pl.Tensor[[32, 64], pl.FP32], y: pl.Tensor[[32, 64], pl.FP32],
            out: pl.Out[pl.Tensor[[32, 64], pl.FP32]], out2: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        a = pl.load(x, [0, 0], [32, 64])
        b = pl.load(y, [0, 0], [32, 64])
        m = pl.tile.cmp(a, b, cmp_type=4)
        tmp = pl.tile.create([1, 32], dtype=pl.UINT8, target_memory=pl.MemorySpace.Vec)
        r = pl.tile.sel(m, a, b, tmp)
        r2 = pl.tile.sels(m, a, tmp, 0.5)
        out = pl.store(r, [0, 0], out)
        out2 = pl.store(r2, [0, 0], out2)
    return out, out2


@pl.jit
def sig_clamp_div_log(x: pl.Tensor[[40, 64], pl.FP32], y: pl.Tensor[[40, 64], pl.FP32],
                      out: pl.InOut[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        a = pl.load(x, [8, 0], [64, 64], clamp=True)      # rows 8..40 exist: valid [32, 64]
        b = pl.load(y, [8, 0], [64, 64], clamp=True)
        q = pl.div(a, pl.add(b, 10.0), high_precision=True)
        r = pl.log(pl.add(pl.abs(q), 1.0), high_precision=True)
        out = pl.store(r, [0, 0], out)
    return out


@pl.jit
def sig_row_expand_tmp(x: pl.Tensor[[32, 64], pl.FP32], v: pl.Tensor[[32, 1], pl.FP32],
                       out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 64])
        r = pl.load(v, [0, 0], [32, 1])
        tmp = pl.tile.create([32, 64], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)
        s = pl.tile.row_expand_add(t, r, tmp=tmp)
        out = pl.store(pl.row_expand_mul(s, r), [0, 0], out)
    return out


@pl.jit
def sig_create_tensor_init(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    buf = pl.create_tensor([32, 64], dtype=pl.FP32, layout=pl.TensorLayout.ND, init_value=1.5)
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [16, 64])
        buf = pl.store(t, [0, 0], buf)                    # rows 16..32 keep the fill
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.load(buf, [0, 0], [32, 64]), [0, 0], out)
    return out


@pl.jit
def sig_matmul_acc_init_cond(a: pl.Tensor[[32, 128], pl.FP32], b: pl.Tensor[[128, 48], pl.FP32],
                             out: pl.Out[pl.Tensor[[32, 48], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.tile.create([32, 48], dtype=pl.FP32, target_memory=pl.MemorySpace.Acc)
        for k in pl.range(4):
            ta = pl.load(a, [0, k * 32], [32, 32], target_memory=pl.Mem.Mat)
            tb = pl.load(b, [k * 32, 0], [32, 48], target_memory=pl.Mem.Mat)
            la = pl.move(ta, target_memory=pl.Mem.Left)
            rb = pl.move(tb, target_memory=pl.Mem.Right)
            pl.tile.matmul_acc(acc, la, rb, init_cond=(k == 1))   # statement form: updates acc
        out = pl.store(acc, [0, 0], out)
    return out


@pl.jit
def sig_extract(a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[32, 48], pl.FP32],
                out: pl.Out[pl.Tensor[[32, 48], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [32, 48], target_memory=pl.Mem.Mat)
        la = pl.tile.extract(ta, 32, 0, [32, 32], target_memory=pl.Mem.Left)
        rb = pl.move(tb, target_memory=pl.Mem.Right)
        out = pl.store(pl.matmul(la, rb), [0, 0], out)
    return out


# ---------------------------------------------------------------- parser forms
ROWS, COLS = 32, 64
SHAPE = [ROWS, COLS]


@pl.program
class TupleReturn:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[SHAPE, pl.FP32], o1: pl.Out[pl.Tensor[SHAPE, pl.FP32]],
          o2: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> tuple[pl.Tensor[SHAPE, pl.FP32], pl.Tensor[SHAPE, pl.FP32]]:
        t = pl.load(a, [0, 0], SHAPE)
        o1 = pl.store(t, [0, 0], o1)
        o2 = pl.store(pl.add(t, t), [0, 0], o2)
        return o1, o2

    @pl.function(type=pl.FunctionType.Orchestration)
    def orch(self, a: pl.Tensor[SHAPE, pl.FP32], o1: pl.Out[pl.Tensor[SHAPE, pl.FP32]],
             o2: pl.Out[pl.Tensor[SHAPE, pl.FP32]]) -> tuple[pl.Tensor[SHAPE, pl.FP32], pl.Tensor[SHAPE, pl.FP32]]:
        o1, o2 = self.k(a, o1, o2)
        return o1, o2


@pl.jit
def bound_in_loop(a: pl.Tensor[[32, 64], pl.FP32], o: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(3):
            t = pl.load(a, [0, 0], [32, 64])
            u = pl.mul(t, 2.0)                 # first bound in the loop ...
            s = i * 2
        o = pl.store(pl.add(u, s), [0, 0], o)  # ... read after it: the last iteration's values
    return o


@pl.jit
def at_hints(a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.scope():
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)],
                   allow_early_resolve=True, windowize=False, name_hint="first"):
            o = pl.store(pl.add(pl.load(a, [0, 0], [32, 64]), 1.0), [0, 0], o)
    with pl.scope(mode=pl.ScopeMode.MANUAL):
        with pl.at(pl.Level.CORE_GROUP, None, name_hint="second") as tid:
            o = pl.store(pl.add(pl.load(a, [32, 0], [32, 64]), 2.0), [32, 0], o)
    for i in pl.spmd(2, name_hint="blocks", sync_start=False, deps=[tid]):
        o = pl.store(pl.mul(pl.load(o, [i * 32, 0], [32, 64]), 3.0), [i * 32, 0], o)
    return o


@pl.jit
def const_then_loop(a: pl.Tensor[[32, 64], pl.FP32], o: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = 0
        f = 1.0
        for i in pl.range(3):
            s = i * 2          # a runtime value: s is carried, 4 after the loop
            f = 2.5            # a constant re-bound in the loop: 2.5 after it
        o = pl.store(pl.add(pl.mul(pl.load(a, [0, 0], [32, 64]), f), s), [0, 0], o)
    return o


@pl.jit
def scalar_casts(a: pl.Tensor[[32, 64], pl.FP32], f: pl.Scalar[pl.FP32], n: pl.Scalar[pl.INT32],
                 o: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        r = pl.cast(f, pl.INT32)                        # ties away: 2.5 -> 3
        d = pl.cast(f, target_type=pl.INT32, mode="floor")   # 2
        m = pl.cast(n, pl.FP32)
        t = pl.load(a, [0, 0], [32, 64])
        o = pl.store(pl.add(pl.mul(t, m), pl.cast(r * 10 + d, pl.FP32)), [0, 0], o)
    return o


# ---------------------------------------------------------------- functions, programs, text
@pl.inline
def twice_inline(x: pl.Tensor[[32, 64], pl.FP32]):
    y = pl.add(x, x)
    return y


@pl.program
class WithInline:
    @pl.function(type=pl.FunctionType.Orchestration, role=pl.Role.Orchestrator)
    def main(self, a: pl.Tensor[[32, 64], pl.FP32], o: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            o[:] = twice_inline(a)
        return o


@pl.function(type=pl.FunctionType.InCore)
def standalone_copy(a: pl.Tensor[[32, 64], pl.FP32], o: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
    return pl.store(pl.load(a, [0, 0], [32, 64]), [0, 0], o)


@pl.jit.incore
def scale_by(x: pl.Tensor[[32, 64], pl.FP32], f: pl.Scalar[pl.FP32], o: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    o = pl.store(pl.mul(pl.load(x, [0, 0], [32, 64]), f), [0, 0], o)
    return o


@pl.jit
def two_constants(a: pl.Tensor[[32, 64], pl.FP32], o1: pl.Out[pl.Tensor[[32, 64], pl.FP32]],
                  o2: pl.Out[pl.Tensor[[32, 64], pl.FP32]], o3: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    o1 = scale_by(a, 2.0, o1)
    o2 = scale_by(a, 3.0, o2)
    o3 = scale_by(a, 2.0, o3)
    return o1, o2, o3


@pl.jit
def const_in_runtime_if(a: pl.Tensor[[32, 64], pl.FP32], o: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [32, 64])
        for i in pl.range(4):
            x = 0.0
            if i == 2:
                x = 5.0                  # a runtime branch: x is 5.0 in iteration 2 only
            t = pl.add(t, x)
        o = pl.store(t, [0, 0], o)
    return o


@pl.jit
def loop_exits(a: pl.Tensor[[32, 64], pl.FP32], o: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [32, 64])
        for i in pl.range(10):
            if i == 1:
                continue                 # skips i == 1
            if i > 5:
                break                    # stops after i == 5
            t = pl.add(t, 1.0)
            if i == 3:
                t = pl.mul(t, 2.0)
        o = pl.store(t, [0, 0], o)
    return o


@pl.jit
def exits_in_orchestration(a: pl.Tensor[[128, 64], pl.FP32], o: pl.Out[pl.Tensor[[128, 64], pl.FP32]]):
    for i in pl.range(4):
        if i == 2:
            continue
        with pl.at(level=pl.Level.CORE_GROUP):
            o = pl.store(pl.add(pl.load(a, [i * 32, 0], [32, 64]), 1.0), [i * 32, 0], o)
    return o


@pl.jit
def packed_row_vector(src: pl.Tensor[[32, 64], pl.FP32], row: pl.Tensor[[32, 8], pl.FP32],
                      out: pl.InOut[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s: pl.Tile[[32, 64], pl.FP32] = pl.load(src, [0, 0], [32, 64], valid_shape=[20, 47])
        r: pl.Tile[[32, 8], pl.FP32] = pl.load(row, [0, 0], [32, 8], valid_shape=[20, 8])
        res: pl.Tile[[32, 64], pl.FP32] = pl.tile.row_expand_add(s, r)
        out = pl.store(res, [0, 0], out)
    return out


@pl.program
class StoreVersionAfterLoop:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[256, 64], pl.FP32], c: pl.InOut[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
        for i in pl.range(4):
            if i % 2 != 0:
                continue
            t: pl.Tile[[64, 64], pl.FP32] = pl.load(a, [i * 64, 0], [64, 64])
            out: pl.Tensor[[256, 64], pl.FP32] = pl.store(pl.add(t, 1.0), [i * 64, 0], c)
        return out                      # a version of c first bound in the loop

    @pl.function(type=pl.FunctionType.Orchestration)
    def orch(self, a: pl.Tensor[[256, 64], pl.FP32], c: pl.InOut[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
        c = self.kernel(a, c)
        return c


@pl.jit
def workspace_in_scope(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        w = pl.create_tensor([32, 64], dtype=pl.FP32, init_value=2.0)   # the kernel's GM workspace
        w = pl.store(pl.load(x, [0, 0], [16, 64]), [0, 0], w)
        out = pl.store(pl.mul(pl.load(w, [0, 0], [32, 64]), 3.0), [0, 0], out)
    return out


@pl.jit
def rsqrt_tmp_recip_hp(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.add(pl.abs(pl.load(x, [0, 0], [32, 64])), 1.0)
        tmp = pl.tile.create([32, 64], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)
        r = pl.tile.rsqrt(t, tmp=tmp)
        out = pl.store(pl.recip(r, high_precision=True), [0, 0], out)
    return out
