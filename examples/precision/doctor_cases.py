"""The five worked cases as inputs for ``pypto doctor`` and ``pypto fuzz`` — nothing but the
kernel, its inputs and the golden, as a user would have them:

    pypto doctor examples/precision/doctor_cases.py --case case1     # settles at step 4
    pypto doctor examples/precision/doctor_cases.py --case case2     # step 2 (exact chain, rounding ties)
    pypto doctor examples/precision/doctor_cases.py --case case3     # step 2 (padding in row_max)
    pypto doctor examples/precision/doctor_cases.py --case case4     # step 2 (split-K last-bit drift)
    pypto doctor examples/precision/doctor_cases.py --case case5     # step 5 (missing WAR edge)
    pypto doctor examples/precision/doctor_cases.py --case case6_sum # step 2 (FP16 softmax sum, its line)
    pypto doctor examples/precision/doctor_cases.py --case case6_dep # step 5 (softmax -> pv edge missing)
    pypto fuzz examples/precision/doctor_cases.py --case case4       # last bits only
    pypto fuzz examples/precision/doctor_cases.py --case war_fuzz    # larger: names the racing pair
"""
import torch

import pypto.language as pl
from pypto.passes.pipeline import Pipeline
from pypto.runtime import RunConfig

import case1_faulty_pass as c1
import case2_a5_cast_chain as c2
import case3_padding_row_max as c3
import case4_split_k as c4
import case5_war as c5
import case6_decode_attention as c6


def case1():
    """A pipeline with a faulty pass; the golden is the math the kernel states."""
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(64, 128, generator=g), torch.randn(64, 128, generator=g)
    pipe = Pipeline.default().insert_after("ConvertTensorToTileOps", c1.SwapSubOperands)
    return {"kernel": c1.scaled_diff, "inputs": {"a": a, "b": b, "out": torch.zeros(64, 128)},
            "expected": {"out": (a - b) * 0.5}, "rtol": 1e-5, "atol": 1e-5, "passes": pipe}


def case2():
    """A5 INT32 -> FP16 compared bit for bit with torch's conversion; the data has rounding ties."""
    g = torch.Generator().manual_seed(0)
    x = torch.randint(-70000, 70000, (16, 128), generator=g, dtype=torch.int32)
    x[0, :4] = torch.tensor([2049, 2051, -2049, 4098], dtype=torch.int32)
    return {"kernel": c2.to_fp16, "inputs": {"x": x, "out": torch.zeros(16, 128, dtype=torch.float16)},
            "expected": {"out": x.to(torch.float16)}, "rtol": 0.0, "atol": 0.0, "platform": "a5sim"}


def case3():
    """Row maxima of all-negative data over a partially valid last block."""
    g = torch.Generator().manual_seed(0)
    x = -torch.rand(c3.ROWS, 128, generator=g) - 0.5
    expected = torch.stack([x[:, :c3.TILE].max(1).values, x[:, c3.TILE:c3.WIDTH].max(1).values], dim=1)
    return {"kernel": c3.block_row_max, "inputs": {"x": x, "out": torch.zeros(c3.ROWS, 2)},
            "expected": {"out": expected}, "rtol": 1e-5, "atol": 1e-5}


def case4():
    """Split-K: the golden is an earlier run of the same kernel (the user saw the bits move)."""
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(c4.M, 256, generator=g), torch.randn(256, c4.N, generator=g)
    golden = torch.zeros(c4.M, c4.N)
    c4.split_k(a, b, golden, config=RunConfig(sim_seed=1))
    return {"kernel": c4.split_k, "inputs": {"a": a, "b": b, "c": torch.zeros(c4.M, c4.N)},
            "expected": {"c": golden}, "rtol": 0.0, "atol": 0.0}


def case5():
    """The reader of buf and its overwriter with no declared edge."""
    g = torch.Generator().manual_seed(0)
    a, buf = torch.randn(64, 64, generator=g), torch.randn(64, 64, generator=g)
    return {"kernel": c5.racy, "inputs": {"a": a, "buf": buf, "out": torch.zeros(64, 64)},
            "expected": {"out": a * a + buf}, "rtol": 1e-6, "atol": 1e-6}


def case6_sum():
    """A decode-layer attention step whose softmax sum accumulates in FP16."""
    x = c6.inputs()
    return {"kernel": c6.attention_fp16_sum, "inputs": x, "expected": {"out": c6.expected(x)},
            "rtol": 1e-3, "atol": 4e-4}


def case6_dep():
    """The same step with the softmax -> pv dependency missing (a manual_dep buffer)."""
    x = c6.inputs()
    return {"kernel": c6.attention_missing_dep, "inputs": x, "expected": {"out": c6.expected(x)},
            "rtol": 1e-3, "atol": 4e-4}


@pl.jit
def war_racy(a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
             buf: pl.InOut[pl.Tensor[[64, 64], pl.FP32]], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """Case 5's race with timings that flip about half the time: the reader reads buf after a and b,
    the writer computes a few ops before it overwrites buf."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="reader"):
        out[:] = pl.add(pl.add(a, b), buf)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="writer"):
        buf[:] = pl.exp(pl.mul(pl.add(pl.mul(pl.mul(a, a), 0.5), 1.0), 0.5))
    return out


def war_fuzz():
    g = torch.Generator().manual_seed(0)
    a, b, buf = (torch.randn(64, 64, generator=g) for _ in range(3))
    return {"kernel": war_racy, "inputs": {"a": a, "b": b, "buf": buf, "out": torch.zeros(64, 64)},
            "expected": {"out": a + b + buf}, "rtol": 1e-6, "atol": 1e-6}
