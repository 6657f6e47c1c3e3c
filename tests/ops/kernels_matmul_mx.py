"""Kernels for tests/ops/test_matmul_mx.py: the MX matmul family (A5) with scales loaded from
packed MX_A_ZZ / MX_B_NN tensors, and an FP4 operand cast to FP8E4M3FN first."""
import pypto.language as pl

M, K, N = 32, 128, 64
G = K // 32


@pl.program
class MxAll:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[M, K], pl.FP8E4M3FN],
               sa: pl.Tensor[[M, G], pl.FP8E8M0, pl.MX_A_ZZ],
               b: pl.Tensor[[K, N], pl.FP8E4M3FN],
               sb: pl.Tensor[[G, N], pl.FP8E8M0, pl.MX_B_NN],
               bias: pl.Tensor[[1, N], pl.FP32],
               out: pl.Out[pl.Tensor[[M, N], pl.FP32]],
               out_acc: pl.Out[pl.Tensor[[M, N], pl.FP32]],
               out_bias: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> tuple[pl.Tensor[[M, N], pl.FP32], pl.Tensor[[M, N], pl.FP32],
                                                              pl.Tensor[[M, N], pl.FP32]]:
        lhs = pl.move(pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        ls = pl.move(pl.load(sa, [0, 0], [M, G], target_memory=pl.Mem.Mat), target_memory=pl.Mem.LeftScale)
        rhs = pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        rs = pl.move(pl.load(sb, [0, 0], [G, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.RightScale)
        bt = pl.move(pl.load(bias, [0, 0], [1, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Bias)
        c = pl.matmul_mx(lhs, ls, rhs, rs)
        out = pl.store(c, [0, 0], out)
        c2 = pl.matmul_mx_acc(c, lhs, ls, rhs, rs)
        out_acc = pl.store(c2, [0, 0], out_acc)
        c3 = pl.matmul_mx_bias(lhs, ls, rhs, rs, bt)
        out_bias = pl.store(c3, [0, 0], out_bias)
        return out, out_acc, out_bias

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, K], pl.FP8E4M3FN],
             sa: pl.Tensor[[M, G], pl.FP8E8M0, pl.MX_A_ZZ],
             b: pl.Tensor[[K, N], pl.FP8E4M3FN],
             sb: pl.Tensor[[G, N], pl.FP8E8M0, pl.MX_B_NN],
             bias: pl.Tensor[[1, N], pl.FP32],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]],
             out_acc: pl.Out[pl.Tensor[[M, N], pl.FP32]],
             out_bias: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> tuple[pl.Tensor[[M, N], pl.FP32], pl.Tensor[[M, N], pl.FP32],
                                                              pl.Tensor[[M, N], pl.FP32]]:
        out, out_acc, out_bias = self.kernel(a, sa, b, sb, bias, out, out_acc, out_bias)
        return out, out_acc, out_bias


@pl.program
class MxFp4:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: pl.Tensor[[M, K], pl.FP4],
               sa: pl.Tensor[[M, G], pl.FP8E8M0, pl.MX_A_ZZ],
               b: pl.Tensor[[K, N], pl.FP8E4M3FN],
               sb: pl.Tensor[[G, N], pl.FP8E8M0, pl.MX_B_NN],
               out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        a8 = pl.cast(pl.load(a, [0, 0], [M, K]), pl.FP8E4M3FN)
        lhs = pl.move(pl.move(a8, target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        ls = pl.move(pl.load(sa, [0, 0], [M, G], target_memory=pl.Mem.Mat), target_memory=pl.Mem.LeftScale)
        rhs = pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        rs = pl.move(pl.load(sb, [0, 0], [G, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.RightScale)
        out = pl.store(pl.matmul_mx(lhs, ls, rhs, rs), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, K], pl.FP4],
             sa: pl.Tensor[[M, G], pl.FP8E8M0, pl.MX_A_ZZ],
             b: pl.Tensor[[K, N], pl.FP8E4M3FN],
             sb: pl.Tensor[[G, N], pl.FP8E8M0, pl.MX_B_NN],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        out = self.kernel(a, sa, b, sb, out)
        return out


@pl.program
class MxScaleCopy:
    """Eight tasks, each loading a 16-row block of a packed A-scale tensor and storing the logical
    scales: lockstep-capable ops only, so the simulator would gang the tasks."""

    @pl.function(type=pl.FunctionType.InCore)
    def copy(self, sa: pl.Tensor[[128, 8], pl.FP8E8M0, pl.MX_A_ZZ],
             out: pl.Out[pl.Tensor[[128, 8], pl.FP8E8M0]]) -> pl.Tensor[[128, 8], pl.FP8E8M0]:
        b = pl.tile.get_block_idx()
        return pl.store(pl.load(sa, [b * 16, 0], [16, 8]), [b * 16, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, sa: pl.Tensor[[128, 8], pl.FP8E8M0, pl.MX_A_ZZ],
             out: pl.Out[pl.Tensor[[128, 8], pl.FP8E8M0]]) -> pl.Tensor[[128, 8], pl.FP8E8M0]:
        out, t = pl.spmd_submit(self.copy, sa, out, core_num=8)
        return out
