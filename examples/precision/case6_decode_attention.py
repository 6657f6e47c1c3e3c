"""Case 6 — a decode-layer attention step (Qwen3-style: 16 query heads of dimension 128 against one
128-token page of a BF16 KV cache) with two planted bugs of the kind a real model program has:

* ``attention_fp16_sum``: the softmax's row sum accumulates in FP16 (the exponentials are cast to
  FP16 before ``row_sum``): 128 terms of up to 1.0 summed in an 11-bit significand lose the small
  terms. ``pypto doctor`` settles at step 2 (accumulation) and names the ``row_sum`` line.
* ``attention_missing_dep``: the probabilities go through a GM buffer created with
  ``manual_dep=True`` and the PV kernel declares no dependency on the softmax kernel: for some
  schedules it multiplies V by the buffer before the softmax kernel wrote it. The doctor settles at
  step 5 (race) and names the two tasks.

Run: python examples/precision/case6_decode_attention.py   (or ``pypto doctor`` on
examples/precision/doctor_cases.py --case case6_sum / case6_dep)
"""
import sys
from pathlib import Path

import torch

import pypto.language as pl

H, D, B = 16, 128, 128          # query heads, head dimension, tokens per KV page
SCALE = 1.0 / 128 ** 0.5        # 1 / sqrt(head_dim)


@pl.jit
def attention_fp16_sum(q: pl.Tensor[[H, D], pl.BF16], k: pl.Tensor[[B, D], pl.BF16],
                       v: pl.Tensor[[B, D], pl.BF16], out: pl.Out[pl.Tensor[[H, D], pl.FP32]]):
    s = pl.create_tensor([H, B], pl.FP32)
    p = pl.create_tensor([H, B], pl.BF16)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="qk"):
        s[:] = pl.matmul(q, k, b_trans=True, out_dtype=pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="softmax"):
        x = pl.mul(s, SCALE)
        e = pl.exp(pl.row_expand_sub(x, pl.row_max(x)))
        total = pl.row_sum(pl.cast(e, pl.FP16))          # planted: the softmax sum accumulates in FP16
        p[:] = pl.cast(pl.row_expand_div(e, pl.cast(total, pl.FP32)), pl.BF16)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="pv"):
        out[:] = pl.matmul(p, v, out_dtype=pl.FP32)
    return out


@pl.jit
def attention_missing_dep(q: pl.Tensor[[H, D], pl.BF16], k: pl.Tensor[[B, D], pl.BF16],
                          v: pl.Tensor[[B, D], pl.BF16], out: pl.Out[pl.Tensor[[H, D], pl.FP32]]):
    s = pl.create_tensor([H, B], pl.FP32)
    p = pl.create_tensor([H, B], pl.BF16, manual_dep=True)  # planted: no RAW edge softmax -> pv
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="qk"):
        s[:] = pl.matmul(q, k, b_trans=True, out_dtype=pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="softmax"):
        x = pl.mul(s, SCALE)
        e = pl.exp(pl.row_expand_sub(x, pl.row_max(x)))
        p[:] = pl.cast(pl.row_expand_div(e, pl.row_sum(e)), pl.BF16)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="pv"):
        out[:] = pl.matmul(p, v, out_dtype=pl.FP32)
    return out


SUM_LINE = 36   # the planted FP16 row_sum of attention_fp16_sum (checked below)


def inputs(seed: int = 0) -> dict:
    """A decode step's query tile and one KV page (BF16, as a model's cache holds them)."""
    g = torch.Generator().manual_seed(seed)
    return {"q": (torch.randn(H, D, generator=g) * 0.5).bfloat16(), "k": (torch.randn(B, D, generator=g) * 0.5).bfloat16(),
            "v": torch.randn(B, D, generator=g).bfloat16(), "out": torch.zeros(H, D)}


def expected(x: dict) -> torch.Tensor:
    """The attention in float64 from the BF16 operands (P rounded to BF16, as the kernel feeds the
    cube)."""
    s = x["q"].double() @ x["k"].double().T * SCALE
    p = torch.softmax(s, dim=-1).bfloat16().double()
    return (p @ x["v"].double()).float()


def main() -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from pypto.debug.doctor import doctor

    x = inputs()
    want = expected(x)
    # between what the kernel's FP32 path reaches against the float64 golden (~2e-4: BF16 rounding of
    # P) and what the FP16 sum costs (~1e-3 on outputs of ~0.07)
    tol = {"rtol": 1e-3, "atol": 4e-4}
    r1 = doctor(attention_fp16_sum, dict(x, out=torch.zeros(H, D)), expected={"out": want}, seeds=4, **tol)
    assert (r1.settled_step, r1.cause) == (2, "accumulation"), r1.format()
    assert f"{Path(__file__).name}:{SUM_LINE}:" in r1.conclusion, r1.conclusion   # the row_sum line
    print(r1.conclusion)
    r2 = doctor(attention_missing_dep, dict(x, out=torch.zeros(H, D)), expected={"out": want}, seeds=8, **tol)
    assert (r2.settled_step, r2.cause) == (5, "race"), r2.format()
    assert "softmax" in r2.conclusion and "pv" in r2.conclusion, r2.conclusion   # the two tasks
    print(r2.conclusion)
    line = "step 2 (FP16 accumulation in the softmax sum) and step 5 (missing softmax -> pv dependency)"
    print(line)
    return line


if __name__ == "__main__":
    main()
