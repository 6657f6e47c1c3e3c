"""DistributedWorker(persistent=True): window buffers kept across runs of a prepared program
(the reference's retained comm domains), zeroed before each reuse unless
reset_persistent_windows=False."""
import pytest
import torch

from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.runtime import RunConfig
from pypto.runtime.distributed.program import DistributedWorker

from tests.distributed import kernels_host_passes as H
from tests.distributed.kernels_dist import N

CFG = RunConfig(platform="a2a3sim", sim_seed=0, distributed_config=DistributedConfig(device_ids=[0, 1]))


def compiled():
    return H.accumulate.compile(torch.zeros(2, 1, N), torch.zeros(2, 1, N), 4096, config=CFG)


def runs(worker, xs, nbytes=4096):
    out = []
    for x in xs:
        y = torch.zeros(2, 1, N)
        worker(x, y, nbytes)
        out.append(y)
    return out


def test_windows_kept_without_reset_accumulate_across_runs():
    xs = [torch.randn(2, 1, N) for _ in range(3)]
    with compiled().prepare(persistent=True, reset_persistent_windows=False) as w:
        ys = runs(w, xs)
        assert w._w._next_alloc_id == 1   # one comm domain, allocated by the first run only
    acc = torch.zeros(2, 1, N)
    for x, y in zip(xs, ys):
        acc = acc + x   # the same FP32 additions, in the same order
        assert torch.equal(y, acc)


@pytest.mark.parametrize("kw", [{"persistent": True}, {"persistent": True, "reset_persistent_windows": True}, {}])
def test_reset_or_no_persistence_start_every_run_from_zeroed_windows(kw):
    xs = [torch.randn(2, 1, N) for _ in range(3)]
    with compiled().prepare(**kw) as w:
        ys = runs(w, xs)
        # persistent: one allocation, reused (and zeroed); not persistent: one per run
        assert w._w._next_alloc_id == (1 if kw else 3)
    for x, y in zip(xs, ys):
        assert torch.equal(y, x)


def test_a_kept_window_asked_with_another_size_is_an_error():
    with compiled().prepare(persistent=True) as w:
        runs(w, [torch.randn(2, 1, N)])
        with pytest.raises(ValueError, match="acc_buf.*changed specification"):
            runs(w, [torch.randn(2, 1, N)], nbytes=8192)
        # the failed run leaves the kept windows unusable
        with pytest.raises(RuntimeError, match="earlier run .* failed"):
            runs(w, [torch.randn(2, 1, N)])


def test_reset_without_persistence_is_the_references_value_error():
    with pytest.raises(ValueError, match="requires persistent=True"):
        DistributedWorker(compiled(), reset_persistent_windows=True)


def test_the_kept_windows_live_on_the_cards_until_close():
    c = compiled()
    w = c.prepare(persistent=True, reset_persistent_windows=False)
    runs(w, [torch.randn(2, 1, N)])
    # each card owns the kept window (the run freed nothing it keeps) ...
    assert all(len(card._owned_tensors) == 1 for card in w.cards)
    w.close()
    # ... and close() frees them before the cards close
    assert w._w._kept_handles == [] and not w._w._kept
    assert all(len(card._owned_tensors) == 0 for card in w.cards)
