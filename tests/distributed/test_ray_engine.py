"""The Ray engine (RunConfig(distributed_backend="ray")): a 4-rank program with every kind of window
traffic gives the same bits on Ray as in-process for the same seed, and both equal the seed's
fixed-order reductions; a deadlock on Ray names the ranks. One local Ray cluster (2 CPUs, a small
object store) is started for the module and one pool of 4 rank actors serves every test."""
import os

import pytest
import torch

from pypto.errors import SimulationError
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.runtime import RunConfig

from tests.distributed import kernels_dist as K
from tests.distributed import kernels_host as H
from tests.distributed.test_distributed import fixed_order_sum, seeded_order, spread

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow   # a local Ray cluster and its actors start: ~45 s on 2 CPUs
N, MAXR = K.N, K.MAXR


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    from pypto.runtime.distributed import ray_engine

    started = not ray.is_initialized()
    if started:
        os.environ.setdefault("PYPTO_RAY_NUM_CPUS", "2")
        os.environ.setdefault("PYPTO_RAY_OBJECT_STORE_MB", "128")
        ray_engine.ensure_ray()
    yield
    ray_engine.shutdown()
    if started:
        ray.shutdown()


def cfg(backend: str, seed: int | None = 3) -> RunConfig:
    return RunConfig(platform="a2a3sim", sim_seed=seed, distributed_backend=backend,
                     distributed_config=DistributedConfig(device_ids=list(range(4))))


def run(backend: str, x: torch.Tensor, seed: int = 3):
    outs = (torch.zeros(MAXR, 1, N), torch.zeros(MAXR, 2, N), torch.zeros(MAXR, 1, N), torch.zeros(MAXR, 1, N))
    H.every_traffic(x, *outs, config=cfg(backend, seed))
    return outs


def test_four_ranks_bit_identical_in_process_and_on_ray():
    x = spread(4)
    here = run("inprocess", x)
    there = run("ray", x)
    for a, b in zip(here, there):
        assert torch.equal(a.view(torch.int32), b.view(torch.int32))
    y, z, u, v = there
    first, second = seeded_order(4, 3), None
    # the run draws one order per collective: the kernel allreduce first, the host one second
    import random
    rng = random.Random(3)
    o1 = list(range(4))
    rng.shuffle(o1)
    o2 = list(range(4))
    rng.shuffle(o2)
    assert o1 == first
    for r in range(4):
        assert torch.equal(y[r], fixed_order_sum(x, o1)), r
        assert torch.equal(v[r], fixed_order_sum(x, o2)), r
        assert torch.equal(z[r, 0], x[(r + 3) % 4, 0]) and torch.equal(z[r, 1], x[(r + 3) % 4, 0])
        assert torch.equal(u[r], x[(r + 3) % 4])


def test_ray_deadlock_names_every_rank():
    with pytest.raises(SimulationError, match="deadlock") as ei:
        H.stuck_four(torch.zeros(MAXR, 1, N), config=cfg("ray", 0))
    assert all(f"rank {r} in pld.system.wait" in str(ei.value) for r in range(4)), str(ei.value)




def test_fuzz_command_on_ray(tmp_path):
    """``pypto fuzz --backend ray``: the seeds run as Ray tasks on the same cluster."""
    import json

    from cli_cases import ADD_CASE
    from inproc import run_main
    from pypto.cli import main

    script = tmp_path / "cases.py"
    script.write_text(ADD_CASE)
    p = run_main(main, "fuzz", str(script), "--seeds", "2", "--backend", "ray", "--json")
    assert p.returncode == 0, p.stdout + p.stderr[-2000:]
    d = json.loads(p.stdout)
    assert d["clean"] is True and d["seeds"] == [0, 1] and d["golden_checked"], d


def test_sub_world_groups_on_ray():
    """A window used by ranks {1, 2} is a group of two on the Ray ranks too (its members travel
    with the window), so rank 2's peer 0 is rank 1 there as in-process."""
    from pypto import ir

    x = torch.randn(3, 1, N)
    got = {}
    for backend in ("inproc", "ray"):
        compiled = ir.compile(K.ProgramSubGroup, platform="a2a3sim",
                              distributed_config=DistributedConfig(device_ids=[0, 1, 2]))
        ya, yb = torch.zeros(3, 1, N), torch.zeros(3, 1, N)
        ia, ib = torch.zeros(3, 1, 2, dtype=torch.int32), torch.zeros(3, 1, 2, dtype=torch.int32)
        run_cfg = RunConfig(platform="a2a3sim", sim_seed=3, distributed_backend=None if backend == "inproc" else backend,
                            distributed_config=DistributedConfig(device_ids=[0, 1, 2]))
        compiled(x, ya, yb, ia, ib, config=run_cfg)
        got[backend] = (ya, yb, ia, ib)
        assert torch.equal(yb[1], x[2]) and torch.equal(yb[2], x[1])
    assert all(torch.equal(a, b) for a, b in zip(got["inproc"], got["ray"]))


def test_per_dispatch_dfx_on_ray_matches_in_process():
    """Each dispatch's DFX outputs (a chip swimlane, which brings its task graph) land in
    ``dfx_outputs/rank{r}/d{k}`` on Ray as in-process: the actor writes them on its node and ships
    them back. Same directories, same files, and the same task graphs (deps.json)."""
    import json

    from pypto import ir

    files = {}
    for backend in (None, "ray"):
        compiled = ir.compile(K.ProgramHostScale, platform="a2a3sim",
                              distributed_config=DistributedConfig(device_ids=[0, 1]))
        base = compiled.output_dir / "dfx_outputs"
        import shutil

        shutil.rmtree(base, ignore_errors=True)
        x, y = torch.randn(2, 1, N), torch.zeros(2, 1, N)
        compiled(x, y, config=RunConfig(platform="a2a3sim", sim_seed=1, enable_chip_swimlane=True,
                                        distributed_backend=backend,
                                        distributed_config=DistributedConfig(device_ids=[0, 1])))
        assert torch.equal(y[0], x.max(dim=0).values)
        files[backend] = {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}
    assert sorted(files[None]) == sorted(files["ray"])
    lanes = [k for k in files["ray"] if k.endswith("chip_swimlane_records.json")]
    assert len(lanes) == 6 and all(files["ray"][k] for k in lanes)   # the swimlane (with dep_gen) per dispatch
    deps = [k for k in files["ray"] if k.endswith("deps.json")]
    assert len(deps) == 6   # fill, the host allreduce, drain on each of 2 ranks
    for k in deps:
        assert json.loads(files["ray"][k]) == json.loads(files[None][k]), k
    progs = [json.loads(files["ray"][f"rank0/d{i}/dispatch_program.json"])["program"] for i in range(3)]
    assert progs[0] == "fill_orch" and progs[-1] == "drain_orch"
