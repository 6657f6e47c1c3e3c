"""Quickstart 8: INT32 -> FP16 cast. a5 has no native cast, so LegalizeTileCast emits INT32 -> FP32 -> FP16;
a2a3 casts natively. Both are bit-identical to torch's direct conversion on these values."""
import torch

import pypto.language as pl
from pypto.runtime import RunConfig


@pl.jit
def cast_i32_f16(a: pl.Tensor[[1, 32], pl.INT32], out: pl.Out[pl.Tensor[[1, 32], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(a, pl.FP16)
    return out


def check(kernel, inputs, expected, exact=False):
    """Run on both simulators and under torch_codegen; compare each result with ``expected``."""
    import pypto.debug

    results = {}
    for platform in ("a2a3sim", "a5sim"):
        out = torch.zeros_like(expected)
        kernel(*inputs, out, config=RunConfig(platform=platform))
        results[platform] = out
    src = pypto.debug.torch_codegen(kernel.lower(*inputs, torch.zeros_like(expected)))
    ns = {}
    exec(src, ns)
    out = torch.zeros_like(expected)
    ns[kernel.__name__](*inputs, out)
    results["torch_codegen"] = out
    for where, got in results.items():
        if exact:
            assert torch.equal(got, expected), where
        else:
            torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-4, msg=lambda m: f"{where}: {m}")
        print(f"{kernel.__name__} on {where}: OK")


if __name__ == "__main__":
    vals = [0, 1, 2048, 65504, 65505, 65519, 65520, 70000, 2 ** 20, 2 ** 24, 2 ** 24 + 1, 2 ** 25]
    v = torch.tensor(vals + [-x for x in vals if x] + [0] * 9, dtype=torch.int32).reshape(1, 32)
    out = torch.zeros(1, 32, dtype=torch.float16)
    for platform, n in (("a5sim", 2), ("a2a3sim", 1)):
        text = cast_i32_f16.lower(v, out, config=RunConfig(platform=platform)).as_python()
        assert text.count("tile.cast") == n, text
        print(f"{platform}: {n} tile.cast")
    check(cast_i32_f16, (v,), v.to(torch.float16), exact=True)
