"""Host orchestrators for the host-interpreter regression tests (issue 17). They reuse the per-rank
programs of kernels_dist; they live at module level because host bodies are read from source."""
import pypto.language as pl
import pypto.language.distributed as pld

from tests.distributed.kernels_dist import (MAXR, N, allreduce_sum_rank, consume_rank, publish_rank, ring_put_rank,
                                           ring_store_rank, stuck_rank)

HD = pl.dynamic("HD")


@pl.jit.host
def read_after_launch(x: pl.Tensor[[MAXR, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[MAXR, 1, N], pl.FP32]]):
    data_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    sig_buf = pld.alloc_window_buffer([MAXR, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        allreduce_sum_rank(x[r], y[r], pld.window(data_buf, [1, N], dtype=pl.FP32),
                           pld.window(sig_buf, [MAXR, 1], dtype=pl.INT32), device=r)
    # the host reads a launch's output: the queued launches must have run first
    return y[0, 0, 0] + 0.0


@pl.jit.host
def condition_on_output(x: pl.Tensor[[MAXR, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[MAXR, 1, N], pl.FP32]]):
    data_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    sig_buf = pld.alloc_window_buffer([MAXR, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        allreduce_sum_rank(x[r], y[r], pld.window(data_buf, [1, N], dtype=pl.FP32),
                           pld.window(sig_buf, [MAXR, 1], dtype=pl.INT32), device=r)
    if y[1, 0, 0] == 0:
        return 0
    return 1


@pl.jit.host
def bool_values(x: pl.Tensor[[MAXR, 1, N], pl.FP32]):
    # Python's `or` / `and` give the deciding operand, and short-circuit
    a = (x.shape[0] > 100) or x.shape[2] // 2
    b = 0 and undefined_name  # noqa: F821 - never evaluated
    c = x.shape[0] and 5
    return a, b, c


@pl.jit.host
def float_extent(x: pl.Tensor[[MAXR, 1, N], pl.FP32]):
    buf = pld.alloc_window_buffer([N / 3, 1], dtype=pl.FP32)
    return buf


@pl.jit.host
def bad_reduce_op(x: pl.Tensor[[MAXR, 1, N], pl.FP32]):
    data_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    for r in pl.range(pld.world_size()):
        publish_rank(x[r], pld.window(data_buf, [1, N], dtype=pl.FP32), device=r)
    data = pld.tensor.allreduce(pld.window(data_buf, [1, N], dtype=pl.FP32), op=1)
    return data


@pl.jit.host
def uneven_reduce_scatter(x: pl.Tensor[[MAXR, 1, N], pl.FP32]):
    buf = pld.alloc_window_buffer([3, N], dtype=pl.FP32)
    data = pld.tensor.reduce_scatter(pld.window(buf, [3, N], dtype=pl.FP32), op=pld.ReduceOp.Sum)
    return data


@pl.jit.host
def dyn_conflict(x: pl.Tensor[[HD, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[HD, 1, N], pl.FP32]]):
    return x.shape[0]


@pl.jit.host
def dyn_conflict_value(x: pl.Tensor[[HD, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[HD, 1, N], pl.FP32]]):
    return HD + 0


@pl.jit.host
def bad_broadcast_root(x: pl.Tensor[[MAXR, 1, N], pl.FP32]):
    buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    data = pld.tensor.broadcast(pld.window(buf, [1, N], dtype=pl.FP32), root=5)
    return data


# ---------------------------------------------------------------- one program exercising every kind of traffic
# (the engine comparison of test_ray_engine.py): a kernel allreduce, remote_store + barrier + get,
# put + notify + wait, and a host allreduce between two phases
@pl.jit.host
def every_traffic(x: pl.Tensor[[MAXR, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[MAXR, 1, N], pl.FP32]],
                  z: pl.Out[pl.Tensor[[MAXR, 2, N], pl.FP32]], u: pl.Out[pl.Tensor[[MAXR, 1, N], pl.FP32]],
                  v: pl.Out[pl.Tensor[[MAXR, 1, N], pl.FP32]]):
    data_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    sig_buf = pld.alloc_window_buffer([MAXR, 1], dtype=pl.INT32)
    src_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    dst_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    got_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    sig2_buf = pld.alloc_window_buffer([MAXR, 1], dtype=pl.INT32)
    psrc_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    pdst_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    psig_buf = pld.alloc_window_buffer([1, 1], dtype=pl.INT32)
    pub_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    for r in pl.range(pld.world_size()):
        allreduce_sum_rank(x[r], y[r], pld.window(data_buf, [1, N], dtype=pl.FP32),
                           pld.window(sig_buf, [MAXR, 1], dtype=pl.INT32), device=r)
        ring_store_rank(x[r], z[r], pld.window(src_buf, [1, N], dtype=pl.FP32),
                        pld.window(dst_buf, [1, N], dtype=pl.FP32), pld.window(got_buf, [1, N], dtype=pl.FP32),
                        pld.window(sig2_buf, [MAXR, 1], dtype=pl.INT32), device=r)
        ring_put_rank(x[r], u[r], pld.window(psrc_buf, [1, N], dtype=pl.FP32),
                      pld.window(pdst_buf, [1, N], dtype=pl.FP32), pld.window(psig_buf, [1, 1], dtype=pl.INT32),
                      device=r)
        publish_rank(x[r], pld.window(pub_buf, [1, N], dtype=pl.FP32), device=r)
    pub = pld.tensor.allreduce(pld.window(pub_buf, [1, N], dtype=pl.FP32), op=pld.ReduceOp.Sum)
    for r in pl.range(pld.world_size()):
        consume_rank(pub, v[r], device=r)


@pl.jit.host
def stuck_four(y: pl.Out[pl.Tensor[[MAXR, 1, N], pl.FP32]]):
    sig_buf = pld.alloc_window_buffer([MAXR, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        stuck_rank(y[r], pld.window(sig_buf, [MAXR, 1], dtype=pl.INT32), device=r)


# ---------------------------------------------------------------- two rounds over one window, a host barrier each
@pl.jit.incore
def peer_read_k(data: pld.DistributedTensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]]):
    ctx = pld.get_comm_ctx(data)
    peer = (pld.rank(ctx) + 1) % pld.nranks(ctx)
    t = pld.tile.remote_load(data, peer=peer, offsets=[0, 0], shape=[1, N])
    y = pl.store(t, [0, 0], y)
    return y


@pl.jit
def peer_read_rank(data: pld.DistributedTensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]]):
    return peer_read_k(data, y)


@pl.jit.host
def two_rounds(x: pl.Tensor[[2, MAXR, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[2, MAXR, 1, N], pl.FP32]]):
    data_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    sig_buf = pld.alloc_window_buffer([MAXR], dtype=pl.INT32)
    sig = pld.window(sig_buf, [pld.world_size()], dtype=pl.INT32)
    for rd in pl.range(2):
        for r in pl.range(pld.world_size()):
            publish_rank(x[rd, r], pld.window(data_buf, [1, N], dtype=pl.FP32), device=r)
        pld.tensor.barrier(sig)
        for r in pl.range(pld.world_size()):
            peer_read_rank(pld.window(data_buf, [1, N], dtype=pl.FP32), y[rd, r], device=r)


# ---------------------------------------------------------------- an InCore kernel without a return (the reference's form)
@pl.jit.incore
def copy_noreturn_k(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]]):
    t = pl.load(x, [0, 0], [1, N])
    y = pl.store(t, [0, 0], y)


@pl.jit
def copy_noreturn(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]]):
    return copy_noreturn_k(x, y)


# two launches per rank inside one loop over one window, synchronising across ranks in the second:
# they must all run in one phase (a phase per launch would leave the barrier alone)
@pl.jit.incore
def barrier_read_k(data: pld.DistributedTensor[[1, N], pl.FP32], sig: pld.DistributedTensor[[MAXR, 1], pl.INT32],
                   y: pl.Out[pl.Tensor[[1, N], pl.FP32]]):
    sig = pld.tensor.barrier(sig)
    ctx = pld.get_comm_ctx(data)
    peer = (pld.rank(ctx) + 1) % pld.nranks(ctx)
    t = pld.tile.remote_load(data, peer=peer, offsets=[0, 0], shape=[1, N])
    y = pl.store(t, [0, 0], y)
    return y


@pl.jit
def barrier_read_rank(data: pld.DistributedTensor[[1, N], pl.FP32], sig: pld.DistributedTensor[[MAXR, 1], pl.INT32],
                      y: pl.Out[pl.Tensor[[1, N], pl.FP32]]):
    return barrier_read_k(data, sig, y)


@pl.jit.host
def two_per_rank(x: pl.Tensor[[MAXR, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[MAXR, 1, N], pl.FP32]]):
    data_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    sig_buf = pld.alloc_window_buffer([MAXR, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        publish_rank(x[r], pld.window(data_buf, [1, N], dtype=pl.FP32), device=r)
        barrier_read_rank(pld.window(data_buf, [1, N], dtype=pl.FP32), pld.window(sig_buf, [MAXR, 1], dtype=pl.INT32),
                          y[r], device=r)


# ---------------------------------------------------------------- a 2-D tile at a 3-D tensor's three offsets
@pl.jit.incore
def store_rows_k(x: pl.Tensor[[4, N], pl.FP32], y: pl.Out[pl.Tensor[[1, 4, N], pl.FP32]]):
    for j in pl.range(4):
        t = pl.load(x, [j, 0], [1, N])
        y = pl.store(t, [0, j, 0], y)
    return y


@pl.jit
def store_rows(x: pl.Tensor[[4, N], pl.FP32], y: pl.Out[pl.Tensor[[1, 4, N], pl.FP32]]):
    return store_rows_k(x, y)


@pl.jit.host
def host_intermediate(x: pl.Tensor[[MAXR, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[MAXR, 1, N], pl.FP32]]):
    # a host intermediate from pl.create_tensor, written by the launches and returned
    tmp = pl.create_tensor([MAXR, 1, N], dtype=pl.FP32)
    data_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    sig_buf = pld.alloc_window_buffer([MAXR, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        allreduce_sum_rank(x[r], tmp[r], pld.window(data_buf, [1, N], dtype=pl.FP32),
                           pld.window(sig_buf, [MAXR, 1], dtype=pl.INT32), device=r)
    return tmp
