"""Chip programs written inline in a HOST orchestrator (``with pl.at(level=pl.Level.CHIP)``): each
block is outlined into an Orchestration function of the program taking the host parameters it
reads; block k runs on chip k % ranks; a value the host reads afterwards is the block's output."""
import json

import pytest
import torch

from pypto import ir
from pypto.errors import PyptoError
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.runtime import RunConfig

from tests.distributed import kernels_dist as K


@pytest.mark.parametrize("nranks", [1, 2])
def test_inline_chip_blocks_run_on_successive_chips(nranks):
    compiled = ir.compile(K.ProgramInlineChips, platform="a2a3sim",
                          distributed_config=DistributedConfig(device_ids=list(range(nranks))))
    a, b = torch.randn(16, 64), torch.randn(16, 64)
    s, d = torch.zeros(16, 64), torch.zeros(16, 64)
    res = compiled(a, b, s, d, config=RunConfig(platform="a2a3sim", enable_dep_gen=True))
    assert torch.equal(s, a + b) and torch.equal(d, a - b) and res is s
    base = compiled.output_dir / "dfx_outputs"
    where = {json.loads(p.read_text())["program"]: p.parent.relative_to(base).as_posix()
             for p in base.glob("rank*/d*/dispatch_program.json")}
    assert where == ({"host_chip0": "rank0/d0", "host_chip1": "rank1/d0"} if nranks == 2 else
                     {"host_chip0": "rank0/d0", "host_chip1": "rank0/d1"})


def _load(tmp_path, body: str):
    import importlib.util
    import sys

    src = f'''import pypto.language as pl


@pl.program
class P:
    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, a: pl.Tensor[[16, 64], pl.FP32], s: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
{body}'''
    path = tmp_path / "inline_bad.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("inline_bad", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["inline_bad"] = mod
    spec.loader.exec_module(mod)


def test_a_block_reading_a_host_local_is_located(tmp_path):
    with pytest.raises(PyptoError, match="reads the host variable 'x'") as e:
        _load(tmp_path, "        x = a\n        with pl.at(level=pl.Level.CHIP):\n"
                        "            with pl.at(level=pl.Level.CORE_GROUP):\n"
                        "                r = pl.assemble(s, pl.add(x, x), [0, 0])\n        return r\n")
    assert "inline_bad.py:9:" in str(e.value)


def test_a_block_result_that_is_no_output_is_located(tmp_path):
    with pytest.raises(PyptoError, match="host reads 'r' after an inline") as e:
        _load(tmp_path, "        with pl.at(level=pl.Level.CHIP):\n"
                        "            with pl.at(level=pl.Level.CORE_GROUP):\n"
                        "                r = pl.add(a, a)\n                pl.assemble(s, r, [0, 0])\n        return r\n")
    assert "inline_bad.py:8:" in str(e.value)
