"""A kernel's simulated time includes every instruction's cycles, whether or not its body ends in a
return (docs/simulator.md, "Time"). The member functions of a Group (AIC / AIV) may end without one;
their last instructions' cycles used to stay unyielded, so the task ended before them (and the seeded
jitter draws of the rest of the run shifted). Oracle: the same program with a final ``return`` in
each member, whose return yields what is pending: under one seed every task starts and ends at the
same simulated time, in both the task and the lockstep (gang) forms."""
from __future__ import annotations

import re

import pytest
import torch

import kernels_tail_cycles as K
import pypto.ir as ir
from pypto.runtime import RunConfig
from pypto.runtime import simulator as S


def _yields(source: str, fn: str) -> list[str]:
    """The yield statements of function ``fn`` of a generated kernel module, in order (their
    cycles, or the cross-core op waited on, without its source location)."""
    body = source.split(f"\ndef {fn}(", 1)[1].split("\n\n\n", 1)[0]
    return [re.sub(r", '[^']*:\d+'\)", ")", re.sub(r"\s+#.*", "", line.strip()))
            for line in body.splitlines() if re.match(r"\s+yield\b", line)]


def _sources(program) -> dict:
    kernels, _ = ir.compile(program, platform="a2a3sim").load_modules()
    return {name: open(m.__file__, encoding="utf-8").read() for name, m in kernels.items()
            if name in ("vec", "cube")}


def test_a_member_without_a_return_yields_its_last_cycles():
    without, with_ = _sources(K.MembersWithoutReturn), _sources(K.MembersWithReturn)
    assert set(without) == {"vec", "cube"}
    for name, src in without.items():
        ys = _yields(src, "kernel")
        # the body ends in a yield of the cycles after its last cross-core op (vec: the mul; cube: the tfree)
        assert re.fullmatch(r"yield \d+", ys[-1]), (name, ys)
        assert ys == _yields(with_[name], "kernel"), name
        assert ys == _yields(src, "kernel_gang"), name   # the gang form yields what the task form does


@pytest.mark.parametrize("lockstep", [False, True])
def test_task_end_times_do_not_depend_on_a_final_return(lockstep):
    a, w = torch.randn(K.N * K.R, K.C), torch.randn(K.C, K.C)
    times, outs = [], []
    for program in (K.MembersWithoutReturn, K.MembersWithReturn):
        out = torch.zeros(K.N * K.R, K.C)
        ir.compile(program, platform="a2a3sim")(
            a, w, out, config=RunConfig(platform="a2a3sim", sim_seed=5, sim_lockstep=lockstep, enable_dep_gen=True))
        rt = S._LAST_RUNTIME[0]
        times.append([(t.kernel, t.core, t.start, t.end) for t in rt.tasks])
        outs.append(out)
        if lockstep:
            assert rt.gangs   # the group tasks ran as gangs of clusters
    assert times[0] == times[1]
    assert sum(k == "grp" for k, *_ in times[0]) == K.N
    assert torch.equal(outs[0], outs[1])
    torch.testing.assert_close(outs[0], (a.double() @ w.double()).float(), rtol=1e-5, atol=1e-5)
