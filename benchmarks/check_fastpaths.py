"""Bit-identity check of the reduction / matmul fast paths in pypto/ops/support/core.py against the
straightforward implementations (the column tree with a tmp tile pairs adjacent rows, TCOLSUM: its
reference is written out below; random shapes, FP32/FP16/BF16/INT32(INT8), +-0.0, NaN payloads, inf,
row and col axes, tmp tiles of the input size and larger; the tmp contents after the op too; the
dead-scratch ``clobber=False`` form; ``matmul_into`` accumulating in place).

    python benchmarks/check_fastpaths.py [ITERATIONS]
"""
import sys
import random

import torch
from pypto.ops import support as S
def bits(t):
    t = t.contiguous()
    if t.dtype in (torch.float32, torch.int32): return t.view(torch.int32)
    if t.dtype in (torch.float16, torch.bfloat16): return t.view(torch.int16)
    return t
def ref_pairs(x, kind, work=None):
    # the column tree (TCOLSUM) one element at a time: w[i] = w[2i] op w[2i+1], an odd level's last
    # element folded onto w[0]; in place left to right is safe (w[i] is written after w[2i], w[2i+1]
    # were read). Written out here so the check does not compare _pairs_tree with itself.
    fn = S._REDUCE_FN[kind]
    w = x.clone() if work is None else work.copy_(x)
    n = w.shape[-1]
    while n > 1:
        h = n // 2
        last = w[..., n - 1].clone()
        for i in range(h):
            w[..., i] = fn(w[..., 2 * i], w[..., 2 * i + 1])
        if n % 2:
            w[..., 0] = fn(w[..., 0], last)
        n = h
    return w[..., :1].clone()
def is_last(x, axis):
    return axis == -1 or axis == x.dim() - 1
def ref_reduce(x, tmp, axis, kind):
    if tmp is not None and not is_last(x, axis):
        return ref_pairs(x.movedim(axis, -1), kind).movedim(-1, axis)
    return S._reduce_last_reference(x.movedim(axis, -1), kind, tmp is not None).movedim(-1, axis)
def ref_into(dst, x, tmp, axis, kind):
    work = None
    if tmp is not None:
        work = S.region(tmp, [0]*tmp.dim(), list(x.shape), "t").movedim(axis, -1)
        if not is_last(x, axis):
            dst.copy_(ref_pairs(x.movedim(axis, -1), kind, work).movedim(-1, axis))
            return
    r = S._reduce_last_reference(x.movedim(axis, -1), kind, tmp is not None, work)
    dst.copy_(r.movedim(-1, axis))
random.seed(1); torch.manual_seed(1)
n_cases = 0
for it in range(int(sys.argv[1]) if len(sys.argv) > 1 else 300):
    dt = random.choice([torch.float32, torch.float16, torch.bfloat16, torch.int32])
    M = random.choice([1, 2, 3, 8, 16]); N = random.choice([1, 2, 3, 5, 7, 16, 33, 64, 100, 128])
    if dt == torch.int32:
        x = torch.randint(-5, 5, (M, N), dtype=dt)
    else:
        x = torch.randn(M, N).to(dt)
        mode = random.random()
        if mode < 0.5:
            # sprinkle zeros of both signs, nans (varied payloads), infs
            k = random.randint(0, M * N)
            idx = torch.randint(0, M * N, (k,))
            vals = random.choice([[0.0, -0.0], [0.0, -0.0, float('nan')], [float('inf'), -float('inf'), -0.0], [0.0], [-0.0]])
            xf = x.view(-1)
            for i in idx.tolist():
                xf[i] = random.choice(vals)
            if random.random() < 0.3 and dt == torch.float32:
                xi = x.view(torch.int32).view(-1)
                for i in range(xi.numel()):
                    if x.view(-1)[i] != x.view(-1)[i]:
                        xi[i] = random.choice([0x7fc00001, 0x7fc12345, -0x3ff001, 0x7f800001])
        elif mode < 0.7:
            x = -x.abs()
    for kind in ("sum", "max", "min"):
        for axis in (-1, -2, 1, 0):
            for tmpmode in (None, "same", "big"):
                tmp = None
                if tmpmode == "same": tmp = torch.randn(M, N).to(dt) if dt != torch.int32 else torch.zeros(M, N, dtype=dt)
                if tmpmode == "big": tmp = torch.zeros(M + 3, N + 5, dtype=dt)
                if tmpmode is None and N > 40 and axis in (-1, 1) and random.random() < 0.7: continue
                a = S.reduce(x, tmp, axis, kind); b = ref_reduce(x, tmp, axis, kind)
                assert a.shape == b.shape and torch.equal(bits(a), bits(b)), (dt, M, N, kind, axis, tmpmode, a, b)
                sh = list(x.shape); sh[axis] = 1
                d1 = torch.empty(sh, dtype=dt); d2 = torch.empty(sh, dtype=dt)
                t1 = None if tmp is None else tmp.clone(); t2 = None if tmp is None else tmp.clone()
                S.reduce_into(d1, x, t1, axis, kind); ref_into(d2, x, t2, axis, kind)
                assert torch.equal(bits(d1), bits(d2)), ("into", dt, M, N, kind, axis, tmpmode)
                if tmp is not None:
                    assert torch.equal(bits(t1), bits(t2)), ("tmp", dt, M, N, kind, axis, tmpmode)
                    # the dead-scratch form (pypto/codegen/scratch.py): the same result, tmp untouched
                    d3 = torch.empty(sh, dtype=dt); t3 = tmp.clone()
                    S.reduce_into(d3, x, t3, axis, kind, clobber=False)
                    assert torch.equal(bits(d3), bits(d2)), ("noclobber", dt, M, N, kind, axis, tmpmode)
                n_cases += 1
print("ok", n_cases)

def orig(lhs, rhs, acc=None):
    dt = torch.float32 if lhs.dtype.is_floating_point else torch.int32
    out = torch.matmul(lhs.to(dt, copy=True).contiguous(), rhs.to(dt, copy=True).contiguous())
    return out if acc is None else acc + out
random.seed(0); torch.manual_seed(0)
core = torch.empty(1 << 22, dtype=torch.uint8)
for it in range(400):
    dt = random.choice([torch.float16, torch.bfloat16, torch.float32, torch.int8])
    m, k, n = random.choice([1, 16, 64, 128, 33]), random.choice([16, 256, 100, 512]), random.choice([16, 128, 7])
    def mk(shape):
        off = random.randrange(0, 4096, 2 if dt != torch.float32 else 4) if dt != torch.int8 else random.randrange(0, 4096)
        el = torch.empty(0, dtype=dt).element_size()
        v = core[off:off + shape[0] * shape[1] * el].view(dt).view(shape)
        if dt == torch.int8: v.copy_(torch.randint(-128, 127, shape, dtype=torch.int8))
        else: v.copy_(torch.randn(shape) * 3)
        return v
    a = mk((m, k)).clone() if random.random() < 0.3 else mk((m, k))
    b = mk((k, n))
    if random.random() < 0.3: a = a.t().contiguous().t() if False else a
    accd = torch.float32 if dt != torch.int8 else torch.int32
    acc = None if random.random() < 0.5 else (torch.randn(m, n) if accd == torch.float32 else torch.randint(-100, 100, (m, n), dtype=torch.int32))
    r1 = S.matmul(a, b, acc); r2 = orig(a, b, acc)
    assert torch.equal(r1.view(torch.int32), r2.view(torch.int32)), (dt, m, k, n)
    dst = acc.clone() if acc is not None else torch.empty(m, n, dtype=accd)   # into acc's own buffer
    S.matmul_into(dst, a, b, dst if acc is not None else None)
    assert torch.equal(dst.view(torch.int32), r2.view(torch.int32)), ("into", dt, m, k, n)
print("mm ok")

# the lockstep gang form (pypto/codegen/gang.py): per task the same bits as the single-task call,
# at 1 and 2 threads, with subnormal / inf / NaN / -0 operands; most float cases take the one-bmm path
# (core._bmm_is_per_item_sgemm: a padded, non-contiguous product stack -> one sgemm per item)
specials = torch.tensor([1e-40, -3e-39, float("inf"), float("-inf"), float("nan"), -0.0])
bmm_cases = 0
for threads in (1, 2):
    torch.set_num_threads(threads)
    for it in range(300):
        dt = random.choice([torch.float16, torch.bfloat16, torch.float32, torch.int8])
        g = random.choice([2, 3, 8, 17, 48])
        m, k, n = random.choice([1, 16, 64, 128, 33]), random.choice([16, 256, 100, 512]), random.choice([16, 128, 7])
        accd = torch.float32 if dt != torch.int8 else torch.int32
        if dt == torch.int8:
            a, b = torch.randint(-128, 127, (g, m, k), dtype=dt), torch.randint(-128, 127, (g, k, n), dtype=dt)
            acc = torch.randint(-100, 100, (g, m, n), dtype=torch.int32)
        else:
            a, b, acc = (torch.randn(g, m, k) * 3), (torch.randn(g, k, n) * 3), torch.randn(g, m, n)
            # without NaNs half the time (FP16 stacks then convert in one call), operands every task
            # holds alike a third of the time (converted once: core._same_items)
            sp = specials if random.random() < 0.5 else specials[~torch.isnan(specials)]
            for x in (a, b):
                f = x.view(-1)
                pick = torch.randint(0, f.numel(), (max(1, f.numel() // 64),))
                f[pick] = sp[torch.randint(0, len(sp), pick.shape)]
            if random.random() < 0.3:
                b = b[:1].expand(g, k, n)
            if random.random() < 0.2:
                a = a[:1].expand(g, m, k)
            a, b = a.to(dt), b.to(dt)
        if random.random() < 0.5:
            acc = None
        # a gang's views: items in separate core-memory rows (not contiguous), or a contiguous stack
        # (or core-memory rows: aligned, not adjacent -- the products go straight there)
        r = random.random()
        dst = (torch.empty(g, m, n + 5, dtype=accd)[:, :, :n] if r < 0.4 else torch.empty(g, m, n, dtype=accd)
               if r < 0.7 else torch.empty(g, m * n + 48, dtype=accd)[:, :m * n].view(g, m, n))
        S.gang_matmul_into(dst, a, b, acc)
        bmm_cases += dt != torch.int8 and S._bmm_is_per_item_sgemm(m, k, n)
        for j in range(g):
            r = S.matmul(a[j], b[j], None if acc is None else acc[j])
            assert torch.equal(dst[j].contiguous().view(torch.int32), r.view(torch.int32)), ("gang", threads, dt, g, m, k, n)
torch.set_num_threads(1)
print("gang mm ok", bmm_cases, "of 600 cases through one bmm")
