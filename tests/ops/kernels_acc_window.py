"""Kernels for tests/ops/test_acc_window.py: pl.matmul_acc into a pl.tile.slice column window of an
Acc tile (the reference's test_matmul_acc_column_window idiom), against the same product computed
with one accumulator tile per window."""
import pypto.language as pl

M, K, N, NT, KT = 32, 64, 96, 32, 32
TILES = N // NT


@pl.program
class Window:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
               c: pl.Out[pl.Tensor[[M, N], pl.FP32]], w: pl.Out[pl.Tensor[[M, NT], pl.FP32]]
               ) -> tuple[pl.Tensor[[M, N], pl.FP32], pl.Tensor[[M, NT], pl.FP32]]:
        acc = pl.tile.create([M, N], pl.FP32, target_memory=pl.Mem.Acc)
        for t in pl.range(TILES):
            for k0 in pl.range(0, K, KT):
                a_l0 = pl.move(pl.load(a, [0, k0], [M, KT], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
                b_l0 = pl.move(pl.load(b, [k0, t * NT], [KT, NT], target_memory=pl.Mem.Mat),
                               target_memory=pl.Mem.Right)
                win = pl.tile.slice(acc, [M, NT], [0, t * NT])
                win = pl.matmul_acc(win, a_l0, b_l0, init_cond=(k0 == 0))
            w = pl.store(win, [0, 0], w)        # the window after its accumulations (the last: t = TILES - 1)
        c = pl.store(acc, [0, 0], c)
        return c, w

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
             c: pl.Out[pl.Tensor[[M, N], pl.FP32]], w: pl.Out[pl.Tensor[[M, NT], pl.FP32]]
             ) -> tuple[pl.Tensor[[M, N], pl.FP32], pl.Tensor[[M, NT], pl.FP32]]:
        c, w = self.kernel(a, b, c, w)
        return c, w


@pl.program
class PerWindow:
    """The same accumulations, each window its own Acc tile stored at its columns."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
               c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        for t in pl.range(TILES):
            acc = pl.tile.create([M, NT], pl.FP32, target_memory=pl.Mem.Acc)
            for k0 in pl.range(0, K, KT):
                a_l0 = pl.move(pl.load(a, [0, k0], [M, KT], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
                b_l0 = pl.move(pl.load(b, [k0, t * NT], [KT, NT], target_memory=pl.Mem.Mat),
                               target_memory=pl.Mem.Right)
                acc = pl.matmul_acc(acc, a_l0, b_l0, init_cond=(k0 == 0))
            c = pl.store(acc, [0, t * NT], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
             c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        c = self.kernel(a, b, c)
        return c


@pl.program
class WindowOnly:
    """The reference's form: the window is never read again, only the accumulator."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
               c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        acc = pl.tile.create([M, N], pl.FP32, target_memory=pl.Mem.Acc)
        for t in pl.range(TILES):
            for k0 in pl.range(0, K, KT):
                a_l0 = pl.move(pl.load(a, [0, k0], [M, KT], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
                b_l0 = pl.move(pl.load(b, [k0, t * NT], [KT, NT], target_memory=pl.Mem.Mat),
                               target_memory=pl.Mem.Right)
                win = pl.tile.slice(acc, [M, NT], [0, t * NT])
                win = pl.matmul_acc(win, a_l0, b_l0, init_cond=(k0 == 0))
        c = pl.store(acc, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
             c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        c = self.kernel(a, b, c)
        return c


@pl.program
class WindowBeforeLoop:
    """The window sliced before the K loop, accumulated in it (the slice and the matmul_acc in
    different blocks), read after it."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
               c: pl.Out[pl.Tensor[[M, N], pl.FP32]], w: pl.Out[pl.Tensor[[M, NT], pl.FP32]]
               ) -> tuple[pl.Tensor[[M, N], pl.FP32], pl.Tensor[[M, NT], pl.FP32]]:
        acc = pl.tile.create([M, N], pl.FP32, target_memory=pl.Mem.Acc)
        for t in pl.range(TILES):
            win = pl.tile.slice(acc, [M, NT], [0, t * NT])
            for k0 in pl.range(0, K, KT):
                a_l0 = pl.move(pl.load(a, [0, k0], [M, KT], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
                b_l0 = pl.move(pl.load(b, [k0, t * NT], [KT, NT], target_memory=pl.Mem.Mat),
                               target_memory=pl.Mem.Right)
                win = pl.matmul_acc(win, a_l0, b_l0, init_cond=(k0 == 0))
            w = pl.store(win, [0, 0], w)        # the window after its accumulations (the last: t = TILES - 1)
        c = pl.store(acc, [0, 0], c)
        return c, w

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
             c: pl.Out[pl.Tensor[[M, N], pl.FP32]], w: pl.Out[pl.Tensor[[M, NT], pl.FP32]]
             ) -> tuple[pl.Tensor[[M, N], pl.FP32], pl.Tensor[[M, NT], pl.FP32]]:
        c, w = self.kernel(a, b, c, w)
        return c, w


@pl.program
class WindowInBranches:
    """The window sliced before the K loop, written in both branches of an ``if`` in it (the first
    step initialises), never read again."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
               c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        acc = pl.tile.create([M, N], pl.FP32, target_memory=pl.Mem.Acc)
        for t in pl.range(TILES):
            win = pl.tile.slice(acc, [M, NT], [0, t * NT])
            for k0 in pl.range(0, K, KT):
                a_l0 = pl.move(pl.load(a, [0, k0], [M, KT], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
                b_l0 = pl.move(pl.load(b, [k0, t * NT], [KT, NT], target_memory=pl.Mem.Mat),
                               target_memory=pl.Mem.Right)
                if k0 == 0:
                    win = pl.matmul_acc(win, a_l0, b_l0, init_cond=True)
                else:
                    win = pl.matmul_acc(win, a_l0, b_l0)
        c = pl.store(acc, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
             c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        c = self.kernel(a, b, c)
        return c


@pl.program
class WindowMovedInLoop:
    """The window's offset Var re-assigned in the loop that accumulates into it: not a window write
    AccWindows can make (the device keeps writing the columns the slice named); refused."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32], col: pl.Scalar[pl.INDEX],
               c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        acc = pl.tile.create([M, N], pl.FP32, target_memory=pl.Mem.Acc)
        win = pl.tile.slice(acc, [M, NT], [0, col])
        for k0 in pl.range(0, K, KT):
            a_l0 = pl.move(pl.load(a, [0, k0], [M, KT], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            b_l0 = pl.move(pl.load(b, [k0, 0], [KT, NT], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            win = pl.matmul_acc(win, a_l0, b_l0, init_cond=(k0 == 0))
            col = col + NT
        c = pl.store(acc, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
             c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        c = self.kernel(a, b, 0, c)
        return c
