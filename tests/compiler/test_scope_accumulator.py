"""A ``pl.create_tensor`` made in a ``pl.at`` scope, carried through a K loop with a first-iteration
branch and assembled after the scope: the kernel's InOut workspace becomes a view of the target
region (FuseCreateAssembleToView), results bit-equal to an int64 torch oracle (int8 x int8 -> int32
is exact); the form it cannot rewrite is refused with a located error that says how to rewrite."""
from __future__ import annotations

import pytest
import torch

import kernels_scope_accumulator as K
from pypto.errors import PyptoError
from pypto.runtime import RunConfig

PLATFORMS = ("a2a3sim", "a5sim")


def _int8(*shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-128, 128, shape, dtype=torch.int8, generator=g)


def _oracle(x, w_nk):
    """x [M, K] @ w_nk[N, K]^T in int64, as int32 (no overflow at these sizes)."""
    return (x.long() @ w_nk.long().T).to(torch.int32)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_batch1_pipeline_with_transposed_weight(platform):
    x, w = _int8(1, K.T, K.K, seed=1), _int8(1, K.N, K.K, seed=2)
    out = torch.full((1, K.T, K.N), -7, dtype=torch.int32)
    K.batch1_pipeline(x, w, out, config=RunConfig(platform=platform))
    assert torch.equal(out[0], _oracle(x[0], w[0]))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_2d_range_loop_and_explicit_assemble(platform):
    x, w = _int8(K.T, K.K, seed=3), _int8(K.K, K.N, seed=4)
    out = torch.full((K.T, K.N), -7, dtype=torch.int32)
    K.plain_2d_range(x, w, out, config=RunConfig(platform=platform))
    assert torch.equal(out, _oracle(x, w.T))


def test_one_scope_per_loop_step_at_row_offsets():
    x, w = _int8(K.B * K.T, K.K, seed=5), _int8(K.N, K.K, seed=6)
    out = torch.full((K.B * K.T, K.N), -7, dtype=torch.int32)
    K.rows_per_step(x, w, out, config=RunConfig(platform="a2a3sim"))
    assert torch.equal(out, _oracle(x, w))


def test_assembled_twice_is_refused_with_a_rewrite_hint():
    x, w = _int8(K.T, K.K, seed=7), _int8(K.K, K.N, seed=8)
    with pytest.raises(PyptoError, match="Misplaced tensor op 'tensor.assemble'") as e:
        K.assembled_twice(x, w, torch.zeros(K.T, K.N, dtype=torch.int32), config=RunConfig(platform="a2a3sim"))
    msg = str(e.value)
    assert "kernels_scope_accumulator.py" in msg and "out[:, :] = acc" in msg
    assert "inside the pl.at scope" in msg


def test_out_rebound_to_a_copy_is_diagnosed(capsys):
    """``out = acc`` (a plain copy, which SSA form drops) on an Out parameter warns PTO-W001 at the
    assignment; the forms that write ``out`` above do not."""
    x, w = _int8(K.T, K.K, seed=9), _int8(K.K, K.N, seed=10)
    cfg = RunConfig(platform="a2a3sim")
    compiled = K.out_rebound_to_accumulator.compile(x, w, torch.zeros(K.T, K.N, dtype=torch.int32), config=cfg)
    assert "PTO-W001" in {d.code for d in compiled.diagnostics}
    err = capsys.readouterr().err
    assert "[PTO-W001]" in err and "out = acc" in err and "kernels_scope_accumulator.py:" in err
    compiled = K.plain_2d_range.compile(x, w, torch.zeros(K.T, K.N, dtype=torch.int32), config=cfg)
    assert "PTO-W001" not in {d.code for d in compiled.diagnostics}
