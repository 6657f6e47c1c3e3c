"""Kernels for tests/test_array.py: on-core scalar arrays (pl.Array) in a kernel."""
import pypto.language as pl


@pl.jit
def array_row(index_t: pl.Tensor[[1, 8], pl.INT32], src: pl.Tensor[[1, 32], pl.FP32],
              dst: pl.InOut[pl.Tensor[[32, 32], pl.FP32]]):
    """A row index carried through an array (set, copy to another slot, read back): dst[row] = src."""
    with pl.at(level=pl.Level.CORE_GROUP):
        idx = pl.load(index_t, [0, 0], [1, 8])
        s = pl.load(src, [0, 0], [1, 32])
        row: pl.Scalar[pl.INT32] = pl.tile.read(idx, [0, 0])
        arr = pl.array.create(4, pl.INT32)
        arr[0] = row
        arr[1] = arr[0]
        arr = pl.array.update_element(arr, 2, 5)
        stored: pl.Scalar[pl.INT32] = pl.array.get_element(arr, 1)
        r = pl.cast(stored, pl.INDEX)
        dst = pl.store(s, [r, 0], dst)
    return dst


@pl.jit
def array_loop(src: pl.Tensor[[1, 32], pl.FP32], dst: pl.InOut[pl.Tensor[[32, 32], pl.FP32]]):
    """An array written in a loop and read in another: rows 3*k for k < 4 get src."""
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.load(src, [0, 0], [1, 32])
        rows = pl.array.create(4, pl.INT32)
        for k in pl.range(4):
            rows[k] = pl.cast(k * 3, pl.INT32)
        for k in pl.range(4):
            r = pl.cast(rows[k], pl.INDEX)
            dst = pl.store(s, [r, 0], dst)
    return dst


@pl.jit
def array_oob(src: pl.Tensor[[1, 32], pl.FP32], dst: pl.InOut[pl.Tensor[[32, 32], pl.FP32]]):
    """An index past the end at run time: a located error."""
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.load(src, [0, 0], [1, 32])
        arr = pl.array.create(2, pl.INT32)
        for k in pl.range(3):
            arr[k] = pl.cast(k, pl.INT32)
        dst = pl.store(s, [0, 0], dst)
    return dst


@pl.jit
def array_escapes(src: pl.Tensor[[1, 32], pl.FP32], dst: pl.InOut[pl.Tensor[[32, 32], pl.FP32]]):
    """An array made outside the pl.at scope that reads it: refused (it would be a kernel parameter)."""
    arr = pl.array.create(2, pl.INT32)
    with pl.at(level=pl.Level.CORE_GROUP):
        r = pl.cast(arr[0], pl.INDEX)
        dst = pl.store(pl.load(src, [0, 0], [1, 32]), [r, 0], dst)
    return dst


@pl.jit
def array_counts(index_t: pl.Tensor[[1, 8], pl.INT32], src: pl.Tensor[[1, 32], pl.FP32],
                 dst: pl.InOut[pl.Tensor[[32, 32], pl.FP32]]):
    """A histogram in an INT32 array written with INDEX values (``cur + 1``: INT32 plus an int
    literal is INDEX, stored converted): dst[8 * e + counts[e]] = src for each bucket e; and an
    INDEX value past INT32 stored truncated (2**32 + 3 -> 3): dst[28 + 3] = src."""
    with pl.at(level=pl.Level.CORE_GROUP):
        idx = pl.load(index_t, [0, 0], [1, 8])
        s = pl.load(src, [0, 0], [1, 32])
        counts = pl.array.create(4, pl.INT32)
        for k in pl.range(8):
            e: pl.Scalar[pl.INT32] = pl.tile.read(idx, [0, k])
            cur = counts[e]
            counts[e] = cur + 1
        for e in pl.range(4):
            dst = pl.store(s, [8 * e + pl.cast(counts[e], pl.INDEX), 0], dst)
        big: pl.Scalar[pl.INDEX] = 4294967299
        wide = pl.array.create(1, pl.INT32)
        wide[0] = big
        dst = pl.store(s, [28 + pl.cast(wide[0], pl.INDEX), 0], dst)
    return dst
