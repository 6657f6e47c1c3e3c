"""Simulator shortcuts that must be unobservable: scratch clobbers nobody reads
(pypto.codegen.scratch) and global memory used in place of a copy (simulator._in_place_args)."""
from pathlib import Path

import pytest
import torch

from pypto.ops import support
from pypto.runtime import RunConfig
from pypto.runtime import simulator as S

import kernels_fast as K

CFG = RunConfig(sim_seed=0)


def kernel_source(compiled) -> str:
    return "".join(Path(compiled.output_dir, p).read_text() for p in compiled.meta["kernels"].values())


# ------------------------------------------------------------------ dead scratch
def test_softmax_scratch_is_dead_and_result_matches_the_reference():
    a = torch.randn(64, 256)
    c = K.softmax_rows.compile(a, torch.zeros(64, 256))
    src = kernel_source(c)
    # both reductions of kernel() (its lockstep form kernel_gang, after GANG =, has the same two)
    assert src.split("\nGANG = ")[0].count("clobber=False") == 2, src
    assert src.count("clobber=False") == 4, src
    out = torch.zeros(64, 256)
    c(a, out, config=CFG)
    # the reference order of both reductions, computed independently of the simulator's shortcut
    for i in range(4):
        x = a[i * 16:(i + 1) * 16]
        m = support._reduce_last_reference(x, "max", True)
        e = torch.exp(x - m)
        s = support._reduce_last_reference(e, "sum", True)
        assert torch.equal(out[i * 16:(i + 1) * 16].view(torch.int32), (e / s).view(torch.int32))


def test_scratch_read_later_keeps_the_clobber():
    a = torch.randn(16, 256)
    c = K.sum_then_read_tmp.compile(a, torch.zeros(16, 1), torch.zeros(16, 256))
    assert "clobber=False" not in kernel_source(c)
    s_out, tmp_out = torch.zeros(16, 1), torch.zeros(16, 256)
    c(a, s_out, tmp_out, config=CFG)
    work = torch.empty(16, 256)
    expect = support._reduce_last_reference(a, "sum", True, work)
    assert torch.equal(s_out, expect)
    assert torch.equal(tmp_out, work)          # the tree's partial results, as the device leaves them
    assert not torch.equal(tmp_out, a)


def test_scratch_read_in_the_next_iteration_keeps_the_clobber():
    a = torch.randn(16, 256)
    c = K.max_in_loop_reads_tmp.compile(a, torch.zeros(16, 256))
    assert "clobber=False" not in kernel_source(c)


def test_dead_scratch_max_with_zero_extreme_still_bit_exact():
    # rows whose max is +0.0 / -0.0 cannot take the amax shortcut (sign of zero depends on order)
    a = -torch.rand(64, 256)
    a[:, 7] = -0.0
    a[:, 9] = 0.0
    a[3, 9] = -0.0
    out = torch.zeros(64, 256)
    K.softmax_rows(a, out, config=CFG)
    x = a[:16]
    m = support._reduce_last_reference(x, "max", True)
    e = torch.exp(x - m)
    expect = e / support._reduce_last_reference(e, "sum", True)
    assert torch.equal(out[:16].view(torch.int32), expect.view(torch.int32))


# ------------------------------------------------------------------ global memory in place
def test_in_and_out_tensors_are_used_in_place():
    a, out = torch.randn(16, 64), torch.zeros(16, 64)
    K.add_one(a, out, config=CFG)
    assert torch.equal(out, a + 1)
    rt = S._LAST_RUNTIME[0]
    task = [t for t in rt.tasks if t.kind == "kernel"][0]
    ptrs = {t.untyped_storage().data_ptr() for t in task.args if isinstance(t, torch.Tensor)}
    assert ptrs == {a.untyped_storage().data_ptr(), out.untyped_storage().data_ptr()}


def test_a_written_in_parameter_is_written_in_place():
    # issue 14 (revising issue 13 item 4): as in the reference, the write reaches the caller's
    # tensor; the parameter is inferred InOut, so the simulator hands the kernel the caller's storage
    a, out = torch.full((16, 64), 3.0), torch.zeros(16, 64)
    K.writes_its_input(a, out, config=CFG)
    assert torch.equal(a, torch.full((16, 64), 6.0)) and torch.equal(out, torch.full((16, 64), 3.0))


def test_aliased_and_non_contiguous_arguments_are_copied():
    buf = torch.randn(16, 64)
    before = buf.clone()
    K.add_one(buf, buf, config=CFG)                 # the same tensor as In and Out: two device buffers
    assert torch.equal(buf, before + 1)
    out = torch.zeros(16, 64)
    big = torch.randn(16, 128)
    view = big[:, ::2]
    K.add_one(view, out, config=CFG)
    assert torch.equal(out, view + 1)
    assert S._in_place_args([{"direction": "In"}, {"direction": "Out"}], [view, out]) == {1}
    assert S._in_place_args([{"direction": "In"}, {"direction": "Out"}], [buf, buf]) == set()
    assert S._in_place_args([{"direction": "InOut"}], [out]) == set()
