"""Helpers shared by the tests of the catalogue's further op families (issue 15: test_bitwise,
test_argreduce, test_catalog_math, test_index, test_sort_create)."""
from __future__ import annotations

from pypto.frontend.specialize import specialize
from pypto.ir import run_pipeline, structural_equal
from pypto.language import parse


def assert_roundtrips(kernel, args, platform: str = "a2a3sim") -> None:
    """parse(print(p)) is structurally equal to p at every pipeline stage of ``kernel(*args)``."""
    program = specialize(kernel, args, {}).program
    for stage, p in run_pipeline(program, {"platform": platform}).stages:
        text = p.as_python()
        assert structural_equal(p, parse(text)), f"{kernel.__name__} after {stage} does not round-trip:\n{text}"
