"""Kernels of tests/ops/test_prefetch.py (``pl.prefetch.*``)."""
import pypto.language as pl

COLS = 128
BIG = 16384          # a 64 KiB prefetch: 200 + 512 cycles of transfer on the simulated GM
R, C = 64, 128       # the tile the timing kernels work on (32 KiB: 129 cycles per vector op)


@pl.program
class CopyAfterPrefetch:
    """The reference's system test: warm L2 with ``a``, wait, copy ``a`` to ``out``."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[1, COLS], pl.FP32],
               out: pl.Out[pl.Tensor[[1, COLS], pl.FP32]]) -> pl.Tensor[[1, COLS], pl.FP32]:
        ctx: pl.PrefetchAsyncContext = pl.prefetch.make_context()
        evt = pl.prefetch.async_prefetch(a, ctx)
        session = pl.prefetch.session(ctx)
        done = pl.prefetch.wait(evt, session)
        t: pl.Tile[[1, COLS], pl.FP32] = pl.load(a, [0, 0], [1, COLS])
        if done:
            t = pl.add(t, 0.0)
        out = pl.store(t, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[1, COLS], pl.FP32],
             out: pl.Out[pl.Tensor[[1, COLS], pl.FP32]]) -> pl.Tensor[[1, COLS], pl.FP32]:
        out = self.kernel(a, out)
        return out


@pl.program
class WaitFirst:
    """Prefetch ``w`` and wait at once, then eight vector ops on ``x``: the transfer is not hidden."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, w: pl.Tensor[[BIG], pl.FP32], x: pl.Tensor[[R, C], pl.FP32],
               out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        ctx = pl.prefetch.make_context()
        evt = pl.prefetch.async_prefetch(w, ctx)
        pl.prefetch.wait(evt, pl.prefetch.session(ctx))
        t = pl.load(x, [0, 0], [R, C])
        for i in pl.unroll(8):
            t = pl.add(t, t)
        out = pl.store(t, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, w: pl.Tensor[[BIG], pl.FP32], x: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        out = self.kernel(w, x, out)
        return out


@pl.program
class WaitLate:
    """The same work with the eight vector ops between the prefetch and its wait: hidden."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, w: pl.Tensor[[BIG], pl.FP32], x: pl.Tensor[[R, C], pl.FP32],
               out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        ctx = pl.prefetch.make_context()
        evt = pl.prefetch.async_prefetch(w, ctx)
        t = pl.load(x, [0, 0], [R, C])
        for i in pl.unroll(8):
            t = pl.add(t, t)
        pl.prefetch.wait(evt, pl.prefetch.session(ctx))
        out = pl.store(t, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, w: pl.Tensor[[BIG], pl.FP32], x: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        out = self.kernel(w, x, out)
        return out


@pl.program
class WrongSession:
    """Waits on an event with the session of another context: a run-time error."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[1, COLS], pl.FP32],
               out: pl.Out[pl.Tensor[[1, COLS], pl.FP32]]) -> pl.Tensor[[1, COLS], pl.FP32]:
        ctx = pl.prefetch.make_context()
        other = pl.prefetch.make_context()
        evt = pl.prefetch.async_prefetch(a, ctx)
        pl.prefetch.wait(evt, pl.prefetch.session(other))
        out = pl.store(pl.load(a, [0, 0], [1, COLS]), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[1, COLS], pl.FP32],
             out: pl.Out[pl.Tensor[[1, COLS], pl.FP32]]) -> pl.Tensor[[1, COLS], pl.FP32]:
        out = self.kernel(a, out)
        return out
