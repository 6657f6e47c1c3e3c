"""The tensormap's shortcuts give what the general lookup gives: a bucket with one producer (no
bisection) and a consumer passing the very view object it registered (no box comparison)."""
import random

import torch

from pypto.runtime.deps import COVERED, NO_OVERLAP, TensorMap, View, overlap


def _random_view(buf: torch.Tensor, rng: random.Random) -> torch.Tensor:
    rows, cols = buf.shape
    r0, c0 = rng.randrange(rows), rng.randrange(cols)
    r1, c1 = rng.randint(r0, rows), rng.randint(c0, cols)   # empty views included
    t = buf[r0:r1, c0:c1]
    if rng.random() < 0.2:
        t = buf.view(-1)[rng.randrange(buf.numel()):][: rng.randrange(1, 40)].view(-1, 1)   # other strides
    return t


def _general(entries, v, remove_covered):
    """The lookup by its definition: every registered view that overlaps, first byte ascending, newest
    first among equal first bytes."""
    found = [(seq, p, overlap(v, pv), pv) for seq, (pv, p) in enumerate(entries)]
    found = [f for f in found if f[2] != NO_OVERLAP]
    found.sort(key=lambda f: (f[3].lo, -f[0]))
    return [(p, ov, pv) for _, p, ov, pv in found]


def test_single_producer_lookup_matches_the_definition():
    rng = random.Random(7)
    buf = torch.zeros(12, 10)
    for _ in range(3000):
        tm = TensorMap()
        pt = _random_view(buf, rng)
        pv = View(pt)
        tm.register(pv, "producer")
        v = pv if rng.random() < 0.3 else View(_random_view(buf, rng))
        remove = rng.random() < 0.5
        want = _general([(pv, "producer")], v, remove)
        assert list(tm.lookup(v, remove)) == want
        left = tm.buckets[pv.base].ents
        dropped = remove and want and want[0][1] == COVERED
        assert left == ([] if dropped else [(pv, "producer")])


def test_same_view_object_overlap_is_that_of_an_equal_view():
    rng = random.Random(8)
    buf = torch.zeros(12, 10)
    for _ in range(2000):
        t = _random_view(buf, rng)
        a = View(t)
        assert overlap(a, a) == overlap(a, View(t)) == overlap(View(t), a)


def test_lookup_of_many_producers_matches_the_definition():
    """Several producers (some with equal first bytes, some removed by a covering INOUT lookup):
    the matches first byte ascending, newest first among equal first bytes."""
    rng = random.Random(11)
    buf = torch.zeros(12, 10)
    for _ in range(1500):
        tm = TensorMap()
        entries = []
        for j in range(rng.randrange(2, 9)):
            pt = entries[rng.randrange(len(entries))][0].tensor if entries and rng.random() < 0.3 \
                else _random_view(buf, rng)   # (a tensor registered again: an equal first byte)
            pv = View(pt)
            tm.register(pv, f"p{j}")
            entries.append((pv, f"p{j}"))
        v = View(_random_view(buf, rng))
        want = _general(entries, v, False)
        assert list(tm.lookup(v, False)) == want


def _state(tm):
    return {b: (list(x.los), [(id(v), p) for v, p in x.ents], x.maxlen, x.seq) for b, x in tm.buckets.items()}


def test_register_all_and_unregister_all_match_one_call_per_view():
    """A batched task's registration in one call (views of several buffers, out of order, repeated)
    leaves the map as registering them one by one does, and returns the same keys; unregister_all
    removes what unregister one by one removes (entries a covering lookup dropped already included,
    an emptied bucket goes, a later entry of its buffer then finds none)."""
    rng = random.Random(12)
    bufs = [torch.zeros(12, 10), torch.zeros(6, 4)]
    for _ in range(800):
        one, many = TensorMap(), TensorMap()
        early = [View(_random_view(bufs[rng.randrange(2)], rng)) for _ in range(rng.randrange(4))]
        for v in early:
            one.register(v, "early")
            many.register(v, "early")
        views = [View(_random_view(bufs[rng.randrange(2)], rng)) for _ in range(rng.randrange(1, 8))]
        if rng.random() < 0.3:
            views.append(views[0])   # one region twice
        keys = [(v.base, one.register(v, "t")) for v in views]
        assert many.register_all(views, "t") == keys
        assert _state(one) == _state(many)
        if rng.random() < 0.5:   # a covering INOUT consumer drops some entries first
            c = View(_random_view(bufs[0], rng))
            assert [(p, ov, id(pv)) for p, ov, pv in one.lookup(c, True)] == \
                [(p, ov, id(pv)) for p, ov, pv in many.lookup(c, True)]
        for b, k in keys:
            one.unregister(b, k, "t")
        many.unregister_all(keys, "t")
        assert _state(one) == _state(many)
        assert all(p == "early" for x in many.buckets.values() for _, p in x.ents)
