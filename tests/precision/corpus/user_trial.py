"""The four bugs of the new user's trial (issue 19), as fresh kernels the doctor never saw."""
import torch

import pypto.language as pl

R, W = 16, 1024


@pl.jit
def softmax_fp16_sum(x: pl.Tensor[[R, W], pl.FP16], out: pl.Out[pl.Tensor[[R, W], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        m = pl.row_max(x)
        e = pl.exp(pl.row_expand_sub(x, m))
        s = pl.row_sum(e)                   # planted: 1024 FP16 values summed one by one in FP16
        out[:] = pl.row_expand_div(e, s)
    return out


RR = 16


@pl.jit
def rmsnorm_fp16(x: pl.Tensor[[RR, W], pl.FP16], out: pl.Out[pl.Tensor[[RR, W], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ss = pl.row_sum(pl.mul(x, x))        # planted: sum of squares, one by one in FP16
        ms = pl.mul(pl.reshape(ss, [1, RR]), 1.0 / W)
        rms = pl.reshape(pl.sqrt(pl.add(ms, 1e-5)), [RR, 1])
        out[:] = pl.row_expand_div(x, rms)
    return out


PW, VALID = 64, 40


@pl.jit
def softmax_partial(x: pl.Tensor[[R, PW], pl.FP32], out: pl.Out[pl.Tensor[[R, PW], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [R, PW], valid_shape=[R, VALID])
        tmp = pl.create_tile([R, PW], dtype=pl.FP32)
        m = pl.row_max(t, tmp)              # harmless: exp of the padding is small next to the max
        e = pl.exp(pl.row_expand_sub(t, m))
        s = pl.row_sum(e, tmp)              # planted: the padding's exp(0 - m) joins the sum
        out = pl.store(pl.row_expand_div(e, s), [0, 0], out)
    return out


N = 256


@pl.jit
def raw_parallel(a: pl.Tensor[[N, 64], pl.FP32], out: pl.Out[pl.Tensor[[N, 64], pl.FP32]]):
    tmp = pl.create_tensor([N, 64], pl.FP32, manual_dep=True)
    for i in pl.parallel(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [i * 64, 0], [64, 64])
            tmp = pl.store(pl.exp(pl.mul(pl.add(t, 1.0), 0.5)), [i * 64, 0], tmp)
    for i in pl.parallel(4):
        with pl.at(level=pl.Level.CORE_GROUP):      # planted: reads tmp with no edge to its writer
            out = pl.store(pl.add(pl.load(tmp, [i * 64, 0], [64, 64]), 1.0), [i * 64, 0], out)
    return out


def _g():
    return torch.Generator().manual_seed(0)


def softmax_fp16_case():
    x = (torch.randn(R, W, generator=_g()) * 2).half()
    return {"kernel": softmax_fp16_sum, "inputs": {"x": x, "out": torch.zeros(R, W, dtype=torch.float16)},
            "expected": {"out": torch.softmax(x.double(), 1).half()}, "rtol": 1e-4, "atol": 0.0}


def rmsnorm_fp16_case():
    x = torch.randn(RR, W, generator=_g()).half()
    xd = x.double()
    ref = xd / torch.sqrt((xd * xd).mean(1, keepdim=True) + 1e-5)
    return {"kernel": rmsnorm_fp16, "inputs": {"x": x, "out": torch.zeros(RR, W, dtype=torch.float16)},
            "expected": {"out": ref.half()}, "rtol": 1e-3, "atol": 1e-3}


def softmax_partial_case():
    x = torch.randn(R, PW, generator=_g())
    ref = torch.zeros(R, PW)
    ref[:, :VALID] = torch.softmax(x[:, :VALID], 1)
    ref[:, VALID:] = float("nan")     # past the valid width: don't care
    return {"kernel": softmax_partial, "inputs": {"x": x, "out": torch.zeros(R, PW)},
            "expected": {"out": ref}, "rtol": 1e-5, "atol": 1e-6}


def raw_parallel_case():
    a = torch.randn(N, 64, generator=_g())
    return {"kernel": raw_parallel, "inputs": {"a": a, "out": torch.zeros(N, 64)},
            "expected": {"out": torch.exp((a + 1.0) * 0.5) + 1.0}, "rtol": 1e-5, "atol": 1e-5}
