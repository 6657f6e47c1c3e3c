"""AutoTileMatmulL0's K loop in the reference's form, and the user pipeline around it: a
``pl.pipeline(0, K, k, stage=2)`` loop from an Acc placeholder (the roofline chooser's K block
``k``, even when the operands fit L0 whole), kept a pipeline loop until LowerPipelineLoops; a
``pl.create_tensor`` accumulator carried through a user ``pl.pipeline`` becomes an Acc tile.

Oracles: the cube's K-blocked FP32 order computed with torch (bit for bit), the reference
executor (bit for bit) and float64 (within the FP32 accumulation bound)."""
from __future__ import annotations

import pytest
import torch

import kernels_mm_pipeline as K
import ops_harness as H
from pypto.backend import l0_tile_chooser as ch
from pypto.backend.platforms import get_platform
from pypto.frontend.specialize import specialize
from pypto.ir import assert_structural_equal, run_pipeline
from pypto.language import parse
from pypto.language.enums import MemorySpace as MS
from pypto.runtime import RunConfig


def _chooser_k(platform, m, k, n, nbytes):
    p = get_platform(platform)
    cfg = ch.L0TileConfig()
    cfg.M, cfg.K, cfg.N = m, k, n
    cfg.l0a_bytes, cfg.l0b_bytes, cfg.l0c_bytes = p.capacity(MS.Left), p.capacity(MS.Right), p.capacity(MS.Acc)
    cfg.bytes_a = cfg.bytes_b = nbytes
    cfg.allow_a_stationary = cfg.allow_b_stationary = cfg.allow_k_boundary = True
    r = ch.choose_l0_tile(cfg)
    assert (r.m, r.n) == (m, n)
    return r.k


def _blocked(a, b, kc):
    """FP32 products of ``kc``-wide K blocks (one BLAS call each on contiguous FP32 copies, as the
    simulator's cube op), added in K order."""
    acc = None
    for s in range(0, a.shape[1], kc):
        p = torch.matmul(a[:, s:s + kc].float().contiguous(), b[s:s + kc].float().contiguous())
        acc = p if acc is None else acc + p
    return acc


CASES = [(16, 192, 128, 8), (16, 256, 256, 3)]   # (M, chunk, N, chunks)


@pytest.mark.parametrize("platform", H.PLATFORMS)
@pytest.mark.parametrize("m, chunk, n, chunks", CASES)
def test_values(m, chunk, n, chunks, platform):
    g = torch.Generator().manual_seed(m + chunks)
    a = torch.randn(m, chunk * chunks, generator=g).bfloat16()
    b = torch.randn(chunk * chunks, n, generator=g).bfloat16()
    out = torch.zeros(m, n)
    kernel = K.chunked_mm if chunk == 192 else K.chunked_mm_256
    kernel(a, b, out, config=RunConfig(platform=platform))
    kc = _chooser_k(platform, m, chunk, n, 2)
    assert kc < chunk   # the per-chunk matmul is K-tiled although it fits L0
    H.assert_same_bits(out, _blocked(a, b, kc), f"K blocks of {kc} accumulated in order")
    ref = torch.zeros(m, n)
    ns: dict = {}
    from pypto.debug.torch_codegen import torch_codegen
    exec(compile(torch_codegen(kernel.lower(a, b, ref, config=RunConfig(platform=platform))), "<ref>", "exec"), ns)
    ns[kernel.__name__](a, b, ref)
    H.assert_same_bits(out, ref, "simulator vs reference executor")
    f64 = a.double() @ b.double()
    bound = (a.double().abs() @ b.double().abs()) * a.shape[1] * 2.0 ** -23
    assert ((out.double() - f64).abs() <= bound).all()


def test_structure_and_dumps():
    a, b = torch.zeros(16, 192 * 8).bfloat16(), torch.zeros(192 * 8, 128).bfloat16()
    prog = specialize(K.chunked_mm, (a, b, torch.zeros(16, 128)), {}).program
    stages = run_pipeline(prog, {"platform": "a2a3sim"}).stages
    for name, program in stages:   # every pass dump parses back to the same program
        assert_structural_equal(parse(program.as_python()), program)
    st = dict(stages)
    tiled = st["AutoTileMatmulL0"].as_python()
    lines = tiled.splitlines()
    outer = [i for i, s in enumerate(lines) if "pl.pipeline(8, stage=2" in s]
    inner = [i for i, s in enumerate(lines) if "pl.pipeline(0, 192, 96, stage=2" in s]
    assert len(outer) == 1 and len(inner) == 2, tiled   # both if/else branches get a K loop
    indent = len(lines[outer[0]]) - len(lines[outer[0]].lstrip())
    assert all(i > outer[0] and len(lines[i]) - len(lines[i].lstrip()) > indent for i in inner)
    assert "init_cond=" in tiled and "target_memory=pl.Mem.Acc" in tiled
    assert "pl.pipeline" not in st["LowerPipelineLoops"].as_python()


@pytest.mark.parametrize("platform", H.PLATFORMS)
def test_split_k_loop_tiled_per_output_tile(platform):
    g = torch.Generator().manual_seed(5)
    a = torch.randint(-3, 4, (16, 1024), generator=g, dtype=torch.int8)
    b = torch.randint(-3, 4, (1024, 1152), generator=g, dtype=torch.int8)
    out = torch.zeros(16, 1152, dtype=torch.int32)
    K.split_k_wide(a, b, out, config=RunConfig(platform=platform))
    assert torch.equal(out, a.int() @ b.int())   # integer accumulation: exact
    if platform == "a2a3sim":
        prog = specialize(K.split_k_wide, (a, b, out), {}).program
        tiled = dict(run_pipeline(prog, {"platform": platform}).stages)["AutoTileMatmulL0"].as_python()
        # no full [16, 1152] accumulator is left; one K loop per output tile, its loads narrowed
        assert "pl.tile.create([16, 1152]" not in tiled, tiled
        loops = tiled.count("pl.pipeline(8, stage=2")
        assert loops >= 2 and tiled.count("pl.tile.store(") == 2 * loops, tiled
