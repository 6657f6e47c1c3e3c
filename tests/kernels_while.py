"""Kernels for the while-loop tests (tests/test_while.py): plain ``while``, ``pl.while_`` /
``pl.cond``, break / continue in a while, a run-time (data-dependent) exit, a loop that never ends.

Kernel source is read with ``inspect``, so they live at module level in a real file.
"""
import pypto.language as pl


@pl.jit
def while_rows(a: pl.Tensor[[256, 64], pl.FP32], b: pl.Tensor[[256, 64], pl.FP32],
               c: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
    """Four chunks added by a plain while loop over a carried index."""
    with pl.at(level=pl.Level.CORE_GROUP):
        i: pl.Scalar[pl.INDEX] = 0
        while i < 4:
            ta = pl.load(a, [i * 64, 0], [64, 64])
            tb = pl.load(b, [i * 64, 0], [64, 64])
            c = pl.store(pl.add(ta, tb), [i * 64, 0], c)
            i = i + 1
    return c


@pl.jit
def while_iter_acc(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """pl.while_ with two carried values (a counter and a tile accumulator): acc = 3 * a."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        zero = pl.mul(t, 0.0)
        for (k, acc) in pl.while_(init_values=(0, zero)):
            pl.cond(k < 3)
            acc2 = pl.add(acc, t)
            k2 = k + 1
            k_out, acc_out = pl.yield_(k2, acc2)
        out = pl.store(acc_out, [0, 0], out)
    return out


@pl.jit
def while_data_exit(n: pl.Tensor[[1], pl.INT32], a: pl.Tensor[[64, 64], pl.FP32],
                    out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """The trip count is read from a tensor at run time: out = a * 2**n[0] (doubling while k < n)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        limit = pl.tensor.read(n, [0])
        t = pl.load(a, [0, 0], [64, 64])
        k: pl.Scalar[pl.INT32] = 0
        while k < limit:
            t = pl.add(t, t)
            k = k + pl.const(1, pl.INT32)
        out = pl.store(t, [0, 0], out)
    return out


@pl.jit
def while_break_continue(a: pl.Tensor[[256, 64], pl.FP32], c: pl.InOut[pl.Tensor[[256, 64], pl.FP32]]):
    """Chunks 0 and 2 written (1 skipped by continue, the loop left by break at 3)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        i = 0
        while i < 100:
            j = i
            i = i + 1
            if j == 3:
                break
            if j % 2 == 1:
                continue
            c = pl.store(pl.load(a, [j * 64, 0], [64, 64]), [j * 64, 0], c)
    return c


@pl.jit
def while_forever(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """A condition that never becomes false: stopped by RunConfig.max_while_iterations."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        k: pl.Scalar[pl.INDEX] = 0
        while k >= 0:
            k = k + 1
        out = pl.store(t, [0, 0], out)
    return out


@pl.jit
def while_orch(a: pl.Tensor[[64, 64], pl.FP32], out: pl.InOut[pl.Tensor[[64, 64], pl.FP32]]):
    """A while in orchestration code: one task per iteration, out = out + 3 * a."""
    i: pl.Scalar[pl.INDEX] = 0
    while i < 3:
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.add(pl.load(out, [0, 0], [64, 64]), pl.load(a, [0, 0], [64, 64]))
            out = pl.store(t, [0, 0], out)
        i = i + 1
    return out


@pl.jit
def while_per_task(a: pl.Tensor[[256, 64], pl.FP32], out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
    """Four tasks of one kernel, each with its own trip count (chunk i doubled i times, then once
    more by a while copied by pl.unroll): never a lockstep gang, every task right."""
    for i in pl.parallel(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [i * 64, 0], [64, 64])
            k: pl.Scalar[pl.INDEX] = 0
            while k < i:
                t = pl.add(t, t)
                k = k + 1
            for u in pl.unroll(1):
                m: pl.Scalar[pl.INDEX] = 0
                while m < 1:
                    t = pl.add(t, t)
                    m = m + 1
            out = pl.store(t, [i * 64, 0], out)
    return out


@pl.jit
def while_nested(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """Nested while loops with an if in the inner body: t = a * (1 + 1 + 2 + 1 + 2 + 2) = 9a."""
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [64, 64])
        t = pl.mul(x, 0.0)
        i: pl.Scalar[pl.INDEX] = 0
        while i < 3:
            j: pl.Scalar[pl.INDEX] = 0
            while j <= i:
                if j == 0:
                    t = pl.add(t, x)
                else:
                    t = pl.add(t, pl.mul(x, 2.0))
                j = j + 1
            i = i + 1
        out = pl.store(t, [0, 0], out)
    return out


@pl.jit
def while_orch_break(a: pl.Tensor[[64, 64], pl.FP32], out: pl.InOut[pl.Tensor[[64, 64], pl.FP32]]):
    """A while True in orchestration left by break after two tasks: out = out + 2 * a."""
    i: pl.Scalar[pl.INDEX] = 0
    while True:
        if i == 2:
            break
        with pl.at(level=pl.Level.CORE_GROUP):
            out = pl.store(pl.add(pl.load(out, [0, 0], [64, 64]), pl.load(a, [0, 0], [64, 64])), [0, 0], out)
        i = i + 1
    return out
