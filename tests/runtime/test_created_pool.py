"""Recycled created tensors (pypto/runtime/batch._CreatedPool): a tensor ``create_tensor`` made in an
earlier run is handed out again, zeroed, only when nothing but the pool refers to it, to anything over
its storage, or to the views bslice kept of it; bslice then keeps its views across calls; whole
programs give the per-task form's bits whether the pool hands a tensor out again or not."""
from __future__ import annotations

import gc
import sys
from pathlib import Path

import torch

from pypto.driver.build import compile as ir_compile
from pypto.ops import support
from pypto.ops.support.gang_access import SLICE_OF
from pypto.runtime import RunConfig
from pypto.runtime import batch as B

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import model_kernels as M  # noqa: E402


class _Rt:
    """Stands for a runtime: each new one is a new run."""


def _pool(monkeypatch):
    pool = B._CreatedPool()
    monkeypatch.setattr(B, "_CREATED", pool)
    return pool


def _slice(t, offsets, shape):
    """bslice's views of ``t`` in a run that created ``t`` (its storage is in the run's owners)."""
    return B._gather_slices(t, offsets, shape, {t.untyped_storage().data_ptr(): object()})


def test_a_free_tensor_is_handed_out_again_zeroed(monkeypatch):
    pool = _pool(monkeypatch)
    t = pool.take([16, 8], torch.float32, _Rt())
    assert not t.any() and t.shape == (16, 8) and t.is_contiguous()
    t.fill_(3.0)
    ident = id(t)
    del t
    again = pool.take([16, 8], torch.float32, _Rt())
    assert id(again) == ident and not again.any() and again.dtype == torch.float32
    # another shape or dtype: its own tensor
    other = pool.take([16, 8], torch.bfloat16, _Rt())
    assert id(other) != ident and other.dtype == torch.bfloat16


def test_not_within_one_run(monkeypatch):
    pool = _pool(monkeypatch)
    rt = _Rt()
    a = pool.take([4, 4], torch.float32, rt)
    ptr = a.data_ptr()
    del a
    b = pool.take([4, 4], torch.float32, rt)
    assert b.data_ptr() != ptr


def test_its_views_are_kept_across_runs_and_equal_fresh_ones(monkeypatch):
    pool = _pool(monkeypatch)
    t = pool.take([16, 64], torch.float32, _Rt())
    offs = [[0, 16 * k] for k in range(4)]
    a = _slice(t, offs, [16, 16])
    assert a.__class__ is B.Sliced and _slice(t, offs, [16, 16]) is a
    ids = [id(v) for v in a]
    del a, t
    gc.collect()
    t = pool.take([16, 64], torch.float32, _Rt())
    b = _slice(t, offs, [16, 16])
    assert [id(v) for v in b] == ids   # the same views (their tensor came back)
    for v, o in zip(b, offs):
        want = support.view_region(t, o, [16, 16], "tensor.slice")
        assert (v.data_ptr(), v.shape, v.stride(), v.dtype) == (want.data_ptr(), want.shape, want.stride(), want.dtype)
        src, at, size = getattr(v, SLICE_OF)
        assert src.untyped_storage().data_ptr() == t.untyped_storage().data_ptr() and at == v.storage_offset()
    b[1].fill_(2.0)   # writes reach the tensor
    assert torch.equal(t[:, 16:32], torch.full((16, 16), 2.0)) and not t[:, :16].any()
    # its member Views are kept too (counted: the tensor still comes back)
    mv = B._member_views(b, {})
    assert b.views == mv and B._member_views(b, {}) == mv
    vid = [id(v) for v in mv]
    del b, t, mv, v, want, src
    gc.collect()
    t = pool.take([16, 64], torch.float32, _Rt())
    assert [id(v) for v in B._member_views(_slice(t, offs, [16, 16]), {})] == vid


def _reused_while(monkeypatch, hold) -> bool:
    """Whether the pool hands its tensor out again while ``hold(t, sliced)`` is kept."""
    pool = _pool(monkeypatch)
    t = pool.take([16, 64], torch.float32, _Rt())
    s = _slice(t, [[0, 16 * k] for k in range(4)], [16, 16])
    _slice(t, [[0, 0], [0, 32]], [16, 16])   # a second Sliced sharing views with the first
    ident = id(t)
    keep = hold(t, s)
    del t, s
    gc.collect()
    again = pool.take([16, 64], torch.float32, _Rt())
    reused = id(again) == ident
    del keep
    return reused


def test_anything_still_referring_to_it_or_its_views_keeps_it(monkeypatch):
    holds = {
        "the tensor": lambda t, s: t,
        "a view of it": lambda t, s: t[2:],
        "a reshape of it": lambda t, s: t.view(-1),
        "its storage": lambda t, s: t.untyped_storage(),
        "a numpy array of it": lambda t, s: t.numpy(),
        "a kept view": lambda t, s: s[2],
        "a kept view's numpy array": lambda t, s: s[1].numpy(),
        "a slice of a kept view": lambda t, s: s[0][1:],
        "a kept Sliced list": lambda t, s: s,
        "the Sliced's alias": lambda t, s: s.tensor,
        "a kept view's tag": lambda t, s: getattr(s[3], SLICE_OF),
        "a kept member View": lambda t, s: B._member_views(s, {})[1],
        "the kept member View list": lambda t, s: (B._member_views(s, {}), s.views)[1],
        "a kept member View's box": lambda t, s: (B._member_views(s, {})[2].box(), s.views[2])[1],
    }
    for what, hold in holds.items():
        assert not _reused_while(monkeypatch, hold), f"handed out again while {what} was held"
    assert _reused_while(monkeypatch, lambda t, s: None)
    # the column memo's Sliced (another holder the entry counts)
    owners = lambda t: {t.untyped_storage().data_ptr(): object()}   # noqa: E731
    memo = lambda t, s: B._gather_columns(t, [0, [0, 16, 48]], [16, 16], owners(t))   # noqa: E731
    assert not _reused_while(monkeypatch, memo)
    assert _reused_while(monkeypatch, lambda t, s: memo(t, s) and None)
    assert _reused_while(monkeypatch, lambda t, s: B._member_views(s, {}) and None)   # (Views made, not held)


def test_counts_no_longer_exact_never_hand_it_out_again(monkeypatch):
    pool = _pool(monkeypatch)
    monkeypatch.setattr(B, "_KEPT_VIEWS", 2)
    t = pool.take([16, 64], torch.float32, _Rt())
    for k in range(3):   # the third Sliced clears the Sliced table
        _slice(t, [[0, 16 * k], [0, 16 * k + 16]], [16, 16])
    ident = id(t)
    assert not B._KEPT[id(t)][4].ok
    del t
    gc.collect()
    assert id(pool.take([16, 64], torch.float32, _Rt())) != ident


def test_unused_entries_age_out_and_the_bound_holds(monkeypatch):
    pool = _pool(monkeypatch)
    t = pool.take([8], torch.float32, _Rt())
    ptr = t.untyped_storage().data_ptr()
    assert pool.total == 32 and pool.ptrs[ptr][0] is t
    for _ in range(pool.KEEP_RUNS + 1):
        pool.take([4], torch.float32, _Rt())
    assert ((8,), torch.float32) not in pool.entries and ptr not in pool.ptrs
    # (forgotten, not freed: the caller's tensor stays valid; its views are no longer kept)
    assert _slice(t, [[0]], [8]) is not None and t.shape == (8,)
    monkeypatch.setattr(pool, "MAX_BYTES", 0)
    u = pool.take([16], torch.float32, _Rt())
    assert not u.any() and ((16,), torch.float32) not in pool.entries


def test_the_view_base_reference_probe_is_a_fixed_amount():
    n = B._view_base_refs()
    assert 0 <= n <= 1
    a = torch.zeros([4, 4]).detach()
    r0 = sys.getrefcount(a)
    vs = [a.as_strided((1, 1), (4, 1), k) for k in range(3)]
    assert sys.getrefcount(a) == r0 + n
    del vs


def test_qwen3_layer_bits_with_and_without_reuse(monkeypatch):
    """The decode layer called again and again (its created tensors recycled with their kept views,
    or refused because a view of one is held): every call's outputs equal the per-task form's."""
    T, NH, NKV, D, inter, blk, mb = 8, 2, 1, 128, 512, 128, 2
    H = NH * D
    g = torch.Generator().manual_seed(3)

    def w(*shape, fan_in=None):
        t = torch.randn(*shape, generator=g)
        return (t / fan_in ** 0.5 if fan_in else t).to(torch.bfloat16)

    x = w(T, H)
    w_in, w_post = (1.0 + 0.1 * torch.randn(1, H, generator=g)).to(torch.bfloat16), \
        (1.0 + 0.1 * torch.randn(1, H, generator=g)).to(torch.bfloat16)
    wq, wk, wv = w(H, H, fan_in=H), w(H, NKV * D, fan_in=H), w(H, NKV * D, fan_in=H)
    wo, wg, wu, wd = w(H, H, fan_in=H), w(H, inter, fan_in=H), w(H, inter, fan_in=H), w(inter, H, fan_in=inter)
    k_cache, v_cache = w(NKV * T * mb * blk, D), w(NKV * T * mb * blk, D)
    table = torch.randperm(T * mb, generator=torch.Generator().manual_seed(1)).to(torch.int32)
    lens = torch.tensor([256, 128, 256, 256, 128, 128, 256, 128], dtype=torch.int32)   # (whole pages)
    ang = (lens.double() - 1)[:, None] * (1.0e6 ** (-torch.arange(0, D, 2, dtype=torch.float64) / D))[None, :]
    cos, sin = ang.cos().float(), ang.sin().float()
    opts = RunConfig(platform="a2a3sim").compile_options()
    compiled = ir_compile(M.decode_layer(T, NH, NKV, D, inter, blk, mb), **opts)

    def run(batch: bool):
        kc, vc, out = k_cache.clone(), v_cache.clone(), torch.zeros(T, H)
        compiled(x, w_in, wq, wk, wv, cos, sin, kc, vc, table, lens, wo, w_post, wg, wu, wd, 1e-6, D ** -0.5, out,
                 config=RunConfig(platform="a2a3sim", sim_seed=0, sim_batch=batch))
        return [t.view(torch.uint8).clone() for t in (out, kc, vc)]

    want = run(False)
    pool = _pool(monkeypatch)
    held, counts = [], []
    for call in range(5):
        if call == 3:   # a view of every pooled tensor held: the next call must create new ones
            held = [e[0][:1] for got in pool.entries.values() for e in got]
        got = run(True)
        assert all(torch.equal(a, b) for a, b in zip(got, want)), f"call {call}"
        counts.append(sum(len(v) for v in pool.entries.values()))
    n = counts[0]
    assert n > 0 and counts == [n, n, n, 2 * n, 2 * n] and len(held) == n


def test_a_returned_created_tensor_never_changes_with_later_calls(monkeypatch):
    """The program returns a created tensor (its batched loop writes its slices): what the caller
    gets is never the recycled buffer, so later calls, which do recycle it, leave it as it was."""
    import kernels_batch as K
    pool = _pool(monkeypatch)
    c = ir_compile(K.ReturnsCreated, **RunConfig(platform="a2a3sim").compile_options())
    cfg = RunConfig(platform="a2a3sim", sim_seed=0)
    a = torch.randn(128, 64)
    got = [c(a * k, config=cfg) for k in (1, 2, 3, 4)]
    for k, r in enumerate(got, 1):
        assert torch.equal(r, torch.exp(a * k * 0.5)), k
        assert r.untyped_storage().data_ptr() not in pool.ptrs
    assert sum(len(v) for v in pool.entries.values()) == 1   # one created tensor, recycled call after call


def _reused_while_view_sliced(monkeypatch, hold) -> bool:
    """Whether the pool hands its tensor out again while ``hold(t, q, sliced)`` is kept, ``sliced``
    being bslice's views of ``q``, a reshape of the tensor."""
    pool = _pool(monkeypatch)
    t = pool.take([16, 64], torch.float32, _Rt())
    q = t.view(64, 16)
    s = _slice(q, [[4 * k, 0] for k in range(4)], [4, 16])
    _slice(q, [[0, 0], [8, 0]], [4, 16])   # a second Sliced sharing a view with the first
    ident = id(t)
    keep = hold(t, q, s)
    del t, q, s
    gc.collect()
    again = pool.take([16, 64], torch.float32, _Rt())
    reused = id(again) == ident
    del keep
    return reused


def test_slices_of_a_view_of_it_are_kept_in_its_entry(monkeypatch):
    """bslice of a view of a recycled created tensor (the Qwen3 layer's ``query``, a reshape of ``qr``
    made afresh every call): the views of an alias in the view's layout, kept across calls and runs
    like the tensor's own, equal to fresh views of the view; another dtype or storage object is
    not served from the entry; anything holding the kept objects keeps the tensor from reuse."""
    pool = _pool(monkeypatch)
    t = pool.take([16, 64], torch.float32, _Rt())
    offs = [[4 * k, 0] for k in range(4)]
    a = _slice(t.view(64, 16), offs, [4, 16])
    q = t.view(64, 16)   # another view object of the same layout (the next call's reshape)
    assert a.__class__ is B.Sliced and _slice(q, offs, [4, 16]) is a
    for v, o in zip(a, offs):
        want = support.view_region(q, o, [4, 16], "tensor.slice")
        assert (v.data_ptr(), v.shape, v.stride(), v.dtype) == (want.data_ptr(), want.shape, want.stride(), want.dtype)
        src, at, size = getattr(v, SLICE_OF)
        assert (src.shape, src.stride(), src.storage_offset()) == (q.shape, q.stride(), q.storage_offset())
        assert src.untyped_storage().data_ptr() == t.untyped_storage().data_ptr() and at == v.storage_offset()
    a[1].fill_(2.0)
    assert torch.equal(t.view(64, 16)[4:8], torch.full((4, 16), 2.0)) and not t.view(64, 16)[:4].any()
    ids = [id(v) for v in a]
    ident = id(t)
    # the tensor comes back in a later run with the same views of its reshape
    del a, q, t, v, want, src
    gc.collect()
    t = pool.take([16, 64], torch.float32, _Rt())
    b = _slice(t.view(64, 16), offs, [4, 16])
    assert id(t) == ident and [id(v) for v in b] == ids and not t.any()
    # another layout of the same storage: its own alias and views (a transposed view included)
    tt = t.t()
    c = _slice(tt, [[0, 0], [16, 0]], [16, 16])
    assert getattr(c[0], SLICE_OF)[0].stride() == tt.stride() and _slice(t.t(), [[0, 0], [16, 0]], [16, 16]) is c
    assert torch.equal(c[1], tt[16:32, 0:16])
    # the precondition fails: another dtype over the storage -- fresh views every call
    w = t.view(torch.int32).view(64, 16)
    d = _slice(w, offs, [4, 16])
    assert d[0] is not _slice(w, offs, [4, 16])[0] and d[0].dtype == torch.int32
    del b, c, d, tt, w
    # holders of the view's kept objects keep the tensor
    holds = {
        "the reshape": lambda t, q, s: q,
        "a kept view": lambda t, q, s: s[2],
        "a kept view's tag": lambda t, q, s: getattr(s[3], SLICE_OF),
        "the Sliced": lambda t, q, s: s,
        "the layout's alias": lambda t, q, s: s.tensor,
        "a kept member View": lambda t, q, s: B._member_views(s, {})[1],
    }
    for what, hold in holds.items():
        assert not _reused_while_view_sliced(monkeypatch, hold), f"handed out again while {what} was held"
    assert _reused_while_view_sliced(monkeypatch, lambda t, q, s: None)
    assert _reused_while_view_sliced(monkeypatch, lambda t, q, s: B._member_views(s, {}) and None)


def test_slices_of_views_of_it_beyond_the_layout_bound_are_fresh(monkeypatch):
    pool = _pool(monkeypatch)
    monkeypatch.setattr(B, "_KEPT_LAYOUTS", 2)
    t = pool.take([16, 64], torch.float32, _Rt())
    views = [t.view(64, 16), t.view(32, 32), t.view(128, 8)]
    got = [_slice(v, [[0, 0], [4, 0]], [4, 8]) for v in views]
    again = [_slice(v, [[0, 0], [4, 0]], [4, 8]) for v in views]
    assert [x is y for x, y in zip(got, again)] == [True, True, False]
    assert torch.equal(got[2][1], views[2][4:8])
    ident = id(t)
    del views, got, again, t
    gc.collect()
    assert id(pool.take([16, 64], torch.float32, _Rt())) == ident   # (free again: the fresh views died)
