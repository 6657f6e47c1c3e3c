"""Corpus kernels with planted numerical bugs: low-precision accumulation, padding in reductions,
rounding modes and cast chains, a tolerance too tight for the data type, a golden computed in the
wrong precision. Shapes, tilings and dtypes vary on purpose; each ``*_case()`` returns what a user
would hand the doctor."""
import torch

import pypto.language as pl


def _g(seed=0):
    return torch.Generator().manual_seed(seed)


# ------------------------------------------------------------------ FP16 / BF16 accumulation

@pl.jit
def mean_bf16(x: pl.Tensor[[8, 2048], pl.BF16], out: pl.Out[pl.Tensor[[8, 1], pl.BF16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(pl.row_sum(x), 1.0 / 2048)      # planted: BF16 running sum


def mean_bf16_case():
    x = (torch.rand(8, 2048, generator=_g()) + 0.5).bfloat16()
    return {"kernel": mean_bf16, "inputs": {"x": x, "out": torch.zeros(8, 1, dtype=torch.bfloat16)},
            "expected": {"out": x.double().mean(1, keepdim=True).bfloat16()}, "rtol": 1e-2, "atol": 1e-2}


@pl.jit
def colsum_fp16(x: pl.Tensor[[1024, 16], pl.FP16], out: pl.Out[pl.Tensor[[1, 16], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_sum(x)                           # planted: 1024 rows summed in FP16


def colsum_fp16_case():
    x = torch.rand(1024, 16, generator=_g(1)).half()
    return {"kernel": colsum_fp16, "inputs": {"x": x, "out": torch.zeros(1, 16, dtype=torch.float16)},
            "expected": {"out": x.double().sum(0, keepdim=True).half()}, "rtol": 1e-3, "atol": 1e-3}


@pl.jit
def l2norm_bf16(x: pl.Tensor[[4, 4096], pl.BF16], out: pl.Out[pl.Tensor[[4, 1], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ss = pl.row_sum(pl.mul(x, x))                   # planted: squares summed in BF16
        out[:] = pl.sqrt(pl.cast(ss, pl.FP32))


def l2norm_bf16_case():
    x = torch.randn(4, 4096, generator=_g(2)).bfloat16()
    return {"kernel": l2norm_bf16, "inputs": {"x": x, "out": torch.zeros(4, 1)},
            "expected": {"out": (x.double() ** 2).sum(1, keepdim=True).sqrt().float()}, "rtol": 1e-4, "atol": 1e-4}


@pl.jit
def normalize_bf16(x: pl.Tensor[[32, 512], pl.BF16], out: pl.Out[pl.Tensor[[32, 512], pl.BF16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.row_sum(x)                                # planted: 512 BF16 values summed in BF16
        out[:] = pl.row_expand_div(x, s)


def normalize_bf16_case():
    x = (torch.rand(32, 512, generator=_g(3)) + 0.1).bfloat16()
    xd = x.double()
    return {"kernel": normalize_bf16, "inputs": {"x": x, "out": torch.zeros(32, 512, dtype=torch.bfloat16)},
            "expected": {"out": (xd / xd.sum(1, keepdim=True)).bfloat16()}, "rtol": 1e-2, "atol": 1e-6}


# ------------------------------------------------------------------ padding in reductions

@pl.jit
def partial_mean(x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 1], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [16, 64], valid_shape=[16, 20])
        tmp = pl.create_tile([16, 64], dtype=pl.FP32)
        s = pl.row_sum(pl.exp(t), tmp)                   # planted: exp(padding) = 1 joins the sum
        out = pl.store(pl.mul(s, 1.0 / 20), [0, 0], out)
    return out


def partial_mean_case():
    x = torch.randn(16, 64, generator=_g(4))
    return {"kernel": partial_mean, "inputs": {"x": x, "out": torch.zeros(16, 1)},
            "expected": {"out": x[:, :20].exp().mean(1, keepdim=True)}, "rtol": 1e-5, "atol": 1e-5}


@pl.jit
def partial_min(x: pl.Tensor[[32, 128], pl.FP32], out: pl.Out[pl.Tensor[[32, 1], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 64], [32, 64], valid_shape=[32, 50])
        tmp = pl.create_tile([32, 64], dtype=pl.FP32)
        out = pl.store(pl.row_min(t, tmp), [0, 0], out)   # planted: padding 0 beats positive data
    return out


def partial_min_case():
    x = torch.rand(32, 128, generator=_g(5)) + 1.0
    return {"kernel": partial_min, "inputs": {"x": x, "out": torch.zeros(32, 1)},
            "expected": {"out": x[:, 64:114].min(1, keepdim=True).values}, "rtol": 1e-6, "atol": 1e-6}


@pl.jit
def partial_colsum(x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[1, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [16, 32], valid_shape=[10, 32])
        tmp = pl.create_tile([16, 32], dtype=pl.FP32)
        out = pl.store(pl.col_sum(pl.add(t, 1.0), tmp), [0, 0], out)   # planted: 6 padded rows add 1 each
    return out


def partial_colsum_case():
    x = torch.randn(16, 32, generator=_g(6))
    return {"kernel": partial_colsum, "inputs": {"x": x, "out": torch.zeros(1, 32)},
            "expected": {"out": (x[:10] + 1.0).sum(0, keepdim=True)}, "rtol": 1e-5, "atol": 1e-5}


@pl.jit
def partial_max_fp16(x: pl.Tensor[[16, 96], pl.FP16], out: pl.Out[pl.Tensor[[16, 1], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 32], [16, 64], valid_shape=[16, 30])
        tmp = pl.create_tile([16, 64], dtype=pl.FP16)
        out = pl.store(pl.row_max(t, tmp), [0, 0], out)   # planted: padding 0 beats negative data
    return out


def partial_max_fp16_case():
    x = (-torch.rand(16, 96, generator=_g(7)) - 0.25).half()
    return {"kernel": partial_max_fp16, "inputs": {"x": x, "out": torch.zeros(16, 1, dtype=torch.float16)},
            "expected": {"out": x[:, 32:62].max(1, keepdim=True).values}, "rtol": 0.0, "atol": 0.0}


# ------------------------------------------------------------------ rounding modes and cast chains

@pl.jit
def to_half_round(x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(x, pl.FP16)                     # planted: default mode rounds ties away from zero


def to_half_round_case():
    g = _g(8)
    base = torch.randn(16, 64, generator=g).half().float()
    # half of the elements sit exactly halfway between two FP16 neighbours
    up = torch.nextafter(base.half(), torch.tensor(float("inf")).half()).float()
    x = torch.where(torch.rand(16, 64, generator=g) < 0.5, (base + up) / 2, base)
    return {"kernel": to_half_round, "inputs": {"x": x, "out": torch.zeros(16, 64, dtype=torch.float16)},
            "expected": {"out": x.half()}, "rtol": 0.0, "atol": 0.0}


@pl.jit
def int_to_bf16(x: pl.Tensor[[16, 128], pl.INT32], out: pl.Out[pl.Tensor[[16, 128], pl.BF16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(x, pl.BF16)                     # planted: on a5, INT32 -> FP32 -> BF16 double-rounds


def int_to_bf16_case():
    g = _g(9)
    # x = 2^30 + m * 2^23 + 2^22 - d: just below a BF16 midpoint (BF16 spacing 2^23 there), close
    # enough (d < 64, FP32 spacing 128) that the FP32 hop rounds it onto the midpoint, which the BF16
    # hop then rounds away from zero: one BF16 ULP above the direct conversion
    m = torch.randint(0, 128, (16, 128), generator=g, dtype=torch.int64)
    d = torch.randint(1, 64, (16, 128), generator=g, dtype=torch.int64)
    x = (1 << 30) + m * (1 << 23) + (1 << 22) - d
    # the correctly rounded conversion, in integers: below the midpoint, so down to m * 2^23 (torch's
    # own int/double -> bfloat16 goes through float32 and double-rounds too, so it cannot be the golden)
    golden = ((x >> 23) << 23).double().to(torch.bfloat16)
    return {"kernel": int_to_bf16, "inputs": {"x": x.to(torch.int32), "out": torch.zeros(16, 128, dtype=torch.bfloat16)},
            "expected": {"out": golden}, "rtol": 0.0, "atol": 0.0, "platform": "a5sim"}


# ------------------------------------------------------------------ tolerance too tight

@pl.jit
def half_axpy(a: pl.Tensor[[64, 128], pl.FP16], b: pl.Tensor[[64, 128], pl.FP16],
              out: pl.Out[pl.Tensor[[64, 128], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(pl.mul(a, 1.5), b)


def half_axpy_case():
    a, b = torch.randn(64, 128, generator=_g(10)).half(), torch.randn(64, 128, generator=_g(11)).half()
    return {"kernel": half_axpy, "inputs": {"a": a, "b": b, "out": torch.zeros(64, 128, dtype=torch.float16)},
            "expected": {"out": (a.double() * 1.5 + b.double()).half()}, "rtol": 1e-5, "atol": 1e-5}


@pl.jit
def bf16_gelu_ish(x: pl.Tensor[[32, 64], pl.BF16], out: pl.Out[pl.Tensor[[32, 64], pl.BF16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(x, pl.recip(pl.add(pl.exp(pl.mul(x, -1.702)), 1.0)))


def bf16_gelu_ish_case():
    x = torch.randn(32, 64, generator=_g(12)).bfloat16()
    xd = x.double()
    return {"kernel": bf16_gelu_ish, "inputs": {"x": x, "out": torch.zeros(32, 64, dtype=torch.bfloat16)},
            "expected": {"out": (xd / (1 + torch.exp(-1.702 * xd))).bfloat16()}, "rtol": 1e-4, "atol": 1e-4}


@pl.jit
def short_sum_fp16(x: pl.Tensor[[32, 64], pl.FP16], out: pl.Out[pl.Tensor[[32, 1], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 64])
        tmp = pl.create_tile([32, 64], dtype=pl.FP16)
        out = pl.store(pl.row_sum(t, tmp), [0, 0], out)   # 64 values, tree order: rounding only
    return out


def short_sum_fp16_case():
    x = (torch.rand(32, 64, generator=_g(13)) + 0.5).half()
    # the golden rounds the sum once; a correct FP16 tree sum is a few ULPs away: 1e-6 cannot hold
    return {"kernel": short_sum_fp16, "inputs": {"x": x, "out": torch.zeros(32, 1, dtype=torch.float16)},
            "expected": {"out": x.double().sum(1, keepdim=True).half()}, "rtol": 1e-6, "atol": 1e-6}


# ------------------------------------------------------------------ golden in the wrong precision

@pl.jit
def fp32_scale_add(a: pl.Tensor[[32, 64], pl.FP32], b: pl.Tensor[[32, 64], pl.FP32],
                   out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(pl.mul(a, 0.3), b)


def golden_fp16_case():
    a, b = torch.randn(32, 64, generator=_g(14)), torch.randn(32, 64, generator=_g(15))
    golden = (a.half() * 0.3 + b.half()).float()      # planted: the golden computed in FP16
    return {"kernel": fp32_scale_add, "inputs": {"a": a, "b": b, "out": torch.zeros(32, 64)},
            "expected": {"out": golden}, "rtol": 1e-5, "atol": 1e-5}


@pl.jit
def fp32_rowsum(x: pl.Tensor[[16, 256], pl.FP32], out: pl.Out[pl.Tensor[[16, 1], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [16, 256])
        tmp = pl.create_tile([16, 256], dtype=pl.FP32)
        out = pl.store(pl.row_sum(t, tmp), [0, 0], out)
    return out


def golden_bf16_case():
    x = torch.randn(16, 256, generator=_g(16))
    golden = x.bfloat16().sum(1, keepdim=True).float()   # planted: the golden summed in BF16
    return {"kernel": fp32_rowsum, "inputs": {"x": x, "out": torch.zeros(16, 1)},
            "expected": {"out": golden}, "rtol": 1e-5, "atol": 1e-5}


@pl.jit
def loop_sum_fp16(x: pl.Tensor[[128, 16, 64], pl.FP16], out: pl.Out[pl.Tensor[[16, 64], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.reshape(pl.load(x, [0, 0, 0], [1, 16, 64]), [16, 64])
        for i in pl.range(1, 128):                       # planted: the running sum is FP16
            acc = pl.add(acc, pl.reshape(pl.load(x, [i, 0, 0], [1, 16, 64]), [16, 64]))
        out = pl.store(acc, [0, 0], out)
    return out


def loop_sum_fp16_case():
    x = (torch.rand(128, 16, 64, generator=_g(17)) + 0.5).half()
    return {"kernel": loop_sum_fp16, "inputs": {"x": x, "out": torch.zeros(16, 64, dtype=torch.float16)},
            "expected": {"out": x.double().sum(0).half()}, "rtol": 1e-3, "atol": 1e-3}
