"""pl.cluster(): dispatches inside run as they would outside it (bit for bit); misuse is located."""
import pytest
import torch

import pypto.ir as ir
import pypto.language as pl
from pypto.errors import ParserError, ParserTypeError
from pypto.runtime.golden import TensorSpec

from tests.mixed import kernels_cluster as K


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_cluster_scopes_run_their_dispatches_bit_exact(platform):
    c = ir.compile(K.ClusterDispatch, platform=platform)
    g = torch.Generator().manual_seed(0)
    a = torch.randint(-4, 5, (4 * K.R, K.C), generator=g).float()
    w = torch.randint(-4, 5, (K.C, K.C), generator=g).float()
    cc, d = torch.zeros(4 * K.R, K.C), torch.zeros(4 * K.R, K.C)
    c(a, w, cc, d)
    want_c = a * 2 + torch.arange(4).repeat_interleave(K.R)[:, None].float()
    assert torch.equal(cc, want_c)
    assert torch.equal(d, want_c @ w + 1)   # small integers: every fp32 sum is exact


def test_cluster_dump_reparses():
    text = K.ClusterDispatch.as_python()
    assert "pl.cluster" not in text and "pl.spmd_submit(self.scale, a, c, core_num=4)" in text
    assert pl.parse(text).as_python() == text


def _parse(body: str):
    src = f'''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 16], pl.FP32], o: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
{body}
        return o
'''
    return pl.parse(src)


@pytest.mark.parametrize("body, cls, msg", [
    ("        with pl.cluster(1):\n            o = pl.add(a, a)", ParserTypeError, "pl.cluster takes one keyword"),
    ("        with pl.cluster(name_hint=3):\n            o = pl.add(a, a)", ParserTypeError,
     "name_hint must be an identifier string"),
    ("        with pl.cluster() as c:\n            o = pl.add(a, a)", ParserError, "binds nothing"),
])
def test_cluster_misuse_is_located(body, cls, msg):
    with pytest.raises(cls) as e:
        _parse(body)
    assert msg in str(e.value) and ":8:" in str(e.value)


def test_tensor_spec_create_tensor_is_materialize():
    s = TensorSpec("x", [2, 3], torch.float32, init_value=1.5)
    assert torch.equal(s.create_tensor(), torch.full((2, 3), 1.5))
