"""The DFX outputs of a multi-rank run are filed per dispatch, ``dfx_outputs/rank{r}/d{k}`` (``k``
counts the card's dispatches of the run, restarting each run), each with a ``dispatch_program.json``
naming what ran there; a swimlane co-enables dep_gen."""
import json

import torch

from pypto import ir
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.runtime import RunConfig

from tests.distributed import kernels_dist as K
from tests.distributed.kernels_dist import N


def _compiled():
    return ir.compile(K.ProgramHostScale, platform="a2a3sim", distributed_config=DistributedConfig(device_ids=[0, 1]))


def test_each_dispatch_has_its_own_dfx_directory():
    compiled = _compiled()
    base = compiled.output_dir / "dfx_outputs"
    for _ in range(2):   # a second run restarts at d0 (and rewrites the same directories)
        x, y = torch.randn(2, 1, N), torch.zeros(2, 1, N)
        compiled(x, y, config=RunConfig(platform="a2a3sim", enable_dep_gen=True))
        assert torch.equal(y[1], x.max(dim=0).values)
    for r in range(2):
        dirs = sorted(p.name for p in (base / f"rank{r}").iterdir())
        programs = [json.loads((base / f"rank{r}" / d / "dispatch_program.json").read_text())["program"] for d in dirs]
        # fill, the host allreduce's next level, drain: in dispatch order
        assert dirs == ["d0", "d1", "d2"] and programs == ["fill_orch", "builtin.tensor.allreduce__max__fp32",
                                                           "drain_orch"], programs
        for d in dirs:
            deps = json.loads((base / f"rank{r}" / d / "deps.json").read_text())
            assert deps   # every dispatch's own task graph


def test_a_swimlane_brings_its_task_graph():
    compiled = _compiled()
    x, y = torch.randn(2, 1, N), torch.zeros(2, 1, N)
    compiled(x, y, config=RunConfig(platform="a2a3sim", enable_chip_swimlane=True))
    d = compiled.output_dir / "dfx_outputs" / "rank0" / "d0"
    assert (d / "chip_swimlane_records.json").stat().st_size > 0 and (d / "deps.json").stat().st_size > 0
