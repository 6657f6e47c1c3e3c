"""The HOST pass pipeline (pypto.passes.host_pipeline: the reference's SynthesizeAllReduceSignals,
MaterializeCommDomainScopes, LowerHostTensorCollectives) over host bodies: each stage's dump is a
host body that re-parses and runs to the same bits, comm domains come from the device analysis
(also for a program with dynamic host shapes, which nothing dry-runs), and what cannot be known
before the run is a located error."""
import ast

import pytest
import torch

from pypto import ir
from pypto.errors import PassError
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.passes import host_pipeline
from pypto.passes.host_ir import HostIR, parse_host, print_host
from pypto.runtime import RunConfig

from tests.distributed import kernels_dist as K
from tests.distributed import kernels_host_passes as H
from tests.distributed.kernels_dist import MAXR, N

NAMES = [p.NAME for p in host_pipeline.HOST_PIPELINE]


def cfg(n, seed=0, **kw):
    return RunConfig(platform="a2a3sim", sim_seed=seed, distributed_config=DistributedConfig(device_ids=list(range(n))),
                     **kw)


def test_pipeline_is_the_references_three_passes_in_order():
    assert NAMES == ["SynthesizeAllReduceSignals", "MaterializeCommDomainScopes", "LowerHostTensorCollectives"]


def test_every_stage_dumps_a_host_body_that_reparses_and_the_pipeline_rebuilds_the_last():
    x = torch.randn(MAXR, 1, N)
    compiled = K.host_allreduce.compile(x, torch.zeros(MAXR, 1, N), config=cfg(3, dump_passes=True))
    d = compiled.output_dir / "passes_dump"
    files = ["host_00_original.py"] + [f"host_{i:02d}_after_{n}.py" for i, n in enumerate(NAMES, 1)]
    texts = [(d / f).read_text() for f in files]
    for t in texts:
        parse_host(t)   # valid DSL text
    assert "__allreduce_signal_0 = pld.window(__allreduce_signal_buf_0, [__allreduce_signal_world_size_0, 1], " \
           "dtype=pl.INT32)" in texts[1]
    assert "pld.tensor.allreduce(data, __allreduce_signal_0, op=pld.ReduceOp.Sum)" in texts[1]
    assert "# pld.comm_domain: devices=all, slots=[data_buf, __allreduce_signal_buf_0]" in texts[2]
    assert "builtin.tensor.allreduce(data, __allreduce_signal_0, op=pld.ReduceOp.Sum, device=__r_0)" in texts[3]
    assert "pld.tensor.allreduce" not in texts[3]
    # the original text re-parsed and lowered again gives the same last stage (comments included:
    # the domains are rebuilt)
    from pypto.passes.host_ir import HostPassContext, run_host_pipeline

    ctx = HostPassContext(3, compiled.host.scope(), env={"x": x, "y": torch.zeros(MAXR, 1, N)})
    again = run_host_pipeline(parse_host(texts[0]), ctx)
    assert print_host(again).split("\n")[1:] == texts[3].split("\n")[1:]
    # and lowering the lowered form changes nothing (idempotent)
    twice = run_host_pipeline(parse_host(texts[3]), ctx)
    assert print_host(twice) == texts[3]


def test_the_lowered_dump_runs_to_the_same_bits_as_the_source():
    x = torch.randn(MAXR, 1, N)
    y_src = torch.zeros(MAXR, 1, N)
    compiled = K.host_allreduce.compile(x, y_src, config=cfg(3, seed=5, dump_passes=True))
    compiled(x, y_src, config=cfg(3, seed=5))
    lowered = parse_host((compiled.output_dir / "passes_dump" / f"host_03_after_{NAMES[-1]}.py").read_text())
    tree, src = compiled.host.parsed()
    compiled.host._tree = (lowered.node, src)   # the host body is now the printed lowered text
    try:
        y_dump = torch.zeros(MAXR, 1, N)
        compiled(x, y_dump, config=cfg(3, seed=5))
    finally:
        compiled.host._tree = (tree, src)
    assert torch.equal(y_dump, y_src)
    ref = x[:3].double().sum(0)
    assert torch.allclose(y_src[:3].double(), ref.expand(3, 1, N), atol=1e-5)


def test_a_subset_domain_collective_runs_on_its_devices_only():
    x = torch.randn(MAXR, 1, N)
    y = torch.full((MAXR, 1, N), -7.0)
    compiled = H.subset_allreduce.compile(x, y, config=cfg(4, dump_passes=True))
    text = (compiled.output_dir / f"passes_dump/host_03_after_{NAMES[-1]}.py").read_text()
    assert "# pld.comm_domain: devices=[1, 2], slots=[data_buf, __allreduce_signal_buf_0]" in text
    assert "builtin.tensor.allreduce(data, __allreduce_signal_0, op=pld.ReduceOp.Sum, device=1)" in text
    assert "device=2)" in text and "device=0)" not in text and "for __r_0" not in text
    compiled(x, y, config=cfg(4))
    s = x[1] + x[2]   # two operands: the sum is exact in either order
    assert torch.equal(y[1], s) and torch.equal(y[2], s)
    assert torch.equal(y[0], torch.full((1, N), -7.0)) and torch.equal(y[3], torch.full((1, N), -7.0))
    assert [m for _, m in compiled.window_groups] == [[1, 2], [1, 2]]


def test_a_signal_less_collective_in_a_loop_gets_one_signal_before_the_loop():
    x = torch.randn(MAXR, 1, N)
    y = torch.zeros(MAXR, 1, N)
    compiled = H.looped_allreduce.compile(x, y, config=cfg(2, dump_passes=True))
    text = (compiled.output_dir / "passes_dump/host_01_after_SynthesizeAllReduceSignals.py").read_text()
    fn = parse_host(text).node
    top = [ast.unparse(s) for s in fn.body]
    i_loop = next(i for i, s in enumerate(fn.body) if isinstance(s, ast.For))
    assert any(t.startswith("__allreduce_signal_buf_0 = ") for t in top[:i_loop])
    compiled(x, y, config=cfg(2))
    s = x[0] + x[1]
    assert torch.equal(y[0], s + s) and torch.equal(y[1], s + s)


def test_dynamic_host_shapes_get_their_comm_group_from_the_run():
    # a scalar host parameter: no sample arguments, nothing dry-run at compile time; the window
    # used by ranks first..first+1 is still a group of two (group rank 0 = rank `first`)
    compiled = ir.compile(K.ProgramSubGroupDyn, platform="a2a3sim",
                          distributed_config=DistributedConfig(device_ids=[0, 1, 2]))
    for first in (1, 0):
        x = torch.randn(3, 1, N)
        y = torch.zeros(3, 1, N)
        info = torch.full((3, 1, 2), -1, dtype=torch.int32)
        compiled(x, y, info, first)
        a, b = first, first + 1
        assert torch.equal(y[a], x[b]) and torch.equal(y[b], x[a])
        assert info[a].tolist() == [[0, 2]] and info[b].tolist() == [[1, 2]]
        other = 3 - a - b
        assert info[other].tolist() == [[-1, -1]]


def test_a_device_known_only_while_running_is_a_located_error():
    x = torch.randn(MAXR, 1, N)
    with pytest.raises(PassError) as e:
        H.value_device(x, torch.zeros(MAXR, 1, N), torch.tensor([1], dtype=torch.int32), config=cfg(2))
    msg = str(e.value)
    assert "window buffer 'data_buf'" in msg and "device=int(where[0])" in msg
    assert "kernels_host_passes.py" in msg


def test_print_host_shows_each_domain_as_a_comment():
    fn = ast.parse("def h(x):\n    a = pld.alloc_window_buffer(64)\n").body[0]
    from pypto.passes.host_ir import CommDomain

    text = print_host(HostIR(fn, (CommDomain("comm_d0", (0, 2), ("a",)),)))
    assert text.split("\n")[1] == "    # pld.comm_domain: devices=[0, 2], slots=[a]"
    assert parse_host(text).domains is None


def test_ir_compile_of_a_program_dumps_its_host_method_stages():
    compiled = ir.compile(K.ProgramHostScale, platform="a2a3sim", distributed_config=DistributedConfig(device_ids=[0, 1]))
    d = compiled.output_dir / "passes_dump"
    last = (d / f"host_03_after_{NAMES[-1]}.py").read_text()
    assert last.startswith("def host(self, x:")
    assert "builtin.tensor.allreduce(data, __allreduce_signal_0, op=pld.ReduceOp.Max, device=__r_0)" in last
    parse_host(last)


def test_the_reference_factory_form_runs_a_host_pass_and_refuses_a_program():
    from pypto import passes
    from pypto.passes.host_ir import HostPassContext

    p = passes.synthesize_allreduce_signals()
    fn = ast.parse("def h(x):\n    b = pld.alloc_window_buffer(64)\n    d = pld.window(b, [16], dtype=pl.FP32)\n"
                   "    d = pld.tensor.allreduce(d, op=pld.ReduceOp.Sum)\n").body[0]
    out = p(HostIR(fn), HostPassContext(2, {}))
    assert "pld.tensor.allreduce(d, __allreduce_signal_0, op=pld.ReduceOp.Sum)" in print_host(out)
    with pytest.raises(TypeError, match="HostIR"):
        p(object(), HostPassContext(2, {}))


def test_aliased_collective_operands_are_a_located_error():
    from pypto.errors import ParserError

    with pytest.raises(ParserError) as e:
        H.aliased_allreduce(torch.randn(MAXR, 1, N), torch.zeros(MAXR, 1, N), config=cfg(2))
    msg = str(e.value)
    assert "'target' and 'signal' are views of the same window buffer 'buf'" in msg
    assert "kernels_host_passes.py" in msg and "pld.tensor.allreduce(data, sig" in msg


def test_the_collective_domain_follows_the_operands_not_their_spelling():
    x = torch.randn(MAXR, 1, N)
    y = torch.full((MAXR, 1, N), -7.0)
    compiled = H.subset_allreduce_bare_names.compile(x, y, config=cfg(4, dump_passes=True))
    text = (compiled.output_dir / f"passes_dump/host_03_after_{NAMES[-1]}.py").read_text()
    assert "builtin.tensor.allreduce(alias, __allreduce_signal_0, op=pld.ReduceOp.Sum, device=2)" in text
    assert "device=3)" in text and "for __r_0" not in text
    compiled(x, y, config=cfg(4))
    assert torch.equal(y[2], x[2] + x[3]) and torch.equal(y[3], x[2] + x[3])
    assert torch.equal(y[0], torch.full((1, N), -7.0))


def test_the_pipeline_leaves_the_source_tree_as_it_was():
    from pypto.passes.host_ir import HostPassContext, run_host_pipeline

    tree, _ = H.subset_allreduce.parsed()
    before = ast.dump(tree, include_attributes=True)
    ctx = HostPassContext(4, H.subset_allreduce.scope(), env={"x": torch.zeros(MAXR, 1, N),
                                                                "y": torch.zeros(MAXR, 1, N)})
    out = run_host_pipeline(HostIR(tree), ctx)
    assert ast.dump(tree, include_attributes=True) == before
    assert all(getattr(n, "lineno", None) for n in ast.walk(out.node) if isinstance(n, (ast.stmt, ast.expr)))
