"""Planted ordering bugs on a cross-core pipe, found by the race detector with both source lines."""
import torch

import pypto.ir as ir
from pypto.debug.pipe_hazards import pipe_hazards
from pypto.debug.races import detect_races

from tests.mixed import kernels_mixed as K


def _line(marker: str) -> int:
    return next(i for i, t in enumerate(open(K.__file__).read().splitlines(), 1) if marker in t)


def test_read_after_tfree_and_double_free_are_reported_with_both_lines():
    c = ir.compile(K.ReadAfterFree, platform="a2a3sim")
    report = detect_races(c, [torch.randn(K.D, K.D), torch.zeros(K.D, K.D)])
    kinds = [(h.kind, h.tile) for h in report.pipe]
    assert ("read after tfree", "s") in kinds and ("tfree without tpop", "t") in kinds
    h = next(h for h in report.pipe if h.kind == "read after tfree")
    assert h.first.endswith(f"kernels_mixed.py:{_line('RELEASED HERE')}")
    assert h.second.endswith(f"kernels_mixed.py:{_line('READ AFTER RELEASE')}")
    assert "read after tfree" in report.format()
    d = next(h for h in report.pipe if h.kind == "tfree without tpop")
    assert d.second.endswith(f"kernels_mixed.py:{_line('FREED TWICE')}")


def test_correct_mixed_kernels_have_no_pipe_hazards():
    for prog in (K.TwoPipes, K.CubeToVectorSplit):
        assert pipe_hazards(ir.compile(prog, platform="a2a3sim").lowered) == []
    c = ir.compile(K.TwoPipes, platform="a2a3sim")
    report = detect_races(c, [torch.randn(K.D, K.D), torch.randn(K.D, K.D), torch.zeros(K.D, K.D)])
    assert report.pipe == [] and report.races == [] and report.out_of_bounds == []
