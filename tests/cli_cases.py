"""Source of a case file for the ``pypto doctor`` / ``pypto fuzz`` commands (written to a temporary
``cases.py`` by the tests that drive them): a race-free kernel whose ``case()`` is clean."""

ADD_CASE = '''
import torch
import pypto.language as pl


@pl.jit
def add(a: pl.Tensor[[32, 32], pl.FP32], out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, 1.0)
    return out


def case():
    a = torch.randn(32, 32)
    return {"kernel": add, "inputs": {"a": a, "out": torch.zeros(32, 32)}, "expected": {"out": a + 1.0}}
'''
