"""Kernels for tests/ops/test_int_arith.py: wide unsigned wrap-around arithmetic, integer
division (A5) and subs keeping an integer array's dtype."""
import pypto.language as pl


@pl.jit
def u_add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.add(pl.load(a, [0, 0], [8, 64]), pl.load(b, [0, 0], [8, 64])), [0, 0], out)
    return out


@pl.jit
def u_sub(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.sub(pl.load(a, [0, 0], [8, 64]), pl.load(b, [0, 0], [8, 64])), [0, 0], out)
    return out


@pl.jit
def u_mul(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.mul(pl.load(a, [0, 0], [8, 64]), pl.load(b, [0, 0], [8, 64])), [0, 0], out)
    return out


@pl.jit
def u_max(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.maximum(pl.load(a, [0, 0], [8, 64]), pl.load(b, [0, 0], [8, 64])), [0, 0], out)
    return out


@pl.jit
def u_min(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.minimum(a, b)          # tensor level, lowered to tile.minimum
    return out


@pl.jit
def i_div(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.div(pl.load(a, [0, 0], [8, 64]), pl.load(b, [0, 0], [8, 64])), [0, 0], out)
    return out


@pl.jit
def i16_subs_f32(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        r = pl.tensor.subs(a, pl.const(2.75, pl.FP32))
        out = pl.assemble(out, r, [0, 0])
    return out


@pl.jit
def u_adds_refused(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.adds(pl.load(a, [0, 0], [8, 64]), 1), [0, 0], out)
    return out


@pl.jit
def i_div_partial(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [8, 64], valid_shape=[5, 37])
        tb = pl.load(b, [0, 0], [8, 64], valid_shape=[5, 37])
        out = pl.store(pl.tile.div(ta, tb), [0, 0], out)
    return out


# Tile-level scalar ops on an integer tile keep its dtype; the float scalar -2.75 becomes -2.
@pl.jit
def i_adds_f(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.adds(pl.load(a, [0, 0], [8, 64]), -2.75), [0, 0], out)
    return out


@pl.jit
def i_muls_f(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.muls(pl.load(a, [0, 0], [8, 64]), -2.75), [0, 0], out)
    return out


@pl.jit
def i_maxs_f(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.maximums(pl.load(a, [0, 0], [8, 64]), -2.75), [0, 0], out)
    return out


@pl.jit
def i_mins_f(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.minimums(pl.load(a, [0, 0], [8, 64]), -2.75), [0, 0], out)
    return out


@pl.jit
def i_divs_f(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.divs(pl.load(a, [0, 0], [8, 64]), -2.75), [0, 0], out)
    return out


@pl.jit
def i_divs_0(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.tile.divs(pl.load(a, [0, 0], [8, 64]), 0.5), [0, 0], out)
    return out


@pl.jit
def i_muls_tensor(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        r = pl.tensor.muls(a, -2.75)      # tensor level promotes: FP32 result
        out = pl.assemble(out, r, [0, 0])
    return out
