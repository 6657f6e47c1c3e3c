"""Host orchestrators for the host pass pipeline tests (module level: parsed from source)."""
import pypto.language as pl
import pypto.language.distributed as pld

from pypto.language.distributed import window as win
from tests.distributed.kernels_dist import MAXR, N, consume_rank, publish_rank


@pl.jit.host
def subset_allreduce(x: pl.Tensor[[MAXR, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[MAXR, 1, N], pl.FP32]]):
    """Ranks 1 and 2 publish, allreduce (a signal-less host collective) and read back: the window
    is a domain of devices [1, 2], so the collective is two dispatches."""
    data_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    for r in pl.range(1, 3):
        publish_rank(x[r], pld.window(data_buf, [1, N], dtype=pl.FP32), device=r)
    data = pld.window(data_buf, [1, N], dtype=pl.FP32)
    data = pld.tensor.allreduce(data, op=pld.ReduceOp.Sum)
    for r in pl.range(1, 3):
        consume_rank(data, y[r], device=r)


@pl.jit.host
def looped_allreduce(x: pl.Tensor[[MAXR, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[MAXR, 1, N], pl.FP32]]):
    """Two rounds of publish + signal-less allreduce in a host loop (its signal is allocated once,
    before the loop); the second round reduces the first round's sums."""
    data_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    data = pld.window(data_buf, [1, N], dtype=pl.FP32)
    for rnd in pl.range(2):
        for r in pl.range(pld.world_size()):
            if rnd == 0:
                publish_rank(x[r], data, device=r)
        data = pld.tensor.allreduce(data, op=pld.ReduceOp.Sum)
    for r in pl.range(pld.world_size()):
        consume_rank(data, y[r], device=r)


@pl.jit.host
def value_device(x: pl.Tensor[[MAXR, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[MAXR, 1, N], pl.FP32]],
                 where: pl.Tensor[[1], pl.INT32]):
    """The launch's device is a value the host reads from a tensor: unknown before the run."""
    data_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    publish_rank(x[0], pld.window(data_buf, [1, N], dtype=pl.FP32), device=int(where[0]))


@pl.jit.incore
def accumulate_k(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                 acc: pld.DistributedTensor[[1, N], pl.FP32]):
    t = pl.add(pl.load(acc, [0, 0], [1, N]), pl.load(x, [0, 0], [1, N]))
    pl.store(t, [0, 0], acc)
    y = pl.store(t, [0, 0], y)
    return y


@pl.jit
def accumulate_rank(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                    acc: pld.DistributedTensor[[1, N], pl.FP32]):
    return accumulate_k(x, y, acc)


@pl.jit.host
def accumulate(x: pl.Tensor[[2, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[2, 1, N], pl.FP32]], nbytes: int):
    """Each rank adds its row into its window and reads the running sum back: what the window
    holds when the run starts shows whether it persisted."""
    acc_buf = pld.alloc_window_buffer(nbytes)
    for r in pl.range(pld.world_size()):
        accumulate_rank(x[r], y[r], pld.window(acc_buf, [1, N], dtype=pl.FP32), device=r)


@pl.jit.host
def aliased_allreduce(x: pl.Tensor[[MAXR, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[MAXR, 1, N], pl.FP32]]):
    """Data and signal views of one window buffer: refused (they would race in the collective)."""
    buf = pld.alloc_window_buffer(2 * N * 4)
    for r in pl.range(pld.world_size()):
        publish_rank(x[r], pld.window(buf, [1, N], dtype=pl.FP32), device=r)
    data = pld.window(buf, [1, N], dtype=pl.FP32)
    sig = pld.window(buf, [2, 1], dtype=pl.INT32)
    data = pld.tensor.allreduce(data, sig, op=pld.ReduceOp.Sum)


@pl.jit.host
def subset_allreduce_bare_names(x: pl.Tensor[[MAXR, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[MAXR, 1, N], pl.FP32]]):
    """subset_allreduce with the window op imported under another name: the domain of the
    collective's operands is found by what they are, not how they are spelled."""
    data_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    for r in pl.range(2, 4):
        publish_rank(x[r], win(data_buf, [1, N], dtype=pl.FP32), device=r)
    data = win(data_buf, [1, N], dtype=pl.FP32)
    alias = data
    alias = pld.tensor.allreduce(alias, op=pld.ReduceOp.Sum)
    for r in pl.range(2, 4):
        consume_rank(alias, y[r], device=r)
