"""A store whose result is not bound still writes its tensor: the outlined kernel's parameter is Out /
InOut and the task's runtime tag orders it against the other tasks on that tensor. It used to stay
In, the task was tagged INPUT, and two tasks incrementing one band raced: 1.0 where 2.0 was due, with
no diagnostic (found while testing issue 13 item 14)."""
import torch

import pypto.runtime.simulator as S
from kernels_bare_store import bare_increments_in_a_loop, bare_store_then_read, two_bare_increments
from pypto.runtime import RunConfig


def _tags():
    return [t.tags for t in S._LAST_RUNTIME[0].tasks if t.kind == "kernel"]


def test_two_tasks_incrementing_one_band_are_ordered():
    for seed in range(4):
        x = torch.zeros(64, 64)
        two_bare_increments(x, config=RunConfig(sim_seed=seed))
        assert torch.equal(x[:16], torch.full((16, 64), 2.0)) and not x[16:].any()
        assert _tags() == [["INOUT"], ["INOUT"]]


def test_a_loop_of_bare_stores_matches_the_reference():
    x = torch.zeros(64, 64)
    bare_increments_in_a_loop(x, config=RunConfig(sim_seed=0))
    assert torch.equal(x, torch.full((64, 64), 2.0))
    import pypto.debug

    ns = {}
    exec(pypto.debug.torch_codegen(bare_increments_in_a_loop.lower(torch.zeros(64, 64))), ns)
    y = torch.zeros(64, 64)
    ns["bare_increments_in_a_loop"](y)
    assert torch.equal(x, y)


def test_a_reader_waits_for_the_bare_store_it_reads():
    a = torch.randn(64, 64)
    for seed in range(4):
        tmp, out = torch.zeros(64, 64), torch.zeros(64, 64)
        bare_store_then_read(a, tmp, out, config=RunConfig(sim_seed=seed))
        assert torch.equal(out, a * 2.0 + 1.0) and torch.equal(tmp, a * 2.0)
    # look the tag up by the tensor, not by position: outlining may order a kernel's parameters
    # differently (the reader's first parameter is 'out' once the store rebinds it)
    writer, reader = [t for t in S._LAST_RUNTIME[0].tasks if t.kind == "kernel"]
    assert writer.tags[[arg is tmp for arg in writer.args].index(True)] in ("OUTPUT_EXISTING", "INOUT")
    assert reader.tags[[arg is tmp for arg in reader.args].index(True)] == "INPUT"
    assert writer.index in reader.fanin
