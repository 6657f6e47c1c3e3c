"""The host interpreter (pypto/runtime/distributed/host.py): results it used to get silently wrong
(a host read of a queued launch's output saw stale memory; `or` / `and` returned booleans; a
non-integral extent was truncated; an unknown reduce op became Sum; an uneven host reduce_scatter
scattered uneven chunks; two arguments disagreeing on a dynamic extent were not noticed) and the
located errors that replace them."""
import pytest
import torch

from pypto.errors import ParserError
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.runtime import RunConfig

from tests.distributed import kernels_host as H
from tests.distributed.kernels_dist import MAXR, N


def cfg(nranks: int, seed: int | None = 0) -> RunConfig:
    return RunConfig(platform="a2a3sim", sim_seed=seed,
                     distributed_config=DistributedConfig(device_ids=list(range(nranks))))


def test_host_read_of_a_launch_output_sees_the_result():
    x = torch.arange(MAXR * N, dtype=torch.float32).reshape(MAXR, 1, N)
    y = torch.zeros(MAXR, 1, N)
    v = H.read_after_launch(x, y, config=cfg(2))
    # integers: the order of the two-rank sum cannot change it
    assert float(v) == float(x[0, 0, 0] + x[1, 0, 0]) == float(y[0, 0, 0]) != 0.0


def test_host_condition_on_a_launch_output():
    x = torch.ones(MAXR, 1, N)
    assert H.condition_on_output(x, torch.zeros(MAXR, 1, N), config=cfg(2)) == 1


def test_boolean_operators_have_python_values():
    assert H.bool_values(torch.zeros(MAXR, 1, N), config=cfg(2)) == (N // 2, 0, 5)


def test_a_fractional_window_extent_is_an_error():
    with pytest.raises(ParserError, match="must be an integer") as ei:
        H.float_extent(torch.zeros(MAXR, 1, N), config=cfg(2))
    assert "kernels_host.py" in str(ei.value)


def test_an_unknown_reduce_op_is_an_error_not_sum():
    with pytest.raises(ParserError, match="not a reduce op"):
        H.bad_reduce_op(torch.ones(MAXR, 1, N), config=cfg(2))


def test_an_uneven_host_reduce_scatter_is_an_error():
    with pytest.raises(ParserError, match="not divisible by the 2 ranks"):
        H.uneven_reduce_scatter(torch.ones(MAXR, 1, N), config=cfg(2))


def test_a_broadcast_root_outside_the_ranks_is_an_error():
    with pytest.raises(ParserError, match="root 5 is not a rank"):
        H.bad_broadcast_root(torch.ones(MAXR, 1, N), config=cfg(2))


def test_dynamic_extent_disagreement_keeps_each_extent_and_its_value_is_an_error():
    """Arguments may give HD different extents (each keeps its own, as in the reference); reading
    HD's value in the body is then a located error, never one of the two silently."""
    assert H.dyn_conflict(torch.zeros(4, 1, N), torch.zeros(3, 1, N), config=cfg(2)) == 4
    assert H.dyn_conflict(torch.zeros(3, 1, N), torch.zeros(3, 1, N), config=cfg(2)) == 3
    assert H.dyn_conflict_value(torch.zeros(3, 1, N), torch.zeros(3, 1, N), config=cfg(2)) == 3
    with pytest.raises(ParserError, match="HD has no one value: 'x' dim 0 is 4, 'y' dim 0 is 3") as ei:
        H.dyn_conflict_value(torch.zeros(4, 1, N), torch.zeros(3, 1, N), config=cfg(2))
    assert "kernels_host.py" in str(ei.value) and "x.shape[0]" in str(ei.value)


def test_host_collective_runs_as_a_next_level_build():
    from tests.distributed import kernels_dist as K

    x = torch.randn(MAXR, 1, N)
    compiled = K.host_allreduce.compile(x, torch.zeros(MAXR, 1, N), config=cfg(2))
    variant = compiled.output_dir / "next_levels" / "builtin.tensor.allreduce__sum__fp32"
    assert (variant / "kernel_config.py").is_file()
    assert any(name == "builtin.tensor.allreduce__sum__fp32" for _, name, _ in compiled.launches)


def test_a_second_round_waits_for_the_peers_reading_the_first():
    """Round 2's publish into rank r's window must not overtake rank r-1 still reading round 1's
    data from it (remote_load after a host barrier): the host program orders them."""
    x = torch.randn(2, MAXR, 1, N)
    y = torch.zeros(2, MAXR, 1, N)
    for seed in (0, 1, 2):
        H.two_rounds(x, y, config=cfg(2, seed))
        for rd in range(2):
            for r in range(2):
                assert torch.equal(y[rd, r], x[rd, (r + 1) % 2]), (seed, rd, r)


def test_an_incore_kernel_without_return_returns_its_outputs():
    x = torch.randn(1, N)
    y = torch.zeros(1, N)
    H.copy_noreturn(x, y, config=RunConfig(platform="a2a3sim", sim_seed=0))
    assert torch.equal(y, x)


def test_two_launches_per_rank_in_one_loop_stay_in_one_phase():
    x = torch.randn(MAXR, 1, N)
    y = torch.zeros(MAXR, 1, N)
    H.two_per_rank(x, y, config=cfg(2))
    assert torch.equal(y[0], x[1]) and torch.equal(y[1], x[0])


def test_a_2d_tile_stored_at_a_3d_tensors_offsets():
    """``pl.store(row, [0, j, 0], out)`` of a [1, N] tile into a [1, 4, N] tensor (the reference's
    allgather consumer): the tensor's row-major 2-D view, row j."""
    x = torch.randn(4, N)
    y = torch.zeros(1, 4, N)
    H.store_rows(x, y, config=RunConfig(platform="a2a3sim", sim_seed=0))
    assert torch.equal(y[0], x)


def test_return_style_call_allocates_and_returns_the_out_tensor():
    from tests.distributed import kernels_dist as K
    from tests.distributed.test_distributed import fixed_order_sum, seeded_order

    x = torch.randn(MAXR, 1, N)
    y = K.allreduce_sum_host(x, config=cfg(2, 4))
    assert isinstance(y, torch.Tensor) and y.shape == (MAXR, 1, N)
    want = fixed_order_sum(x[:2], seeded_order(2, 4))
    assert torch.equal(y[0], want) and torch.equal(y[1], want)


def test_host_create_tensor_is_a_host_intermediate():
    x = torch.arange(MAXR * N, dtype=torch.float32).reshape(MAXR, 1, N)
    tmp = H.host_intermediate(x, torch.zeros(MAXR, 1, N), config=cfg(2))
    assert torch.equal(tmp[0], x[0] + x[1]) and torch.equal(tmp[1], tmp[0]) and not tmp[2:].any()
