"""Simulator shortcuts that must be unobservable: scratch clobbers nobody reads
(pypto.codegen.scratch) and global memory used in place of a copy (simulator._in_place_args)."""
import re
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


# ------------------------------------------------------------------ reductions of a lockstep gang
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int32])
def test_dead_scratch_reductions_of_gang_views_match_the_reference_order(dtype):
    """reduce_into with a dead scratch (clobber=False) on a gang's views (``[n, rows, cols]`` tiles
    at the same address of every core's memory): the tree in a private scratch, and max / min by one
    amax / amin where no row's extreme is a zero or a NaN (core._extreme_fast's check), give the
    documented order's bits -- rows with +-0 extremes, NaNs of several payloads and infs included --
    and leave the scratch tile untouched; odd, even and short rows."""
    g = torch.Generator().manual_seed(5)
    for n in (2, 3, 4, 6, 7, 64, 128):
        mem = torch.zeros(6, 4096, dtype=dtype)                 # 6 cores' memories
        x = mem[:, 0:4 * n].view(6, 4, n)
        tmp = mem[:, 1024:1024 + 4 * n].view(6, 4, n)
        dst = mem[:, 2048:2052].view(6, 4, 1)
        if dtype == torch.int32:
            x.copy_(torch.randint(-9, 9, x.shape, generator=g))
        else:
            x.copy_(torch.randn(x.shape, generator=g).to(dtype))
            x[0] = -x[0].abs()                                   # rows whose max is a zero of
            x[1] = x[1].abs()                                    # either sign, or whose min is
            zeros = torch.randint(0, 2, (2, 4, n), generator=g) * (torch.rand(2, 4, n, generator=g) < 0.3)
            x[:2][zeros == 1] = 0.0
            x[:2][(zeros == 0) & (torch.rand(2, 4, n, generator=g) < 0.3)] = -0.0
            x[2, 0, n - 1] = float("inf")
            if dtype == torch.float32:
                x[3, 3].view(torch.int32)[0] = 0x7FC00001        # NaNs of two payloads
                x[3, 3].view(torch.int32)[n - 1] = 0x7FC12345
                x[4, 0].view(torch.int32)[: n // 2] = 0x7FC00001  # ... meeting in every lane of the
                x[4, 0].view(torch.int32)[n // 2:] = 0x7FC12345   # first level's vector loop
            else:
                x[3, 3, 0] = float("nan")
        tmp.fill_(7)
        for kind in ("sum", "max", "min"):
            want = support._reduce_last_reference(x, kind, True, torch.empty_strided(x.shape, x.stride(), dtype=dtype))
            dst.fill_(3)
            support.reduce_into(dst, x, tmp, -1, kind, clobber=False)
            assert torch.equal(dst.view(torch.int16 if dtype.itemsize == 2 else torch.int32),
                               want.view(torch.int16 if dtype.itemsize == 2 else torch.int32)), (n, kind)
            assert (tmp == 7).all()
            clean = x.clone()
            if dtype != torch.int32:
                clean[clean.isnan()] = 1.0
                clean[clean == 0] = 2.0
            want = support._reduce_last_reference(clean, kind, True)
            support.reduce_into(dst, clean, tmp, -1, kind, clobber=False)
            assert torch.equal(dst, want), (n, kind)


# ------------------------------------------------------------------ fused transpose_view + move
def _special_bf16(shape, seed):
    """BF16 values with -0.0, subnormals, inf and NaN payloads among random ones (bits exactly kept by
    a transposing move)."""
    g = torch.Generator().manual_seed(seed)
    bits = torch.randint(-32768, 32768, shape, generator=g, dtype=torch.int32).to(torch.int16)
    return bits.view(torch.bfloat16)


def test_transposed_cube_operand_is_read_from_its_source():
    """pypto.codegen.scratch.fused_transposes: a transpose_view moved into Right and read only by the
    matmul after it: neither the view nor the move is made (no TILES entry, no copy), the matmul
    reads ``k_mat.transpose(-2, -1)`` (and ``q_mat`` for the Left move, left out too), and the product is the one of the materialised operand: the
    BLAS call of an independent FP32 oracle (BF16 values convert to FP32 exactly, so q @ k^T of the
    FP32 copies is the task's sgemm), in the lockstep and the task-by-task forms alike."""
    q = torch.randn(64, 64).to(torch.bfloat16)
    k = torch.randn(256, 64).to(torch.bfloat16)
    c = K.qk_transposed.compile(q, k, torch.zeros(64, 256))
    src = kernel_source(c)
    assert "transpose_view" not in src and "('Right'" not in src, src
    # kernel(), kernel_gang(): k_mat's load is left out too (only the matmul reads the tile, no
    # yield in between): the matmul reads the load's global-memory view, transposed
    # (and the gang's q_mat, loaded before a yield: a "oneload", q_mat_one)
    assert len(re.findall(r"matmul_into\(s, q_mat(_one)?, k_mat_gm(_\d+)?\.transpose\(-2, -1\)", src)) == 2, src
    assert "('Left'" not in src, src   # the Left move is left out too
    outs = []
    for cfg in (CFG, RunConfig(sim_seed=0, sim_batch=False), RunConfig(sim_seed=0, sim_lockstep=False)):
        out = torch.zeros(64, 256)
        c(q, k, out, config=cfg)
        outs.append(out)
    for i in range(4):
        for j in range(4):
            a = q[i * 16:(i + 1) * 16].float().contiguous()
            b = k[j * 64:(j + 1) * 64].float().t().contiguous()
            expect = torch.matmul(a, b)
            for out in outs:
                got = out[i * 16:(i + 1) * 16, j * 64:(j + 1) * 64]
                assert torch.equal(got.contiguous().view(torch.int32), expect.view(torch.int32))


def test_transposed_operand_read_by_two_matmuls_is_one_transposed_copy():
    """The move's result feeds two matmuls: the move is made, as one transposed copy from the view's
    source (the view itself is not made); both products as the oracle's."""
    q = _special_bf16((32, 64), 3)
    k = torch.randn(64, 64).to(torch.bfloat16)
    c = K.qk_right_read_twice.compile(q, k, torch.zeros(32, 64))
    src = kernel_source(c)
    assert "transpose_view" not in src and src.count(".copy_(k_mat.transpose(-2, -1))") == 2, src
    out = torch.zeros(32, 64)
    c(q, k, out, config=CFG)
    expect = torch.cat([torch.matmul(q[r:r + 16].float(), k.float().t().contiguous()) for r in (0, 16)])
    assert torch.equal(out.view(torch.int32), expect.view(torch.int32))


def test_transpose_view_read_elsewhere_keeps_its_copy():
    q = _special_bf16((16, 64), 1)
    k = _special_bf16((64, 64), 2)
    c = K.qk_transposed_read_twice.compile(q, k, torch.zeros(16, 64), torch.zeros(64, 64, dtype=torch.bfloat16))
    src = kernel_source(c)
    task = src.split("\nGANG = ")[0].split("def kernel(")[1]
    assert "kt.copy_(k_mat.transpose(-2, -1))" in task and ".copy_(kt)" in task, src
    s_out, kt_out = torch.zeros(16, 64), torch.zeros(64, 64, dtype=torch.bfloat16)
    c(q, k, s_out, kt_out, config=CFG)
    assert torch.equal(kt_out.view(torch.int16), k.t().contiguous().view(torch.int16))
    expect = torch.matmul(q.float(), k.float().t().contiguous())   # NaN payloads and all
    assert torch.equal(s_out.view(torch.int32), expect.view(torch.int32))


def test_fused_transposes_needs_adjacent_statements_and_no_other_reader():
    """The analysis on the compiled kernels: what is left out where (see the three kernels above)."""
    from pypto.codegen.scratch import fused_transposes
    from pypto.ir.visit import iter_calls

    def kinds(compiled):
        found = []
        for f in compiled.lowered.functions.values():
            fused = fused_transposes(f)
            found.append(sorted((c.op, fused[id(c)][0]) for _, c in iter_calls(f.body) if id(c) in fused))
        return [p for p in found if p]

    bf = torch.bfloat16
    q, k = torch.zeros(64, 64, dtype=bf), torch.zeros(256, 64, dtype=bf)
    # (k_mat's load too: the matmul reads its global-memory view; q_mat's is followed by k_mat's, a
    # yield: a "oneload", which a gang of one region makes for its first member alone)
    assert kinds(K.qk_transposed.compile(q, k, torch.zeros(64, 256))) == [
        [("tile.load", "gmload"), ("tile.load", "oneload"), ("tile.matmul", "operand"), ("tile.move", "dead"),
         ("tile.move", "dead"), ("tile.transpose_view", "view")]]
    # the two Left moves share a buffer: the second move overwrites it (a write, not a read) and its
    # matmul reads q1's view instead, so the first is left out too, as are both q loads; k_mat's
    # load is read by the transposed copy (two matmuls read kt): made
    assert kinds(K.qk_right_read_twice.compile(q[:32], k[:64], torch.zeros(32, 64))) == [
        [("tile.load", "gmload"), ("tile.load", "gmload"), ("tile.matmul", "operand"), ("tile.matmul", "operand"),
         ("tile.move", "dead"), ("tile.move", "dead"), ("tile.move", "move"), ("tile.transpose_view", "view")]]
    c = K.mm_load_between.compile(q[:16], k[:64, :32], torch.zeros(16, 32))
    assert kinds(c) == [[("tile.load", "gmload"), ("tile.matmul", "operand"), ("tile.move", "dead")]]
    c = K.qk_transposed_read_twice.compile(q[:16], k[:64], torch.zeros(16, 64), torch.zeros(64, 64, dtype=bf))
    # the view is stored too: it is made; both staging moves are left out (the matmul reads the view);
    # q_mat's load is a "oneload" (k_mat's, read by the view's copy, is made)
    assert kinds(c) == [[("tile.load", "oneload"), ("tile.matmul", "operand"), ("tile.move", "dead"),
                         ("tile.move", "dead")]]


def test_move_with_a_load_before_its_matmul_is_made():
    """A load between a staging move and its matmul (which the planner may place over the moved
    tile's source): that move is made and the product is right; the move right before the matmul is
    left out, and so is the load of its source (the matmul reads b's global-memory view)."""
    a = _special_bf16((16, 64), 4)
    b = torch.randn(64, 32).to(torch.bfloat16)
    c = K.mm_load_between.compile(a, b, torch.zeros(16, 32))
    task = kernel_source(c).split("\nGANG = ")[0]
    assert "a_l.copy_(a_mat)" in task and "matmul_into(" in task and ", b_mat_gm)" in task, task
    out = torch.zeros(16, 32)
    c(a, b, out, config=CFG)
    assert torch.equal(out.view(torch.int32), torch.matmul(a.float(), b.float()).view(torch.int32))


# ------------------------------------------------------------------ a scratch overwritten before any read
def _incore(compiled):
    fs = compiled.lowered.functions
    return next(f for f in (fs.values() if isinstance(fs, dict) else fs) if f.name.endswith("_incore_0"))


def test_scratch_reused_by_a_later_load_is_dead_and_the_result_exact():
    """The reduction's scratch buffer is reused by a later BF16 load (its first half) and nothing
    reads the rest: the load overwrites before it reads, so the clobber is dead (it used to count as
    a read), in both forms; the result is the reference order's, computed independently."""
    from pypto.codegen import scratch as SC
    a = torch.randn(16, 256)
    b = torch.randn(16, 256).to(torch.bfloat16)
    c = K.sum_then_reload_scratch.compile(a, b, torch.zeros(16, 256))
    src = kernel_source(c)
    tiles = src.split("TILES = [")[1].split("]\n")[0]
    # the precondition of the test: tmp and the load share bytes (the planner reused the buffer)
    assert "('Vec', 16384, (16, 256), torch.float32),  # v[1]: tmp" in tiles, tiles
    assert "('Vec', 16384, (16, 256), torch.bfloat16)" in tiles, tiles
    assert src.count("clobber=False") == 2, src
    out = torch.zeros(16, 256)
    c(a, b, out, config=CFG)
    s = support._reduce_last_reference(a * a, "sum", True)
    assert torch.equal(out.view(torch.int32), (b.float() * s).view(torch.int32))
    # the analysis itself, on the kernel's statements: the same overwrite in a branch (not run
    # unconditionally), or a read of the reused bytes before the overwrite, keep the clobber
    f = _incore(c)
    flat: list = []
    SC._flatten(f.body, -1, flat)
    ops = [SC._call(s).op if SC._call(s) else None for s, _ in flat]
    red, load, cast = ops.index("tile.row_sum"), ops.index("tile.load", 1), ops.index("tile.cast")
    tmp = SC._call(flat[red][0]).args[1]
    rng = SC._range(tmp)
    top = SC._top_level(f.body, set())
    assert SC._dead_after(flat, red, rng, top)
    assert not SC._dead_after(flat, red, rng, top - {id(flat[load][0])})          # load in a branch
    swapped = flat[:load] + [flat[cast], flat[load]] + flat[cast + 1:]           # cast reads first
    assert not SC._dead_after(swapped, red, rng, top)


def test_byte_range_difference():
    from pypto.codegen.scratch import _minus
    r = ("Vec", 100, 200)
    assert _minus(r, ("Vec", 0, 100)) == [r]
    assert _minus(r, ("Mat", 120, 130)) == [r]
    assert _minus(r, ("Vec", 120, 130)) == [("Vec", 100, 120), ("Vec", 130, 200)]
    assert _minus(r, ("Vec", 50, 150)) == [("Vec", 150, 200)]
    assert _minus(r, ("Vec", 150, 250)) == [("Vec", 100, 150)]
    assert _minus(r, ("Vec", 100, 200)) == []
