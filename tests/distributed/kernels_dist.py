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


# ---------------------------------------------------------------- point-to-point: put / notify / defer_wait
@pl.jit.incore
def ring_put_k(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
               src: pld.DistributedTensor[[1, N], pl.FP32], dst: pld.DistributedTensor[[1, N], pl.FP32],
               sig: pld.DistributedTensor[[1, 1], pl.INT32]):
    ctx = pld.get_comm_ctx(src)
    me = pld.rank(ctx)
    n = pld.world_size()
    t = pl.load(x, [0, 0], [1, N])
    src = pl.store(t, [0, 0], src)
    peer = (me + 1) % n
    pld.tensor.put(dst, peer=peer, src=src)
    pld.system.notify(sig, peer=peer, offsets=[0, 0], value=1, op=pld.NotifyOp.AtomicAdd)
    pld.system.defer_wait(sig, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Ge)
    back = pl.load(dst, [0, 0], [1, N])
    y = pl.store(back, [0, 0], y)
    return y


# remote_store into the next rank, barrier, then get from the previous one's src
@pl.jit.incore
def ring_store_k(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[2, N], pl.FP32]],
                 src: pld.DistributedTensor[[1, N], pl.FP32], dst: pld.DistributedTensor[[1, N], pl.FP32],
                 got: pld.DistributedTensor[[1, N], pl.FP32], sig: pld.DistributedTensor[[MAXR, 1], pl.INT32]):
    ctx = pld.get_comm_ctx(src)
    me = pld.rank(ctx)
    n = pld.nranks(ctx)
    t = pl.load(x, [0, 0], [1, N])
    src = pl.store(t, [0, 0], src)
    pld.tile.remote_store(t, dst, peer=(me + 1) % n, offsets=[0, 0])
    sig = pld.tensor.barrier(sig)
    got = pld.tensor.get(got, peer=(me + n - 1) % n, src=src)
    a = pl.load(dst, [0, 0], [1, N])
    b = pl.load(got, [0, 0], [1, N])
    y = pl.store(a, [0, 0], y)
    y = pl.store(b, [1, 0], y)
    return y


@pl.jit
def ring_put_rank(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                  src: pld.DistributedTensor[[1, N], pl.FP32], dst: pld.DistributedTensor[[1, N], pl.FP32],
                  sig: pld.DistributedTensor[[1, 1], pl.INT32]):
    return ring_put_k(x, y, src, dst, sig)


@pl.jit
def ring_store_rank(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[2, N], pl.FP32]],
                    src: pld.DistributedTensor[[1, N], pl.FP32], dst: pld.DistributedTensor[[1, N], pl.FP32],
                    got: pld.DistributedTensor[[1, N], pl.FP32], sig: pld.DistributedTensor[[MAXR, 1], pl.INT32]):
    return ring_store_k(x, y, src, dst, got, sig)


@pl.jit.host
def ring_put_host(x: pl.Tensor[[MAXR, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[MAXR, 1, N], pl.FP32]]):
    src_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    dst_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    sig_buf = pld.alloc_window_buffer([1, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        src = pld.window(src_buf, [1, N], dtype=pl.FP32)
        dst = pld.window(dst_buf, [1, N], dtype=pl.FP32)
        sig = pld.window(sig_buf, [1, 1], dtype=pl.INT32)
        ring_put_rank(x[r], y[r], src, dst, sig, device=r)


@pl.jit.host
def ring_store_host(x: pl.Tensor[[MAXR, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[MAXR, 2, N], pl.FP32]]):
    src_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    dst_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    got_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    sig_buf = pld.alloc_window_buffer([MAXR, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        src = pld.window(src_buf, [1, N], dtype=pl.FP32)
        dst = pld.window(dst_buf, [1, N], dtype=pl.FP32)
        got = pld.window(got_buf, [1, N], dtype=pl.FP32)
        sig = pld.window(sig_buf, [MAXR, 1], dtype=pl.INT32)
        ring_store_rank(x[r], y[r], src, dst, got, sig, device=r)


# ---------------------------------------------------------------- all_to_all_v (2 ranks, 4 rows each)
@pl.jit.incore
def a2av_k(x: pl.Tensor[[4, N], pl.FP32], counts: pl.Tensor[[1, 8], pl.INT32],
           y: pl.Out[pl.Tensor[[4, N], pl.FP32]],
           inp: pld.DistributedTensor[[4, N], pl.FP32], data: pld.DistributedTensor[[4, N], pl.FP32],
           sc: pld.DistributedTensor[[1, 8], pl.INT32], rc: pld.DistributedTensor[[1, 8], pl.INT32],
           sig: pld.DistributedTensor[[MAXR, 1], pl.INT32]):
    t = pl.load(x, [0, 0], [4, N])
    inp = pl.store(t, [0, 0], inp)
    c = pl.load(counts, [0, 0], [1, 8])
    sc = pl.store(c, [0, 0], sc)
    data = pld.tensor.all_to_all_v(inp, data, sig, sc, rc)
    back = pl.load(data, [0, 0], [4, N])
    y = pl.store(back, [0, 0], y)
    return y


@pl.jit
def a2av_rank(x: pl.Tensor[[4, N], pl.FP32], counts: pl.Tensor[[1, 8], pl.INT32],
              y: pl.Out[pl.Tensor[[4, N], pl.FP32]],
              inp: pld.DistributedTensor[[4, N], pl.FP32], data: pld.DistributedTensor[[4, N], pl.FP32],
              sc: pld.DistributedTensor[[1, 8], pl.INT32], rc: pld.DistributedTensor[[1, 8], pl.INT32],
              sig: pld.DistributedTensor[[MAXR, 1], pl.INT32]):
    return a2av_k(x, counts, y, inp, data, sc, rc, sig)


@pl.jit.host
def a2av_host(x: pl.Tensor[[2, 4, N], pl.FP32], counts: pl.Tensor[[2, 1, 8], pl.INT32],
              y: pl.Out[pl.Tensor[[2, 4, N], pl.FP32]]):
    inp_buf = pld.alloc_window_buffer([4, N], dtype=pl.FP32)
    data_buf = pld.alloc_window_buffer([4, N], dtype=pl.FP32)
    sc_buf = pld.alloc_window_buffer([1, 8], dtype=pl.INT32)
    rc_buf = pld.alloc_window_buffer([1, 8], dtype=pl.INT32)
    sig_buf = pld.alloc_window_buffer([MAXR, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        inp = pld.window(inp_buf, [4, N], dtype=pl.FP32)
        data = pld.window(data_buf, [4, N], dtype=pl.FP32)
        sc = pld.window(sc_buf, [1, 8], dtype=pl.INT32)
        rc = pld.window(rc_buf, [1, 8], dtype=pl.INT32)
        sig = pld.window(sig_buf, [MAXR, 1], dtype=pl.INT32)
        a2av_rank(x[r], counts[r], y[r], inp, data, sc, rc, sig, device=r)


# ---------------------------------------------------------------- a planted missing wait (and its fix)
@pl.jit.incore
def racy_k(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
           dst: pld.DistributedTensor[[1, N], pl.FP32], sig: pld.DistributedTensor[[1, 1], pl.INT32]):
    ctx = pld.get_comm_ctx(dst)
    me = pld.rank(ctx)
    n = pld.nranks(ctx)
    t = pl.load(x, [0, 0], [1, N])
    pld.tile.remote_store(t, dst, peer=(me + 1) % n, offsets=[0, 0])
    pld.system.notify(sig, peer=(me + 1) % n, offsets=[0, 0], value=1, op=pld.NotifyOp.AtomicAdd)
    back = pl.load(dst, [0, 0], [1, N])   # RACE: no wait for the previous rank's store
    y = pl.store(back, [0, 0], y)
    return y


@pl.jit.incore
def ordered_k(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
              dst: pld.DistributedTensor[[1, N], pl.FP32], sig: pld.DistributedTensor[[1, 1], pl.INT32]):
    ctx = pld.get_comm_ctx(dst)
    me = pld.rank(ctx)
    n = pld.nranks(ctx)
    t = pl.load(x, [0, 0], [1, N])
    pld.tile.remote_store(t, dst, peer=(me + 1) % n, offsets=[0, 0])
    pld.system.notify(sig, peer=(me + 1) % n, offsets=[0, 0], value=1, op=pld.NotifyOp.AtomicAdd)
    pld.system.wait(sig, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Ge)
    back = pl.load(dst, [0, 0], [1, N])
    y = pl.store(back, [0, 0], y)
    return y


@pl.jit
def racy_rank(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
              dst: pld.DistributedTensor[[1, N], pl.FP32], sig: pld.DistributedTensor[[1, 1], pl.INT32]):
    return racy_k(x, y, dst, sig)


@pl.jit
def ordered_rank(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                 dst: pld.DistributedTensor[[1, N], pl.FP32], sig: pld.DistributedTensor[[1, 1], pl.INT32]):
    return ordered_k(x, y, dst, sig)


@pl.jit.host
def racy_host(x: pl.Tensor[[MAXR, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[MAXR, 1, N], pl.FP32]]):
    dst_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    sig_buf = pld.alloc_window_buffer([1, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        dst = pld.window(dst_buf, [1, N], dtype=pl.FP32)
        sig = pld.window(sig_buf, [1, 1], dtype=pl.INT32)
        racy_rank(x[r], y[r], dst, sig, device=r)


@pl.jit.host
def ordered_host(x: pl.Tensor[[MAXR, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[MAXR, 1, N], pl.FP32]]):
    dst_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    sig_buf = pld.alloc_window_buffer([1, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        dst = pld.window(dst_buf, [1, N], dtype=pl.FP32)
        sig = pld.window(sig_buf, [1, 1], dtype=pl.INT32)
        ordered_rank(x[r], y[r], dst, sig, device=r)


# ---------------------------------------------------------------- the @pl.program form with a HOST method
NRD = pl.dynamic("NRD")


@pl.program
class ProgramHostScale:
    @pl.function(type=pl.FunctionType.InCore)
    def fill(self, x: pl.Tensor[[1, N], pl.FP32],
             data: pl.InOut[pld.DistributedTensor[[1, N], pl.FP32]]) -> pld.DistributedTensor[[1, N], pl.FP32]:
        t = pl.load(x, [0, 0], [1, N])
        return pl.store(t, [0, 0], data)

    @pl.function(type=pl.FunctionType.Orchestration)
    def fill_orch(self, x: pl.Tensor[[1, N], pl.FP32],
                  data: pl.InOut[pld.DistributedTensor[[1, N], pl.FP32]]) -> pld.DistributedTensor[[1, N], pl.FP32]:
        return self.fill(x, data)

    @pl.function(type=pl.FunctionType.InCore)
    def drain(self, data: pld.DistributedTensor[[1, N], pl.FP32],
              y: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        t = pl.load(data, [0, 0], [1, N])
        return pl.store(t, [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def drain_orch(self, data: pld.DistributedTensor[[1, N], pl.FP32],
                   y: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        return self.drain(data, y)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, x: pl.Tensor[[NRD, 1, N], pl.FP32],
             y: pl.Out[pl.Tensor[[NRD, 1, N], pl.FP32]]) -> pl.Tensor[[NRD, 1, N], pl.FP32]:
        buf = pld.alloc_window_buffer(N * pl.FP32.get_byte())
        for r in pl.range(NRD):
            self.fill_orch(x[r], pld.window(buf, [1, N], dtype=pl.FP32), device=r)
        data = pld.window(buf, [1, N], dtype=pl.FP32)
        data = pld.tensor.allreduce(data, op=pld.ReduceOp.Max)
        for r in pl.range(pld.world_size()):
            self.drain_orch(data, y[r], device=r)
        return y


@pl.program
class ProgramNoHost:
    @pl.function(type=pl.FunctionType.InCore)
    def drain(self, data: pl.Tensor[[1, N], pl.FP32],
              y: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        t = pl.load(data, [0, 0], [1, N])
        return pl.store(t, [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def drain_orch(self, data: pl.Tensor[[1, N], pl.FP32],
                   y: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        return self.drain(data, y)


@pl.program
class ProgramSubGroup:
    """Windows used by a subset of the ranks: ``buf_a`` only by ranks {0, 1}, ``buf_b`` only by
    ranks {1, 2} (so each is its own communication group: in ``buf_b``'s, group rank 0 is rank 1).
    Each launch exchanges its row with its group peer and reports its group rank and size. The
    windows are viewed ``[N]`` for kernels declaring ``[1, N]`` (the same memory)."""

    @pl.function(type=pl.FunctionType.InCore)
    def swap(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
             data: pl.InOut[pld.DistributedTensor[[1, N], pl.FP32]],
             sig: pl.InOut[pld.DistributedTensor[[1, 1], pl.INT32]],
             info: pl.Out[pl.Tensor[[1, 2], pl.INT32]]) -> pl.Tensor[[1, N], pl.FP32]:
        pl.store(pl.load(x, [0, 0], [1, N]), [0, 0], data)
        ctx = pld.get_comm_ctx(data)
        me = pld.rank(ctx)
        peer = 1 - me
        pld.system.notify(sig, peer=peer, offsets=[0, 0], value=1, op=pld.NotifyOp.AtomicAdd)
        pld.system.wait(signal=sig, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Ge)
        pl.tensor.write(info, [0, 0], pl.cast(me, pl.INT32))
        pl.tensor.write(info, [0, 1], pl.cast(pld.nranks(ctx), pl.INT32))
        got = pld.tile.remote_load(data, peer=peer, offsets=[0, 0], shape=[1, N])
        return pl.store(got, [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def swap_orch(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                  data: pl.InOut[pld.DistributedTensor[[1, N], pl.FP32]],
                  sig: pl.InOut[pld.DistributedTensor[[1, 1], pl.INT32]],
                  info: pl.Out[pl.Tensor[[1, 2], pl.INT32]]) -> pl.Tensor[[1, N], pl.FP32]:
        return self.swap(x, y, data, sig, info)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, x: pl.Tensor[[3, 1, N], pl.FP32], ya: pl.Out[pl.Tensor[[3, 1, N], pl.FP32]],
             yb: pl.Out[pl.Tensor[[3, 1, N], pl.FP32]], ia: pl.Out[pl.Tensor[[3, 1, 2], pl.INT32]],
             ib: pl.Out[pl.Tensor[[3, 1, 2], pl.INT32]]) -> pl.Tensor[[3, 1, N], pl.FP32]:
        buf_a = pld.alloc_window_buffer(N * pl.FP32.get_byte())
        sig_a = pld.alloc_window_buffer(pl.INT32.get_byte())
        buf_b = pld.alloc_window_buffer(N * pl.FP32.get_byte())
        sig_b = pld.alloc_window_buffer(pl.INT32.get_byte())
        for r in pl.range(2):
            self.swap_orch(x[r], ya[r], pld.window(buf_a, [N], dtype=pl.FP32),
                           pld.window(sig_a, [1, 1], dtype=pl.INT32), ia[r], device=r)
        for r in pl.range(1, 3):
            self.swap_orch(x[r], yb[r], pld.window(buf_b, [N], dtype=pl.FP32),
                           pld.window(sig_b, [1, 1], dtype=pl.INT32), ib[r], device=r)
        return ya


SGD = pl.dynamic("SGD")


@pl.program
class ProgramSubGroupDyn:
    """ProgramSubGroup's exchange with dynamic host shapes and a scalar host parameter (no sample
    arguments, so nothing is dry-run at compile time): ``buf`` is used by ranks ``first`` ..
    ``first + 1`` only, a group of two whose group rank 0 is rank ``first``."""

    @pl.function(type=pl.FunctionType.InCore)
    def swap(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
             data: pl.InOut[pld.DistributedTensor[[1, N], pl.FP32]],
             sig: pl.InOut[pld.DistributedTensor[[1, 1], pl.INT32]],
             info: pl.Out[pl.Tensor[[1, 2], pl.INT32]]) -> pl.Tensor[[1, N], pl.FP32]:
        pl.store(pl.load(x, [0, 0], [1, N]), [0, 0], data)
        ctx = pld.get_comm_ctx(data)
        me = pld.rank(ctx)
        peer = 1 - me
        pld.system.notify(sig, peer=peer, offsets=[0, 0], value=1, op=pld.NotifyOp.AtomicAdd)
        pld.system.wait(signal=sig, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Ge)
        pl.tensor.write(info, [0, 0], pl.cast(me, pl.INT32))
        pl.tensor.write(info, [0, 1], pl.cast(pld.nranks(ctx), pl.INT32))
        got = pld.tile.remote_load(data, peer=peer, offsets=[0, 0], shape=[1, N])
        return pl.store(got, [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def swap_orch(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                  data: pl.InOut[pld.DistributedTensor[[1, N], pl.FP32]],
                  sig: pl.InOut[pld.DistributedTensor[[1, 1], pl.INT32]],
                  info: pl.Out[pl.Tensor[[1, 2], pl.INT32]]) -> pl.Tensor[[1, N], pl.FP32]:
        return self.swap(x, y, data, sig, info)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, x: pl.Tensor[[SGD, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[SGD, 1, N], pl.FP32]],
             info: pl.Out[pl.Tensor[[SGD, 1, 2], pl.INT32]], first: pl.Scalar[pl.INT32]):
        buf = pld.alloc_window_buffer(N * pl.FP32.get_byte())
        sig = pld.alloc_window_buffer(pl.INT32.get_byte())
        for r in pl.range(first, first + 2):
            self.swap_orch(x[r], y[r], pld.window(buf, [N], dtype=pl.FP32),
                           pld.window(sig, [1, 1], dtype=pl.INT32), info[r], device=r)
        return y


@pl.program
class ProgramWithSubWorker:
    """Each rank doubles its row; the ``check`` sub-worker (host Python) then records the sum of
    the output, so a test can tell which function ran."""

    @pl.function(type=pl.FunctionType.InCore)
    def double(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        return pl.store(pl.mul(pl.load(x, [0, 0], [1, N]), 2.0), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def double_orch(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        return self.double(x, y)

    @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
    def check(y: pl.Tensor[[2, 1, N], pl.FP32], seen: pl.Tensor[[1], pl.FP32]):
        seen[0] = -1.0   # the generated sub-worker's mark (an override writes something else)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, x: pl.Tensor[[2, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[2, 1, N], pl.FP32]],
             seen: pl.Tensor[[1], pl.FP32]) -> pl.Tensor[[2, 1, N], pl.FP32]:
        for r in pl.range(2):
            self.double_orch(x[r], y[r], device=r)
        self.check(y, seen)
        return y


@pl.program
class ProgramInlineChips:
    """Two chip programs written inline in the host (``with pl.at(level=pl.Level.CHIP)``): block 0
    adds, block 1 subtracts; the host returns block 0's output."""

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, a: pl.Tensor[[16, 64], pl.FP32], b: pl.Tensor[[16, 64], pl.FP32],
             s: pl.Out[pl.Tensor[[16, 64], pl.FP32]], d: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        with pl.at(level=pl.Level.CHIP, role=pl.Role.Orchestrator):
            with pl.at(level=pl.Level.CORE_GROUP):
                out = pl.add(a, b)
                res = pl.assemble(s, out, [0, 0])
        with pl.at(level=pl.Level.CHIP, role=pl.Role.Orchestrator):
            with pl.at(level=pl.Level.CORE_GROUP):
                out = pl.sub(a, b)
                pl.assemble(d, out, [0, 0])
        return res
