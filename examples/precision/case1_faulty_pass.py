"""Case 1 — a multi-stage kernel is wrong; a pass introduced it (seed step 4).

We plant a semantic bug with a custom pipeline: a pass that swaps the operands of ``tile.sub``.
The result disagrees with the golden; ``validate_ir`` at the tolerance settled in step 1 names the
first pass whose IR no longer matches, and the pass dumps on either side show the change.
Run: python examples/precision/case1_faulty_pass.py
"""
import torch

import pypto.language as pl
from pypto.ir.visit import Mutator
from pypto.passes.pipeline import Pipeline
from pypto.runtime import RunConfig

RTOL = ATOL = 1e-5  # FP32 elementwise: step 1's tolerance


@pl.jit
def scaled_diff(a: pl.Tensor[[64, 128], pl.FP32], b: pl.Tensor[[64, 128], pl.FP32],
                out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(pl.sub(a, b), 0.5)
    return out


class _Swap(Mutator):
    def visit_Call(self, c):
        c = self.rebuild(c)
        return c.replace(args=(c.args[1], c.args[0])) if c.op == "tile.sub" else c


def SwapSubOperands(program):
    """The planted fault: a 'rewrite' that gets operand order wrong."""
    return _Swap().program(program)


def main() -> str:
    torch.manual_seed(0)
    a, b = torch.randn(64, 128), torch.randn(64, 128)
    golden = (a - b) * 0.5
    pipe = Pipeline.default().insert_after("ConvertTensorToTileOps", SwapSubOperands)
    cfg = RunConfig(platform="a2a3sim", passes=pipe, dump_passes=True)
    out = torch.zeros(64, 128)
    scaled_diff(a, b, out, config=cfg)
    assert not torch.allclose(out, golden, rtol=RTOL, atol=ATOL), "the planted bug should break the result"

    compiled = scaled_diff.compile(a, b, out, config=cfg)
    report = compiled.validate_ir({"a": a, "b": b, "out": out}, {"out": golden}, rtol=RTOL, atol=ATOL,
                                  raise_on_mismatch=False, verbose=False)
    first = report.first_divergence
    assert first is not None and first.stage == "SwapSubOperands", report.format()
    before = report.stages[report.stages.index(first) - 1]
    assert before.passed and "pl.tile.sub(b_tile, a_tile)" in report.diff
    print(report.format())
    return f"step 4: validate_ir names {first.stage} ({first.file.name}); dumps on either side differ in tile.sub"


if __name__ == "__main__":
    print(main())
