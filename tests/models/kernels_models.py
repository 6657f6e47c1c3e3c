"""Kernels for test_model_features.py: the forms the reference's model programs use (module-level
InCore kernels called from a program, run-time shaped tensors in orchestration, INT64/INDEX
scalars, a run-time valid length with fillpad)."""
import pypto.language as pl


@pl.function(type=pl.FunctionType.InCore)
def k_scale(a: pl.Tensor[[16, 32], pl.FP32], twice: pl.Scalar[pl.BOOL],
            out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
    t = pl.load(a, [0, 0], [16, 32], target_memory=pl.MemorySpace.Vec)
    if twice:
        t2 = pl.add(t, t)
        o = pl.store(t2, [0, 0], out)
    else:
        o = pl.store(t, [0, 0], out)
    return o


@pl.function(type=pl.FunctionType.InCore)
def k_rowmax_prefix(s: pl.Tensor[[16, 32], pl.FP32], n: pl.Scalar[pl.INDEX],
                    out: pl.Out[pl.Tensor[[16, 1], pl.FP32]]) -> pl.Tensor[[16, 1], pl.FP32]:
    t = pl.load(s, [0, 0], [16, 32], valid_shape=[16, n], target_memory=pl.MemorySpace.Vec)
    p = pl.tile.fillpad(t, pad_value=pl.PadValue.min)
    tmp = pl.create_tile([16, 32], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)
    m = pl.row_max(p, tmp)
    o = pl.store(m, [0, 0], out)
    return o


@pl.program
class FlagProgram:
    """cfg[0] (INT64) is passed for a BOOL parameter: nonzero is true."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 32], pl.FP32], cfg: pl.Tensor[[1], pl.INT64],
             out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        f: pl.Scalar[pl.INT64] = pl.tensor.read(cfg, [0])
        out = k_scale(a, f, out)
        return out


@pl.program
class RuntimeShapeProgram:
    """Row blocks of ``a`` by a block height read at run time (cfg[0]); the scratch tensors are
    created with a run-time extent, and cfg[1] (INT64) is the valid length for an INDEX parameter."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 32], pl.FP32], cfg: pl.Tensor[[2], pl.INT64],
             out: pl.Out[pl.Tensor[[64, 1], pl.FP32]]) -> pl.Tensor[[64, 1], pl.FP32]:
        rows = pl.tensor.read(cfg, [0])
        n_valid: pl.Scalar[pl.INT64] = pl.tensor.read(cfg, [1])
        for i in pl.range(64 // 16):
            blk = pl.slice(a, [rows, 32], [i * rows, 0])
            buf = pl.create_tensor([rows, 32], dtype=pl.FP32)
            doubled = k_scale(blk, 0, buf)
            mx = pl.slice(out, [rows, 1], [i * rows, 0])
            mx = k_rowmax_prefix(doubled, n_valid, mx)
        return out
