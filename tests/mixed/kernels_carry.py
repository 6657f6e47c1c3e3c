"""A mixed InCore kernel whose loop carries a vector accumulator of matmul results (the shape of the
reference's qwen3 decode scope-3 output projection), written for these tests at a small size."""
import pypto.language as pl

B, H, KC, OC = 16, 256, 64, 32
KB = H // KC


@pl.program
class CarriedVectorAccumulator:
    """out[:, o0:o0+OC] = sum_k a[:, k] @ w[k, o0:o0+OC] + resid, accumulated in a Vec tile."""

    @pl.function(type=pl.FunctionType.InCore)
    def block(self, a: pl.Tensor[[B, H], pl.BF16], w: pl.Tensor[[H, H], pl.BF16], r: pl.Tensor[[B, H], pl.BF16],
              o0: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[B, H], pl.FP32]]) -> pl.Tensor[[B, H], pl.FP32]:
        acc = pl.full([B, OC], dtype=pl.FP32, value=0.0)
        for kb in pl.range(KB):
            k0 = kb * KC
            x = pl.slice(a, [B, KC], [0, k0])
            y = pl.slice(w, [KC, OC], [k0, o0])
            acc = pl.add(acc, pl.matmul(x, y, out_dtype=pl.FP32))
        res = pl.cast(pl.slice(r, [B, OC], [0, o0]), target_type=pl.FP32)
        out = pl.assemble(out, pl.add(acc, res), [0, o0])
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[B, H], pl.BF16], w: pl.Tensor[[H, H], pl.BF16], r: pl.Tensor[[B, H], pl.BF16],
             out: pl.Out[pl.Tensor[[B, H], pl.FP32]]) -> pl.Tensor[[B, H], pl.FP32]:
        for ob in pl.range(H // OC):
            out = self.block(a, w, r, ob * OC, out)
        return out
