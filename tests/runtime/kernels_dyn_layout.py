"""Programs for test_dyn_layout.py: reshape and transpose of tensors with run-time dimensions in
orchestration code, with static annotations on the result (the reference's dyn_orch_shape forms)."""
import pypto.language as pl

M = pl.dynamic("M")
N = pl.dynamic("N")


@pl.program
class DynReshape:
    @pl.function(type=pl.FunctionType.InCore)
    def add_kernel(self, a: pl.Tensor[[16, 16], pl.FP32], b: pl.Tensor[[16, 16], pl.FP32],
                   c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        return pl.store(pl.add(pl.load(a, [0, 0], [16, 16]), pl.load(b, [0, 0], [16, 16])), [0, 0], c)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a_flat: pl.Tensor[[M], pl.FP32], b_flat: pl.Tensor[[M], pl.FP32],
             c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        a2d: pl.Tensor[[16, 16], pl.FP32] = pl.reshape(a_flat, [16, 16])
        b2d: pl.Tensor[[16, 16], pl.FP32] = pl.reshape(b_flat, [16, 16])
        return self.add_kernel(a2d, b2d, c)


@pl.program
class DynTranspose:
    @pl.function(type=pl.FunctionType.InCore)
    def add_kernel(self, a: pl.Tensor[[N, M], pl.FP32], b: pl.Tensor[[N, M], pl.FP32],
                   c: pl.Out[pl.Tensor[[N, M], pl.FP32]]) -> pl.Tensor[[N, M], pl.FP32]:
        return pl.store(pl.add(pl.load(a, [0, 0], [32, 16]), pl.load(b, [0, 0], [32, 16])), [0, 0], c)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, N], pl.FP32], b: pl.Tensor[[M, N], pl.FP32],
             c: pl.Out[pl.Tensor[[N, M], pl.FP32]]) -> pl.Tensor[[N, M], pl.FP32]:
        a_t: pl.Tensor[[32, 16], pl.FP32] = pl.transpose(a, axis1=0, axis2=1)
        b_t: pl.Tensor[[32, 16], pl.FP32] = pl.transpose(b, axis1=0, axis2=1)
        return self.add_kernel(a_t, b_t, c)
