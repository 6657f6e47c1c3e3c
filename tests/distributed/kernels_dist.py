"""Multi-rank test programs (issue 17): kernels and host orchestrators live at module level
because kernels are parsed from source."""
import re

import pypto.language as pl
import pypto.language.distributed as pld
from kernel_templates import HEADER, kernels, render

N = 256
MAXR = 4


# ---------------------------------------------------------------- per-rank kernels from one template
# Each family is an InCore kernel ``NAME_k``, its chip entry ``NAME_rank`` (the same parameters, one
# call) and a host ``NAME_host`` that allocates one window buffer per DistributedTensor parameter and
# launches ``NAME_rank`` on every rank with its rows of the host tensors. Only the kernel body and
# the parameters vary: a family is one call of :func:`_per_rank` (which exports the three names).
_PER_RANK = '''
@pl.jit.incore
def ${name}_k($params):
    $body


@pl.jit
def ${name}_rank($params):
    return ${name}_k($args)


@pl.jit.host
def ${name}_host($host_params):
    $allocs
    for r in pl.range(pld.world_size()):
        $windows
        ${name}_rank($rank_args, device=r)
'''


def _per_rank(name: str, tensors: str, windows: str, body: str, ranks: str = "MAXR", **params):
    """Build family ``name`` (module constants N, MAXR). ``tensors``: the host-side parameters, each
    ``NAME[SHAPE]`` (FP32, input), ``NAME[SHAPE]:INT32`` or ``NAME[SHAPE]:Out``, one rank's shape
    (the host's has ``ranks`` rows of it in front); ``windows``: the DistributedTensor parameters, the
    same way; ``body`` (its ``$params`` filled from ``params``): the kernel's statements."""
    ts, ws = _specs(tensors), _specs(windows)

    def ty(shape, dtype, direction, kind="pl.Tensor"):
        t = f"{kind}[[{shape}], pl.{dtype}]"
        return f"pl.{direction}[{t}]" if direction else t

    mod = kernels(name, _PER_RANK, consts=dict(N=N, MAXR=MAXR),
                  params=", ".join([f"{n}: {ty(*rest)}" for n, *rest in ts]
                                   + [f"{n}: {ty(*rest, kind='pld.DistributedTensor')}" for n, *rest in ws]),
                  args=", ".join(n for n, *_ in ts + ws),
                  host_params=", ".join(f"{n}: {ty(f'{ranks}, {sh}', dt, d)}" for n, sh, dt, d in ts),
                  allocs="\n".join(f"{n}_buf = pld.alloc_window_buffer([{sh}], dtype=pl.{dt})" for n, sh, dt, _ in ws),
                  windows="\n".join(f"{n} = pld.window({n}_buf, [{sh}], dtype=pl.{dt})" for n, sh, dt, _ in ws),
                  rank_args=", ".join([f"{n}[r]" for n, *_ in ts] + [n for n, *_ in ws]),
                  body=render(body, **params))
    for part in ("k", "rank", "host"):
        globals()[f"{name}_{part}"] = getattr(mod, f"{name}_{part}")


def _specs(text: str) -> list:
    """``"x[1, N] y[2, N]:Out c[1, 8]:INT32"`` -> [(name, shape, dtype, direction or "")]."""
    out = []
    for m in re.finditer(r"(\w+)\[([^\]]*)\](?::(\w+))?", text):
        tag = m.group(3) or ""
        out.append((m.group(1), m.group(2), "FP32" if tag in ("", "Out") else tag, "Out" if tag == "Out" else ""))
    return out


# a collective over a window: the rank's rows of x into window ``src``, the collective, ``data`` into y
_COLLECTIVE = """
t = pl.load(x, [0, 0], [$rows, N])
$src = pl.store(t, [0, 0], $src)
data = pld.tensor.$call
back = pl.load(data, [0, 0], [$out, N])
y = pl.store(back, [0, 0], y)
return y
"""
_SIG = "sig[MAXR, 1]:INT32"

_per_rank("allreduce_sum", "x[1, N] y[1, N]:Out", f"data[1, N] {_SIG}", _COLLECTIVE, rows=1, out=1, src="data",
          call="allreduce(data, sig, op=pld.ReduceOp.Sum)")
_per_rank("allreduce_max", "x[1, N] y[1, N]:Out", f"data[1, N] {_SIG}", _COLLECTIVE, rows=1, out=1, src="data",
          call="allreduce(data, sig, op=pld.ReduceOp.Max)")
# allgather / reduce_scatter / broadcast / all_to_all over 2 ranks, rows of N
_per_rank("gather", "x[1, N] y[2, N]:Out", f"local[1, N] data[2, N] {_SIG}", _COLLECTIVE, ranks="2", rows=1, out=2,
          src="local", call="allgather(local, data, sig)")
_per_rank("scatter", "x[2, N] y[2, N]:Out", f"data[2, N] {_SIG}", _COLLECTIVE, ranks="2", rows=2, out=2, src="data",
          call="reduce_scatter(data, sig, op=pld.ReduceOp.Sum)")
_per_rank("bcast", "x[2, N] y[2, N]:Out", f"data[2, N] {_SIG}", _COLLECTIVE, ranks="2", rows=2, out=2, src="data",
          call="broadcast(data, sig, root=1)")
_per_rank("a2a", "x[2, N] y[2, N]:Out", f"inp[2, N] data[2, N] {_SIG}", _COLLECTIVE, ranks="2", rows=2, out=2,
          src="inp", call="all_to_all(inp, data, sig)")

# a wait nobody satisfies: every rank waits for a notify from its peer, and no rank ever notifies
_per_rank("stuck", "y[1, N]:Out", _SIG, ranks="2", body="""
ctx = pld.get_comm_ctx(sig)
me = pld.rank(ctx)
pld.system.wait(sig, offsets=[me, 0], expected=1, cmp=pld.WaitCmp.Ge)
t = pl.tile.full([1, N], dtype=pl.FP32, value=1.0)
y = pl.store(t, [0, 0], y)
return y
""")

# point-to-point: put / notify / defer_wait
_per_rank("ring_put", "x[1, N] y[1, N]:Out", "src[1, N] dst[1, N] sig[1, 1]:INT32", body="""
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
""")
# remote_store into the next rank, barrier, then get from the previous one's src
_per_rank("ring_store", "x[1, N] y[2, N]:Out", f"src[1, N] dst[1, N] got[1, N] {_SIG}", body="""
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
""")

# all_to_all_v (2 ranks, 4 rows each)
_per_rank("a2av", "x[4, N] counts[1, 8]:INT32 y[4, N]:Out", f"inp[4, N] data[4, N] sc[1, 8]:INT32 rc[1, 8]:INT32 {_SIG}",
          ranks="2", body="""
t = pl.load(x, [0, 0], [4, N])
inp = pl.store(t, [0, 0], inp)
c = pl.load(counts, [0, 0], [1, 8])
sc = pl.store(c, [0, 0], sc)
data = pld.tensor.all_to_all_v(inp, data, sig, sc, rc)
back = pl.load(data, [0, 0], [4, N])
y = pl.store(back, [0, 0], y)
return y
""")

# a planted missing wait (racy) and its fix (ordered): the load of dst waits (or not) for the
# previous rank's remote_store
_RING_NOTIFY = """
ctx = pld.get_comm_ctx(dst)
me = pld.rank(ctx)
n = pld.nranks(ctx)
t = pl.load(x, [0, 0], [1, N])
pld.tile.remote_store(t, dst, peer=(me + 1) % n, offsets=[0, 0])
pld.system.notify(sig, peer=(me + 1) % n, offsets=[0, 0], value=1, op=pld.NotifyOp.AtomicAdd)
$wait
back = pl.load(dst, [0, 0], [1, N])$note
y = pl.store(back, [0, 0], y)
return y
"""
_per_rank("racy", "x[1, N] y[1, N]:Out", "dst[1, N] sig[1, 1]:INT32", _RING_NOTIFY, wait="",
          note="   # RACE: no wait for the previous rank's store")
_per_rank("ordered", "x[1, N] y[1, N]:Out", "dst[1, N] sig[1, 1]:INT32", _RING_NOTIFY, note="",
          wait="pld.system.wait(sig, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Ge)")


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


# Windows used by a subset of the ranks: each launch of ``swap`` exchanges its row with its group peer
# and reports its group rank and size; the two programs differ in their host only.
_SUBGROUP = '''
@pl.program
class $name:
    """$doc"""

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
    $host
'''

ProgramSubGroup = kernels("ProgramSubGroup", _SUBGROUP, consts=dict(N=N), doc="""``buf_a`` is used only by ranks
    {0, 1}, ``buf_b`` only by ranks {1, 2} (so each is its own communication group: in ``buf_b``'s, group rank 0 is
    rank 1). The windows are viewed ``[N]`` for kernels declaring ``[1, N]`` (the same memory).""", host="""
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
""").ProgramSubGroup

ProgramSubGroupDyn = kernels(
    "ProgramSubGroupDyn", _SUBGROUP, consts=dict(N=N), header=HEADER + 'SGD = pl.dynamic("SGD")\n',
    doc="""ProgramSubGroup's exchange with dynamic host shapes and a scalar host parameter (no sample arguments, so
    nothing is dry-run at compile time): ``buf`` is used by ranks ``first`` .. ``first + 1`` only, a group of two
    whose group rank 0 is rank ``first``.""", host="""
def host(self, x: pl.Tensor[[SGD, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[SGD, 1, N], pl.FP32]],
         info: pl.Out[pl.Tensor[[SGD, 1, 2], pl.INT32]], first: pl.Scalar[pl.INT32]):
    buf = pld.alloc_window_buffer(N * pl.FP32.get_byte())
    sig = pld.alloc_window_buffer(pl.INT32.get_byte())
    for r in pl.range(first, first + 2):
        self.swap_orch(x[r], y[r], pld.window(buf, [N], dtype=pl.FP32),
                       pld.window(sig, [1, 1], dtype=pl.INT32), info[r], device=r)
    return y
""").ProgramSubGroupDyn


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
