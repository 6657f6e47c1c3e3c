"""Kernels for the task-surface tests: ``pl.at(...) as tid``, ``deps=``, ``no_dep_args=``, ``dumps=``,
``pl.manual_scope()``, ``pl.create_tensor(..., manual_dep=True)``, ``pl.submit`` and the probe pattern.
Module level, real file: kernel source is read with inspect."""
import pypto.language as pl

N = 64


@pl.jit
def accum(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """pl.at writes `out` in every iteration of a sequential loop: R-seq promotes Out -> INOUT (WAW chain)."""
    for i in pl.range(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.mul(a, 2.0)
    return out


@pl.jit
def accum_no_dep(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """The same loop with no_dep_args=[out]: the writers take no edges (an assertion that they may race)."""
    for i in pl.range(4):
        with pl.at(level=pl.Level.CORE_GROUP, no_dep_args=[out]):
            out[:] = pl.mul(a, 2.0)
    return out


@pl.jit
def war_racy(a: pl.Tensor[[64, 64], pl.FP32], buf: pl.InOut[pl.Tensor[[64, 64], pl.FP32]],
             out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """A reader of buf, then a writer overwriting buf, no declared edge: WAR is not tracked."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="reader"):
        out[:] = pl.add(pl.mul(a, a), buf)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="writer"):
        buf[:] = pl.mul(a, a)
    return out


@pl.jit
def war_deps(a: pl.Tensor[[64, 64], pl.FP32], buf: pl.InOut[pl.Tensor[[64, 64], pl.FP32]],
             out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """The fix: the writer waits for the reader's TaskId."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="reader") as reader_tid:
        out[:] = pl.add(pl.mul(a, a), buf)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="writer", deps=[reader_tid, None]):
        buf[:] = pl.mul(a, a)
    return out


@pl.jit.incore
def read_inout(a: pl.Tensor[[64, 64], pl.FP32], buf: pl.InOut[pl.Tensor[[64, 64], pl.FP32]],
               out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """A reader whose buf parameter is promoted to InOut (it only reads buf)."""
    t = pl.add(pl.mul(pl.load(a, [0, 0], [64, 64]), pl.load(a, [0, 0], [64, 64])),
               pl.load(buf, [0, 0], [64, 64]))
    out = pl.store(t, [0, 0], out)
    return buf, out


@pl.jit.incore
def overwrite(a: pl.Tensor[[64, 64], pl.FP32], buf: pl.InOut[pl.Tensor[[64, 64], pl.FP32]]):
    t = pl.load(a, [0, 0], [64, 64])
    buf = pl.store(pl.mul(t, t), [0, 0], buf)
    return buf


@pl.jit
def war_inout(a: pl.Tensor[[64, 64], pl.FP32], buf: pl.InOut[pl.Tensor[[64, 64], pl.FP32]],
              out1: pl.Out[pl.Tensor[[64, 64], pl.FP32]], out2: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """Two readers promoted to InOut, then the writer: right, but the readers are chained."""
    buf, out1 = read_inout(a, buf, out1)
    buf, out2 = read_inout(a, buf, out2)
    buf = overwrite(a, buf)
    return out1, out2, buf


@pl.jit
def manual(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """In a manual scope nothing is inferred: only the declared edge orders the two tasks."""
    tmp = pl.create_tensor([64, 64], pl.FP32)
    with pl.manual_scope():
        with pl.at(level=pl.Level.CORE_GROUP) as t1:
            tmp[:] = pl.add(a, a)
        with pl.at(level=pl.Level.CORE_GROUP, deps=[t1]):
            out[:] = pl.mul(tmp, tmp)
    return out


@pl.jit
def manual_dep_tensor(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """manual_dep=True: the reader of tmp takes no RAW edge, only the declared one."""
    tmp = pl.create_tensor([64, 64], pl.FP32, manual_dep=True)
    with pl.at(level=pl.Level.CORE_GROUP) as w:
        tmp[:] = pl.add(a, a)
    with pl.at(level=pl.Level.CORE_GROUP, deps=[w]):
        out[:] = pl.mul(tmp, tmp)
    return out


@pl.jit
def dumped(a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
           out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """dumps=[b] marks one argument of one task for enable_dump_args=1."""
    tmp = pl.create_tensor([64, 64], pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP):
        tmp[:] = pl.add(a, a)
    with pl.at(level=pl.Level.CORE_GROUP, dumps=[b]):
        out[:] = pl.mul(tmp, b)
    return out


@pl.jit.incore
def fused_probe(x: pl.Tensor, out: pl.Out[pl.Tensor], probe: pl.Out[pl.Tensor]):
    acc = pl.add(pl.load(x, [0, 0], [64, 128]), 1.0)
    probe = pl.store(acc, [0, 0], probe)    # the intermediate, now inspectable
    out = pl.store(pl.exp(acc), [0, 0], out)
    return out, probe


@pl.jit
def probed(x: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]],
           probe: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    out, probe = fused_probe(x, out, probe)
    return out, probe


@pl.jit
def tid_array(a: pl.Tensor[[256, 64], pl.FP32], b: pl.Out[pl.Tensor[[256, 64], pl.FP32]],
              out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """Four writers in a manual scope, their TaskIds collected in an array; the join waits on all."""
    tids = pl.array.create(4, pl.TASK_ID)
    with pl.manual_scope():
        for i in pl.range(4):
            with pl.at(level=pl.Level.CORE_GROUP) as tid:
                b = pl.store(pl.mul(pl.load(a, [i * 64, 0], [64, 64]), 2.0), [i * 64, 0], b)
            tids[i] = tid
        with pl.at(level=pl.Level.CORE_GROUP, deps=[tids]):
            out = pl.store(pl.add(pl.load(b, [0, 0], [64, 64]), pl.load(b, [192, 0], [64, 64])), [0, 0], out)
    return out


@pl.jit
def tid_array_elements(a: pl.Tensor[[256, 64], pl.FP32], b: pl.Out[pl.Tensor[[256, 64], pl.FP32]],
                       out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """pl.array.update_element / get_element / tids[i]: the consumer waits on slot 1 only and reads
    chunk 1, which that slot's writer produced."""
    tids = pl.array.create(4, pl.TASK_ID)
    with pl.manual_scope():
        for i in pl.range(4):
            with pl.at(level=pl.Level.CORE_GROUP) as tid:
                b = pl.store(pl.mul(pl.load(a, [i * 64, 0], [64, 64]), 2.0), [i * 64, 0], b)
            tids = pl.array.update_element(tids, i, tid)
        prev = tids[1]
        same = pl.array.get_element(tids, 1)
        with pl.at(level=pl.Level.CORE_GROUP, deps=[prev, same]):
            out = pl.store(pl.add(pl.load(b, [64, 0], [64, 64]), 1.0), [0, 0], out)
    return out


@pl.jit
def joined(a: pl.Tensor[[64, 64], pl.FP32], b: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
           c: pl.Out[pl.Tensor[[64, 64], pl.FP32]], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """Two producers joined by pl.system.task_dummy; the consumer waits for the join only."""
    with pl.manual_scope():
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="left") as t_left:
            b[:] = pl.add(a, a)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="right") as t_right:
            c[:] = pl.mul(a, a)
        both = pl.system.task_dummy(deps=[t_left, None, t_right])
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="consumer", deps=[both]):
            out[:] = pl.sub(b, c)
    return out
