"""RunConfig(enable_scope_stats=True): dfx_outputs/scope_stats/scope_stats.jsonl holds the run's ring
sizes (line 1) and what every executed scope held (one line each: each loop iteration of the
orchestration is a scope of ring 1; the function's scope, ring 0, comes last)."""
import json

import torch

import pypto.language as pl
from pypto.ir import compile as ir_compile
from pypto.runtime import RunConfig


@pl.program
class RowsInScopes:
    @pl.function(type=pl.FunctionType.InCore)
    def row(self, a: pl.Tensor[[4, 64], pl.FP32], i: pl.Scalar[pl.INDEX],
            c: pl.InOut[pl.Tensor[[4, 64], pl.FP32]]) -> pl.Tensor[[4, 64], pl.FP32]:
        return pl.store(pl.add(pl.load(a, [i, 0], [1, 64]), 1.0), [i, 0], c)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[4, 64], pl.FP32], c: pl.InOut[pl.Tensor[[4, 64], pl.FP32]]) -> pl.Tensor[[4, 64], pl.FP32]:
        for i in pl.range(4):
            c = self.row(a, i, c)
        return c


def test_scope_stats_lists_ring_sizes_and_every_scope(tmp_path):
    a, c = torch.randn(4, 64), torch.zeros(4, 64)
    cfg = RunConfig(platform="a2a3sim", enable_scope_stats=True, ring_task_window=64)
    compiled = ir_compile(RowsInScopes, platform="a2a3sim")
    compiled(a, c, config=cfg)
    assert torch.equal(c, a + 1.0)
    path = compiled.output_dir / "dfx_outputs" / "scope_stats" / "scope_stats.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    meta, scopes = lines[0], lines[1:]
    assert meta["task_window_max"] == [64] * 4 and len(meta["heap_max"]) == len(meta["dep_pool_max"]) == 4
    assert meta["scopes"] == len(scopes) == 5
    loop, top = scopes[:4], scopes[4]
    assert all(s["ring"] == 1 and s["depth"] == 1 and s["tasks"] == 1 for s in loop)   # one kernel task each
    assert top["ring"] == 0 and top["depth"] == 0 and top["tasks"] == 0
    assert [s["scope"] for s in scopes] == list(range(5))


def test_no_scope_stats_file_unless_asked():
    a, c = torch.randn(4, 64), torch.zeros(4, 64)
    compiled = ir_compile(RowsInScopes, platform="a2a3sim")
    compiled(a, c, config=RunConfig(platform="a2a3sim", enable_dep_gen=True))
    out = compiled.output_dir / "dfx_outputs"
    assert (out / "deps.json").is_file() and not (out / "scope_stats").exists()
