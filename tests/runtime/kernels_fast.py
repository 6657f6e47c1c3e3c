"""Kernels for tests/runtime/test_sim_fastpaths.py (parsed from source, so they live in a module)."""
import pypto.language as pl


@pl.jit
def softmax_rows(a: pl.Tensor[[64, 256], pl.FP32], out: pl.Out[pl.Tensor[[64, 256], pl.FP32]]):
    for i in pl.parallel(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [i * 16, 0], [16, 256])
            tmp = pl.create_tile([16, 256], dtype=pl.FP32, target_memory=pl.Mem.Vec)
            m = pl.row_max(x, tmp)
            e = pl.exp(pl.row_expand_sub(x, m))
            s = pl.row_sum(e, tmp)
            out = pl.store(pl.row_expand_div(e, s), [i * 16, 0], out)
    return out


@pl.jit
def sum_then_read_tmp(a: pl.Tensor[[16, 256], pl.FP32], s_out: pl.Out[pl.Tensor[[16, 1], pl.FP32]],
                      tmp_out: pl.Out[pl.Tensor[[16, 256], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 256])
        tmp = pl.create_tile([16, 256], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        s = pl.row_sum(x, tmp)
        s_out = pl.store(s, [0, 0], s_out)
        tmp_out = pl.store(tmp, [0, 0], tmp_out)
    return s_out, tmp_out


@pl.jit
def max_in_loop_reads_tmp(a: pl.Tensor[[16, 256], pl.FP32], out: pl.Out[pl.Tensor[[16, 256], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 256])
        tmp = pl.create_tile([16, 256], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        acc = pl.create_tile([16, 256], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        acc = pl.mul(x, 0.0)
        for k in pl.range(2):
            acc = pl.add(acc, tmp)          # reads what the previous iteration's row_max left in tmp
            m = pl.row_max(x, tmp)
            acc = pl.row_expand_add(acc, m)
        out = pl.store(acc, [0, 0], out)
    return out


@pl.jit
def writes_its_input(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 64])
        a = pl.store(pl.add(x, x), [0, 0], a)
        out = pl.store(x, [0, 0], out)
    return out


@pl.jit
def add_one(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 64])
        out = pl.store(pl.add(x, 1.0), [0, 0], out)
    return out


@pl.jit
def six_tasks(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    # six tasks in the function's own scope (ring 0), each waiting for the previous (WAW on out)
    for k in pl.unroll(6):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [0, 0], [16, 64])
            out = pl.store(pl.add(x, 1.0), [0, 0], out)
    return out


@pl.jit
def loop_tasks(a: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    for k in pl.range(12):
        with pl.at(level=pl.Level.CORE_GROUP):
            x = pl.load(a, [0, 0], [16, 64])
            out = pl.store(pl.add(x, 1.0), [0, 0], out)
    return out


@pl.jit
def qk_transposed(q: pl.Tensor[[64, 64], pl.BF16], k: pl.Tensor[[256, 64], pl.BF16],
                  s_out: pl.Out[pl.Tensor[[64, 256], pl.FP32]]):
    # q @ k^T per 16 x 64 block: the transposed operand as the reference writes it (a transpose_view
    # of a natural Mat load, moved to Right); several tasks, so the lockstep form runs too
    for i in pl.parallel(4):
        for j in pl.parallel(4):
            with pl.at(level=pl.Level.CORE_GROUP):
                q_mat = pl.load(q, [i * 16, 0], [16, 64], target_memory=pl.MemorySpace.Mat)
                k_mat = pl.load(k, [j * 64, 0], [64, 64], target_memory=pl.MemorySpace.Mat)
                s = pl.matmul(pl.move(q_mat, target_memory=pl.MemorySpace.Left),
                              pl.move(pl.tile.transpose_view(k_mat), target_memory=pl.MemorySpace.Right))
                s_out = pl.store(s, [i * 16, j * 64], s_out)
    return s_out


@pl.jit
def qk_transposed_read_twice(q: pl.Tensor[[16, 64], pl.BF16], k: pl.Tensor[[64, 64], pl.BF16],
                             s_out: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
                             kt_out: pl.Out[pl.Tensor[[64, 64], pl.BF16]]):
    # the transposed view is read by the move and by a store: it keeps its own buffer and copy
    with pl.at(level=pl.Level.CORE_GROUP):
        q_mat = pl.load(q, [0, 0], [16, 64], target_memory=pl.MemorySpace.Mat)
        k_mat = pl.load(k, [0, 0], [64, 64], target_memory=pl.MemorySpace.Mat)
        kt = pl.tile.transpose_view(k_mat)
        s = pl.matmul(pl.move(q_mat, target_memory=pl.MemorySpace.Left),
                      pl.move(kt, target_memory=pl.MemorySpace.Right))
        s_out = pl.store(s, [0, 0], s_out)
        kt_out = pl.store(kt, [0, 0], kt_out)
    return s_out, kt_out


@pl.jit
def qk_right_read_twice(q: pl.Tensor[[32, 64], pl.BF16], k: pl.Tensor[[64, 64], pl.BF16],
                        s_out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    # the moved (Right) operand feeds two matmuls: the move is made (one transposed copy), the view not
    with pl.at(level=pl.Level.CORE_GROUP):
        k_mat = pl.load(k, [0, 0], [64, 64], target_memory=pl.MemorySpace.Mat)
        kt = pl.move(pl.tile.transpose_view(k_mat), target_memory=pl.MemorySpace.Right)
        q0 = pl.load(q, [0, 0], [16, 64], target_memory=pl.MemorySpace.Mat)
        s0 = pl.matmul(pl.move(q0, target_memory=pl.MemorySpace.Left), kt)
        s_out = pl.store(s0, [0, 0], s_out)
        q1 = pl.load(q, [16, 0], [16, 64], target_memory=pl.MemorySpace.Mat)
        s1 = pl.matmul(pl.move(q1, target_memory=pl.MemorySpace.Left), kt)
        s_out = pl.store(s1, [16, 0], s_out)
    return s_out


@pl.jit
def mm_load_between(a: pl.Tensor[[16, 64], pl.BF16], b: pl.Tensor[[64, 32], pl.BF16],
                    out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    # a load between the Left move and the matmul (it may reuse the moved tile's buffer): that move
    # is made; the Right move right before the matmul is left out, and b's load too (the matmul
    # reads b's global-memory view: no yield between that load and the matmul)
    with pl.at(level=pl.Level.CORE_GROUP):
        a_mat = pl.load(a, [0, 0], [16, 64], target_memory=pl.MemorySpace.Mat)
        a_l = pl.move(a_mat, target_memory=pl.MemorySpace.Left)
        b_mat = pl.load(b, [0, 0], [64, 32], target_memory=pl.MemorySpace.Mat)
        b_r = pl.move(b_mat, target_memory=pl.MemorySpace.Right)
        out = pl.store(pl.matmul(a_l, b_r), [0, 0], out)
    return out


@pl.jit
def sum_then_reload_scratch(a: pl.Tensor[[16, 256], pl.FP32], b: pl.Tensor[[16, 256], pl.BF16],
                            out: pl.Out[pl.Tensor[[16, 256], pl.FP32]]):
    # the scratch dies at the reduction; its buffer is reused by the load of b and the cast after it,
    # which overwrite it whole before anything reads it (pypto.codegen.scratch._dead_after)
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(a, [0, 0], [16, 256])
        tmp = pl.create_tile([16, 256], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        s = pl.row_sum(pl.mul(x, x), tmp)
        y = pl.cast(pl.load(b, [0, 0], [16, 256]), target_type=pl.FP32)
        out = pl.store(pl.row_expand_mul(y, s), [0, 0], out)
    return out

