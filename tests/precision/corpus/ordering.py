"""Corpus kernels with planted ordering bugs: WAR / RAW / WAW races, a scratch tensor reused without
an edge, a tile read before it is written, and split-K drift (expected, not a bug)."""
import torch

import pypto.language as pl

CG = pl.Level.CORE_GROUP


def _g(seed=0):
    return torch.Generator().manual_seed(seed)


@pl.jit
def war_scale(a: pl.Tensor[[32, 128], pl.FP32], buf: pl.InOut[pl.Tensor[[32, 128], pl.FP32]],
              out: pl.Out[pl.Tensor[[32, 128], pl.FP32]]):
    with pl.at(level=CG, name_hint="reader"):
        out[:] = pl.mul(pl.add(pl.exp(a), buf), 0.5)
    with pl.at(level=CG, name_hint="writer"):              # planted: overwrites buf, no edge to the reader
        buf[:] = pl.mul(a, 3.0)
    return out


def war_scale_case():
    a, buf = torch.randn(32, 128, generator=_g(1)), torch.randn(32, 128, generator=_g(2))
    return {"kernel": war_scale, "inputs": {"a": a, "buf": buf, "out": torch.zeros(32, 128)},
            "expected": {"out": (a.exp() + buf) * 0.5}, "rtol": 1e-6, "atol": 1e-6}


@pl.jit
def raw_single(a: pl.Tensor[[64, 32], pl.FP16], out: pl.Out[pl.Tensor[[64, 32], pl.FP16]]):
    tmp = pl.create_tensor([64, 32], pl.FP16, manual_dep=True)
    with pl.at(level=CG, name_hint="producer"):
        tmp[:] = pl.mul(pl.exp(a), 2.0)
    with pl.at(level=CG, name_hint="consumer"):            # planted: manual_dep drops the RAW edge
        out[:] = pl.add(tmp, a)
    return out


def raw_single_case():
    a = torch.randn(64, 32, generator=_g(3)).half()
    ad = a.double()
    return {"kernel": raw_single, "inputs": {"a": a, "out": torch.zeros(64, 32, dtype=torch.float16)},
            "expected": {"out": ((ad.exp().half().double() * 2).half().double() + ad).half()},
            "rtol": 1e-3, "atol": 1e-3}


@pl.jit
def waw_bands(a: pl.Tensor[[96, 64], pl.FP32], out: pl.Out[pl.Tensor[[96, 64], pl.FP32]]):
    with pl.at(level=CG, name_hint="first", no_dep_args=[out]):
        out = pl.store(pl.mul(pl.load(a, [0, 0], [64, 64]), 2.0), [0, 0], out)
    with pl.at(level=CG, name_hint="second", no_dep_args=[out]):   # planted: rows 32..63 written twice
        out = pl.store(pl.add(pl.load(a, [32, 0], [64, 64]), 1.0), [32, 0], out)
    return out


def waw_bands_case():
    a = torch.randn(96, 64, generator=_g(4))
    exp = torch.empty(96, 64)
    exp[:32] = a[:32] * 2.0
    exp[32:] = a[32:] + 1.0
    return {"kernel": waw_bands, "inputs": {"a": a, "out": torch.zeros(96, 64)},
            "expected": {"out": exp}, "rtol": 1e-6, "atol": 1e-6}


@pl.jit
def war_parallel_readers(a: pl.Tensor[[128, 64], pl.FP32], buf: pl.InOut[pl.Tensor[[128, 64], pl.FP32]],
                         out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]):
    for i in pl.parallel(4):
        with pl.at(level=CG, name_hint="band_reader"):
            t = pl.load(buf, [i * 32, 0], [32, 64])
            out = pl.store(pl.add(t, pl.load(a, [i * 32, 0], [32, 64])), [i * 32, 0], out)
    with pl.at(level=CG, name_hint="refresh"):             # planted: overwrites buf while bands may read it
        buf[:] = pl.exp(a)
    return out


def war_parallel_readers_case():
    a, buf = torch.randn(128, 64, generator=_g(5)), torch.randn(128, 64, generator=_g(6))
    return {"kernel": war_parallel_readers, "inputs": {"a": a, "buf": buf, "out": torch.zeros(128, 64)},
            "expected": {"out": buf + a}, "rtol": 1e-6, "atol": 1e-6}


@pl.jit
def scratch_reuse(a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
                  out1: pl.Out[pl.Tensor[[64, 64], pl.FP32]], out2: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    scratch = pl.create_tensor([64, 64], pl.FP32, manual_dep=True)
    with pl.at(level=CG, name_hint="fill_a") as fa:
        scratch[:] = pl.exp(a)
    with pl.at(level=CG, name_hint="use_a", deps=[fa]):
        out1[:] = pl.add(scratch, 1.0)
    with pl.at(level=CG, name_hint="fill_b"):             # planted: reuses scratch while use_a may read it
        scratch[:] = pl.mul(b, b)
    with pl.at(level=CG, name_hint="use_b"):
        out2[:] = pl.add(scratch, 2.0)
    return out1, out2


def scratch_reuse_case():
    a, b = torch.randn(64, 64, generator=_g(7)), torch.randn(64, 64, generator=_g(8))
    return {"kernel": scratch_reuse, "inputs": {"a": a, "b": b, "out1": torch.zeros(64, 64), "out2": torch.zeros(64, 64)},
            "expected": {"out1": a.exp() + 1.0, "out2": b * b + 2.0}, "rtol": 1e-6, "atol": 1e-6}


@pl.jit
def scratch_loop(a: pl.Tensor[[4, 64, 64], pl.FP32], out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
    scratch = pl.create_tensor([64, 64], pl.FP32, manual_dep=True)
    for i in pl.range(4):
        with pl.at(level=CG, name_hint="stage") as st:
            scratch = pl.store(pl.exp(pl.reshape(pl.load(a, [i, 0, 0], [1, 64, 64]), [64, 64])), [0, 0], scratch)
        with pl.at(level=CG, name_hint="drain", deps=[st]):   # planted: the next stage may overwrite early
            out = pl.store(pl.mul(pl.load(scratch, [0, 0], [64, 64]), 2.0), [i * 64, 0], out)
    return out


def scratch_loop_case():
    a = torch.randn(4, 64, 64, generator=_g(9))
    return {"kernel": scratch_loop, "inputs": {"a": a, "out": torch.zeros(256, 64)},
            "expected": {"out": (a.exp() * 2.0).reshape(256, 64)}, "rtol": 1e-6, "atol": 1e-6}


@pl.jit
def uninit_acc(a: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=CG):
        t = pl.load(a, [0, 0], [32, 64])
        acc = pl.create_tile([32, 64], dtype=pl.FP32)    # planted: never initialised
        out = pl.store(pl.add(acc, t), [0, 0], out)
    return out


def uninit_acc_case():
    a = torch.randn(32, 64, generator=_g(10))
    return {"kernel": uninit_acc, "inputs": {"a": a, "out": torch.zeros(32, 64)},
            "expected": {"out": a.clone()}, "rtol": 1e-6, "atol": 1e-6}


KB = 64


@pl.jit
def split_k_wide(a: pl.Tensor[[16, 512], pl.FP32], b: pl.Tensor[[512, 64], pl.FP32], c: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=CG, name_hint="zero") as zero:
        c[:] = pl.full([16, 64], pl.FP32, 0.0)
    for ks in pl.parallel(8):
        with pl.at(level=CG, name_hint="partial", deps=[zero], no_dep_args=[c]):
            ta = pl.load(a, [0, ks * KB], [16, KB], target_memory=pl.Mem.Mat)
            tb = pl.load(b, [ks * KB, 0], [KB, 64], target_memory=pl.Mem.Mat)
            c = pl.store(pl.matmul(ta, tb), [0, 0], c, atomic=pl.AtomicType.Add)
    return c


def split_k_wide_case():
    from pypto.runtime import RunConfig

    a, b = torch.randn(16, 512, generator=_g(11)), torch.randn(512, 64, generator=_g(12))
    golden = torch.zeros(16, 64)
    split_k_wide(a, b, golden, config=RunConfig(sim_seed=3))   # an earlier run: the bits moved since
    return {"kernel": split_k_wide, "inputs": {"a": a, "b": b, "c": torch.zeros(16, 64)},
            "expected": {"c": golden}, "rtol": 0.0, "atol": 0.0}
