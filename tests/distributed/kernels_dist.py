"""Multi-rank test programs (issue 17): kernels and host orchestrators live at module level
because kernels are parsed from source."""
import pypto.language as pl
import pypto.language.distributed as pld

N = 256
MAXR = 4


# ---------------------------------------------------------------- kernel-level collectives
@pl.jit.incore
def allreduce_sum_k(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                    data: pld.DistributedTensor[[1, N], pl.FP32], sig: pld.DistributedTensor[[MAXR, 1], pl.INT32]):
    t = pl.load(x, [0, 0], [1, N])
    data = pl.store(t, [0, 0], data)
    data = pld.tensor.allreduce(data, sig, op=pld.ReduceOp.Sum)
    back = pl.load(data, [0, 0], [1, N])
    y = pl.store(back, [0, 0], y)
    return y


@pl.jit.incore
def allreduce_max_k(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                    data: pld.DistributedTensor[[1, N], pl.FP32], sig: pld.DistributedTensor[[MAXR, 1], pl.INT32]):
    t = pl.load(x, [0, 0], [1, N])
    data = pl.store(t, [0, 0], data)
    data = pld.tensor.allreduce(data, sig, op=pld.ReduceOp.Max)
    back = pl.load(data, [0, 0], [1, N])
    y = pl.store(back, [0, 0], y)
    return y


@pl.jit
def allreduce_sum_rank(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                       data: pld.DistributedTensor[[1, N], pl.FP32], sig: pld.DistributedTensor[[MAXR, 1], pl.INT32]):
    return allreduce_sum_k(x, y, data, sig)


@pl.jit
def allreduce_max_rank(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                       data: pld.DistributedTensor[[1, N], pl.FP32], sig: pld.DistributedTensor[[MAXR, 1], pl.INT32]):
    return allreduce_max_k(x, y, data, sig)


@pl.jit.host
def allreduce_sum_host(x: pl.Tensor[[MAXR, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[MAXR, 1, N], pl.FP32]]):
    data_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    sig_buf = pld.alloc_window_buffer([MAXR, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        data = pld.window(data_buf, [1, N], dtype=pl.FP32)
        sig = pld.window(sig_buf, [MAXR, 1], dtype=pl.INT32)
        allreduce_sum_rank(x[r], y[r], data, sig, device=r)


@pl.jit.host
def allreduce_max_host(x: pl.Tensor[[MAXR, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[MAXR, 1, N], pl.FP32]]):
    data_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    sig_buf = pld.alloc_window_buffer([MAXR, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        data = pld.window(data_buf, [1, N], dtype=pl.FP32)
        sig = pld.window(sig_buf, [MAXR, 1], dtype=pl.INT32)
        allreduce_max_rank(x[r], y[r], data, sig, device=r)


# allgather / reduce_scatter / broadcast / all_to_all over 2 ranks, rows of N
@pl.jit.incore
def gather_k(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[2, N], pl.FP32]],
             local: pld.DistributedTensor[[1, N], pl.FP32], data: pld.DistributedTensor[[2, N], pl.FP32],
             sig: pld.DistributedTensor[[MAXR, 1], pl.INT32]):
    t = pl.load(x, [0, 0], [1, N])
    local = pl.store(t, [0, 0], local)
    data = pld.tensor.allgather(local, data, sig)
    back = pl.load(data, [0, 0], [2, N])
    y = pl.store(back, [0, 0], y)
    return y


@pl.jit.incore
def scatter_k(x: pl.Tensor[[2, N], pl.FP32], y: pl.Out[pl.Tensor[[2, N], pl.FP32]],
              data: pld.DistributedTensor[[2, N], pl.FP32], sig: pld.DistributedTensor[[MAXR, 1], pl.INT32]):
    t = pl.load(x, [0, 0], [2, N])
    data = pl.store(t, [0, 0], data)
    data = pld.tensor.reduce_scatter(data, sig, op=pld.ReduceOp.Sum)
    back = pl.load(data, [0, 0], [2, N])
    y = pl.store(back, [0, 0], y)
    return y


@pl.jit.incore
def bcast_k(x: pl.Tensor[[2, N], pl.FP32], y: pl.Out[pl.Tensor[[2, N], pl.FP32]],
            data: pld.DistributedTensor[[2, N], pl.FP32], sig: pld.DistributedTensor[[MAXR, 1], pl.INT32]):
    t = pl.load(x, [0, 0], [2, N])
    data = pl.store(t, [0, 0], data)
    data = pld.tensor.broadcast(data, sig, root=1)
    back = pl.load(data, [0, 0], [2, N])
    y = pl.store(back, [0, 0], y)
    return y


@pl.jit.incore
def a2a_k(x: pl.Tensor[[2, N], pl.FP32], y: pl.Out[pl.Tensor[[2, N], pl.FP32]],
          inp: pld.DistributedTensor[[2, N], pl.FP32], data: pld.DistributedTensor[[2, N], pl.FP32],
          sig: pld.DistributedTensor[[MAXR, 1], pl.INT32]):
    t = pl.load(x, [0, 0], [2, N])
    inp = pl.store(t, [0, 0], inp)
    data = pld.tensor.all_to_all(inp, data, sig)
    back = pl.load(data, [0, 0], [2, N])
    y = pl.store(back, [0, 0], y)
    return y


@pl.jit
def gather_rank(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[2, N], pl.FP32]],
                local: pld.DistributedTensor[[1, N], pl.FP32], data: pld.DistributedTensor[[2, N], pl.FP32],
                sig: pld.DistributedTensor[[MAXR, 1], pl.INT32]):
    return gather_k(x, y, local, data, sig)


@pl.jit
def scatter_rank(x: pl.Tensor[[2, N], pl.FP32], y: pl.Out[pl.Tensor[[2, N], pl.FP32]],
                 data: pld.DistributedTensor[[2, N], pl.FP32], sig: pld.DistributedTensor[[MAXR, 1], pl.INT32]):
    return scatter_k(x, y, data, sig)


@pl.jit
def bcast_rank(x: pl.Tensor[[2, N], pl.FP32], y: pl.Out[pl.Tensor[[2, N], pl.FP32]],
               data: pld.DistributedTensor[[2, N], pl.FP32], sig: pld.DistributedTensor[[MAXR, 1], pl.INT32]):
    return bcast_k(x, y, data, sig)


@pl.jit
def a2a_rank(x: pl.Tensor[[2, N], pl.FP32], y: pl.Out[pl.Tensor[[2, N], pl.FP32]],
             inp: pld.DistributedTensor[[2, N], pl.FP32], data: pld.DistributedTensor[[2, N], pl.FP32],
             sig: pld.DistributedTensor[[MAXR, 1], pl.INT32]):
    return a2a_k(x, y, inp, data, sig)


@pl.jit.host
def gather_host(x: pl.Tensor[[2, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[2, 2, N], pl.FP32]]):
    local_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    data_buf = pld.alloc_window_buffer([2, N], dtype=pl.FP32)
    sig_buf = pld.alloc_window_buffer([MAXR, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        local = pld.window(local_buf, [1, N], dtype=pl.FP32)
        data = pld.window(data_buf, [2, N], dtype=pl.FP32)
        sig = pld.window(sig_buf, [MAXR, 1], dtype=pl.INT32)
        gather_rank(x[r], y[r], local, data, sig, device=r)


@pl.jit.host
def scatter_host(x: pl.Tensor[[2, 2, N], pl.FP32], y: pl.Out[pl.Tensor[[2, 2, N], pl.FP32]]):
    data_buf = pld.alloc_window_buffer([2, N], dtype=pl.FP32)
    sig_buf = pld.alloc_window_buffer([MAXR, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        data = pld.window(data_buf, [2, N], dtype=pl.FP32)
        sig = pld.window(sig_buf, [MAXR, 1], dtype=pl.INT32)
        scatter_rank(x[r], y[r], data, sig, device=r)


@pl.jit.host
def bcast_host(x: pl.Tensor[[2, 2, N], pl.FP32], y: pl.Out[pl.Tensor[[2, 2, N], pl.FP32]]):
    data_buf = pld.alloc_window_buffer([2, N], dtype=pl.FP32)
    sig_buf = pld.alloc_window_buffer([MAXR, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        data = pld.window(data_buf, [2, N], dtype=pl.FP32)
        sig = pld.window(sig_buf, [MAXR, 1], dtype=pl.INT32)
        bcast_rank(x[r], y[r], data, sig, device=r)


@pl.jit.host
def a2a_host(x: pl.Tensor[[2, 2, N], pl.FP32], y: pl.Out[pl.Tensor[[2, 2, N], pl.FP32]]):
    inp_buf = pld.alloc_window_buffer([2, N], dtype=pl.FP32)
    data_buf = pld.alloc_window_buffer([2, N], dtype=pl.FP32)
    sig_buf = pld.alloc_window_buffer([MAXR, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        inp = pld.window(inp_buf, [2, N], dtype=pl.FP32)
        data = pld.window(data_buf, [2, N], dtype=pl.FP32)
        sig = pld.window(sig_buf, [MAXR, 1], dtype=pl.INT32)
        a2a_rank(x[r], y[r], inp, data, sig, device=r)


# ---------------------------------------------------------------- a wait nobody satisfies
@pl.jit.incore
def stuck_k(y: pl.Out[pl.Tensor[[1, N], pl.FP32]], sig: pld.DistributedTensor[[MAXR, 1], pl.INT32]):
    ctx = pld.get_comm_ctx(sig)
    me = pld.rank(ctx)
    # every rank waits for a notify from its peer, and no rank ever notifies
    pld.system.wait(sig, offsets=[me, 0], expected=1, cmp=pld.WaitCmp.Ge)
    t = pl.tile.full([1, N], dtype=pl.FP32, value=1.0)
    y = pl.store(t, [0, 0], y)
    return y


@pl.jit
def stuck_rank(y: pl.Out[pl.Tensor[[1, N], pl.FP32]], sig: pld.DistributedTensor[[MAXR, 1], pl.INT32]):
    return stuck_k(y, sig)


@pl.jit.host
def stuck_host(y: pl.Out[pl.Tensor[[2, 1, N], pl.FP32]]):
    sig_buf = pld.alloc_window_buffer([MAXR, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        sig = pld.window(sig_buf, [MAXR, 1], dtype=pl.INT32)
        stuck_rank(y[r], sig, device=r)


# ---------------------------------------------------------------- host-level allreduce between phases
@pl.jit.incore
def publish_k(x: pl.Tensor[[1, N], pl.FP32], data: pld.DistributedTensor[[1, N], pl.FP32]):
    t = pl.load(x, [0, 0], [1, N])
    data = pl.store(t, [0, 0], data)
    return data


@pl.jit.incore
def consume_k(data: pld.DistributedTensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]]):
    t = pl.load(data, [0, 0], [1, N])
    y = pl.store(t, [0, 0], y)
    return y


@pl.jit
def publish_rank(x: pl.Tensor[[1, N], pl.FP32], data: pld.DistributedTensor[[1, N], pl.FP32]):
    return publish_k(x, data)


@pl.jit
def consume_rank(data: pld.DistributedTensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]]):
    return consume_k(data, y)


@pl.jit.host
def host_allreduce(x: pl.Tensor[[MAXR, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[MAXR, 1, N], pl.FP32]]):
    data_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    for r in pl.range(pld.world_size()):
        data = pld.window(data_buf, [1, N], dtype=pl.FP32)
        publish_rank(x[r], data, device=r)
    data = pld.window(data_buf, [1, N], dtype=pl.FP32)
    data = pld.tensor.allreduce(data, op=pld.ReduceOp.Sum)
    for r in pl.range(pld.world_size()):
        consume_rank(data, y[r], device=r)
