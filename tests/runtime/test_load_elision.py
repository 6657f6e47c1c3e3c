"""A cube operand's load that only the matmul right after it reads, with no yield in between, is
left out: the matmul reads the load's global-memory view (pypto.codegen.scratch.fused_transposes'
"gmload", pypto.ops.support.core.load_view, gang_access.gang_load_view_at); with yields in
between, a gang whose members all load one region loads it into the first member's tile alone
("oneload", gang_access.gang_load_one_at). Unobservable: the products are the independent oracle's bits (the task's sgemm of FP32 copies: BF16 converts to FP32
exactly) in the lockstep and the task-by-task forms; loads whose tile is read again, or that a
yield separates from the matmul, are made."""
import dataclasses
import re
from pathlib import Path

import pytest
import torch

from pypto.codegen import scratch
from pypto.ir.nodes import AssignStmt, Call
from pypto.ops import support
from pypto.runtime import RunConfig

import kernels_load_elision as K

CONFIGS = (RunConfig(sim_seed=0), RunConfig(sim_seed=0, sim_batch=False), RunConfig(sim_seed=0, sim_lockstep=False))


def kernel_source(compiled) -> str:
    return "".join(Path(compiled.output_dir, p).read_text() for p in compiled.meta["kernels"].values())


def _bf16(shape, seed, special=False):
    """BF16 values; ``special``: any bit pattern (NaN payloads, infs, -0, subnormals) among them."""
    g = torch.Generator().manual_seed(seed)
    if special:
        bits = torch.randint(-32768, 32768, shape, generator=g, dtype=torch.int32).to(torch.int16)
        return bits.view(torch.bfloat16)
    return torch.randn(shape, generator=g).to(torch.bfloat16)


def _chunked(x: torch.Tensor, w: torch.Tensor, kc: int = 128) -> torch.Tensor:
    """The oracle: per K chunk the FP32 product of fresh FP32 copies (the task's BLAS call), summed
    into the accumulator chunk by chunk in FP32 (matmul, then matmul_acc)."""
    acc = None
    for c in range(0, x.shape[1], kc):
        p = torch.matmul(x[:, c:c + kc].float().contiguous(), w[c:c + kc].float().contiguous())
        acc = p if acc is None else acc + p
    return acc


def _spy(monkeypatch):
    """Count what the gang's left-out loads hand the matmul: 'view' (a global-memory view), 'stride0'
    (one region every member reads) or 'load' (the load made, its tile returned)."""
    seen = []

    def spying(real):
        def spy(dst, *args):
            r = real(dst, *args)
            seen.append("load" if r is dst else ("stride0" if r.stride(0) == 0 else "view"))
            return r
        return spy
    for name in ("gang_load_view_at", "gang_load_view"):
        monkeypatch.setattr(support, name, spying(getattr(support, name)))
    return seen


def _spy_one(monkeypatch):
    """Count what the gang's "oneload"s hand the matmul: 'one' (the first member's tile repeated) or
    'load' (the load made, its tile returned)."""
    seen = []

    def spying(real):
        def spy(dst, *args):
            r = real(dst, *args)
            seen.append("load" if r is dst else "one")
            assert r is dst or (r.stride(0) == 0 and r.data_ptr() == dst.data_ptr())
            return r
        return spy
    for name in ("gang_load_one_at", "gang_load_one"):
        monkeypatch.setattr(support, name, spying(getattr(support, name)))
    return seen


def _run(compiled, args, outs):
    results = []
    for cfg in CONFIGS:
        fresh = [torch.zeros_like(o) for o in outs]
        compiled(*args, *fresh, config=cfg)
        results.append(fresh)
    return results


@pytest.mark.parametrize("special", [False, True])
@pytest.mark.parametrize("case", ["columns", "blocks", "shared"])
def test_left_out_weight_loads_give_the_oracle_bits(case, special, monkeypatch):
    """The weight load right before each matmul is left out in both forms (the activation's, a yield
    before it, is made); the outputs are the oracle's bits in all three run forms. The gang's views:
    column blocks (rows apart: loaded first, cheaper than converting the strided view), contiguous
    blocks (the view), one region every member reads (a stride-0 view, converted once)."""
    x = _bf16((64 if case == "shared" else 16, 512), 1, special)
    if case == "columns":
        w = _bf16((512, 256), 2, special)
        kern, out = K.proj_columns, torch.zeros(16, 256)
        expect = _chunked(x, w)
    elif case == "blocks":
        w = _bf16((1024, 128), 2, special)
        kern, out = K.proj_blocks, torch.zeros(16, 256)
        expect = torch.cat([_chunked(x, w[:512]), _chunked(x, w[512:])], dim=1)
    else:
        w = _bf16((512, 128), 2, special)
        kern, out = K.proj_shared, torch.zeros(64, 128)
        expect = _chunked(x, w)
    c = kern.compile(x, w, out)
    src = kernel_source(c)
    task, gang = src.split("\nGANG = ")
    # the first chunk's and the loop's weight loads; the activation loads are made
    assert task.count("_pto.load_view(w0, w, ") == 2 and task.count("_pto.load_into(x0, x, ") == 2, task
    # (offsets of the task's index j: the general form; of constants and loop variables: ``_at``)
    assert len(re.findall(r"_pto\.gang_load_view(_at)?\(w0, ", gang)) == 2 and gang.count("direct=2)") == 2, gang
    # the staging moves are left out in the first chunk too (the loop's moves overwrite the same
    # Left / Right buffers, a write and not a read)
    assert "('Left'" not in src and "('Right'" not in src, src
    # the activation loads (a yield before the matmul, nothing touching the tile in between): a
    # "oneload" in the gang form, the plain load in the task form -- the first chunk's too, whose
    # buffer the loop's load overwrites before its matmul reads it (a read that cannot see it)
    assert len(re.findall(r"x0_one(_\d+)? = _pto\.gang_load_one(_at)?\(x0, ", gang)) == 2, gang
    seen, ones = _spy(monkeypatch), _spy_one(monkeypatch)
    for got in _run(c, (x, w), (out,)):
        assert torch.equal(got[0].view(torch.int32), expect.view(torch.int32))
    want = {"columns": "load", "blocks": "view", "shared": "stride0"}[case]
    assert seen and set(seen) == {want}, seen
    # every task reads the same activation region, but in "shared" each its own rows
    assert ones and set(ones) == {"load" if case == "shared" else "one"}, ones


def test_a_tile_read_again_keeps_its_load():
    """The weight tile feeds a second matmul after a store: its load is made (and its staging
    moves, left out, read the tile); the second activation's load, right before its matmul, is not."""
    x, w = _bf16((32, 128), 3, True), _bf16((128, 128), 4, True)
    c = K.weight_read_later.compile(x, w, torch.zeros(32, 128))
    task, gang = kernel_source(c).split("\nGANG = ")
    assert "_pto.load_into(wt, w, [0, 0], None)" in task and "load_view(wt" not in task, task
    assert "load_view(x0, x, [16, 0], None)" in task, task
    # the gang form: wt is loaded whole; x0's first load (only the first matmul reads it): a "oneload"
    assert "_pto.gang_load_at(wt, P, _c, [0, 0], 1)" in gang and "gang_load_one_at(x0, P, _c, [0, 0], 0)" in gang, gang
    expect = torch.cat([torch.matmul(x[:16].float(), w.float()), torch.matmul(x[16:].float(), w.float())])
    for got in _run(c, (x, w), (torch.zeros(32, 128),)):
        assert torch.equal(got[0].view(torch.int32), expect.view(torch.int32))


def test_a_yield_between_load_and_matmul_keeps_the_load():
    """The weight load is followed by the activation's (a global-memory access: a yield, where other
    tasks run and may write what was read): made; the activation's is left out."""
    x, w = _bf16((16, 128), 5, True), _bf16((128, 128), 6, True)
    c = K.weight_then_x.compile(x, w, torch.zeros(16, 128))
    task = kernel_source(c).split("\nGANG = ")[0]
    assert "_pto.load_into(wt, w, [0, 0], None)" in task and "x0_gm = _pto.load_view(x0, x" in task, task
    expect = torch.matmul(x.float(), w.float())
    for got in _run(c, (x, w), (torch.zeros(16, 128),)):
        assert torch.equal(got[0].view(torch.int32), expect.view(torch.int32))


def _stmts(stmts):
    for s in stmts:
        yield s
        for attr in ("body", "then_body", "else_body"):
            yield from _stmts(getattr(s, attr, ()))


def test_a_reader_of_the_same_bytes_through_another_tile_keeps_the_load():
    """Liveness is by bytes of the planned buffers, not by Var: a later statement reading another
    tile that the memory planner placed over the loaded one (a different Var, the same address)
    keeps the load. The kernel with x0's load left out, then the same kernel with a move of such an
    alias appended after the matmul."""
    x, w = torch.zeros(16, 128, dtype=torch.bfloat16), torch.zeros(128, 128, dtype=torch.bfloat16)
    c = K.weight_then_x.compile(x, w, torch.zeros(16, 128))
    (f,) = [f for f in c.lowered.functions.values()
            if any(isinstance(s, AssignStmt) and isinstance(s.value, Call) and s.value.op == "tile.matmul"
                   for s in _stmts(f.body))]
    loads = {s.var.name: s for s in _stmts(f.body)
             if isinstance(s, AssignStmt) and isinstance(s.value, Call) and s.value.op == "tile.load"}
    x0 = loads["x0"].var
    fused = scratch.fused_transposes(f)
    # (wt's load, a yield before the matmul: a "oneload", which a gang of one region makes for its
    # first member alone)
    assert fused[id(loads["x0"].value)][0] == "gmload" and fused[id(loads["wt"].value)][0] == "oneload"
    # a move of an alias of x0 (same type, so the same planned bytes), appended after the matmul
    move = next(s for s in _stmts(f.body) if isinstance(s, AssignStmt) and isinstance(s.value, Call)
                and s.value.op == "tile.move" and s.value.args[0] is x0)
    alias = dataclasses.replace(x0, name="x0_alias")
    reader = dataclasses.replace(move, var=dataclasses.replace(move.var, name="late"),
                                 value=dataclasses.replace(move.value, args=(alias, *move.value.args[1:])))
    rng = scratch._range(x0)
    assert scratch._reads_after(reader, rng, {}, {})
    # (the move itself, left out, reads nothing)
    assert not scratch._reads_after(move, rng, {id(move.value): ("dead", x0)}, {})

    def append(stmts):
        out = []
        for s in stmts:
            if hasattr(s, "body") and not isinstance(s, AssignStmt):
                s = dataclasses.replace(s, body=append(s.body))
            out.append(s)
            if isinstance(s, AssignStmt) and isinstance(s.value, Call) and s.value.op == "tile.matmul":
                out.append(reader)
        return tuple(out)

    g = dataclasses.replace(f, body=append(f.body))
    fused = scratch.fused_transposes(g)
    assert id(loads["x0"].value) not in fused and fused[id(loads["wt"].value)][0] == "oneload"
    # the same with a reader of an alias of wt: its "oneload" goes too
    wt = loads["wt"].var
    reader = dataclasses.replace(reader, value=dataclasses.replace(
        move.value, args=(dataclasses.replace(wt, name="wt_alias"), *move.value.args[1:])))
    fused = scratch.fused_transposes(dataclasses.replace(f, body=append(f.body)))
    assert id(loads["wt"].value) not in fused and fused[id(loads["x0"].value)][0] == "gmload"


def test_an_overwrite_hides_only_the_reads_after_it():
    """The first K chunk's activation tile (a "oneload") is overwritten by the loop's load before the
    loop's matmul reads the buffer: that read cannot see it (pypto.codegen.scratch._Kills). A reader
    of the same bytes at the START of the loop body (before the loop's load) can: the first chunk's
    load is then made; the same reader at the END of the body (after the overwrite) hides nothing."""
    x, w = torch.zeros(16, 512, dtype=torch.bfloat16), torch.zeros(512, 256, dtype=torch.bfloat16)
    c = K.proj_columns.compile(x, w, torch.zeros(16, 256))
    (f,) = [f for f in c.lowered.functions.values()
            if any(isinstance(s, AssignStmt) and isinstance(s.value, Call) and s.value.op == "tile.matmul"
                   for s in _stmts(f.body))]
    first = next(s for s in _stmts(f.body) if isinstance(s, AssignStmt) and isinstance(s.value, Call)
                 and s.value.op == "tile.load" and s.var.name == "x0")
    assert scratch.fused_transposes(f)[id(first.value)][0] == "oneload"
    move = next(s for s in _stmts(f.body) if isinstance(s, AssignStmt) and isinstance(s.value, Call)
                and s.value.op == "tile.move" and s.value.args[0] is first.var)
    alias = dataclasses.replace(first.var, name="x0_alias")
    reader = dataclasses.replace(move, var=dataclasses.replace(move.var, name="late"),
                                 value=dataclasses.replace(move.value, args=(alias, *move.value.args[1:])))

    def with_reader(at_start: bool):
        def walk(stmts, in_loop):
            out = [walk_into(s) for s in stmts]
            if in_loop:
                out = [reader, *out] if at_start else [*out, reader]
            return tuple(out)

        def walk_into(s):
            if hasattr(s, "body") and not isinstance(s, AssignStmt):
                return dataclasses.replace(s, body=walk(s.body, type(s).__name__ == "ForStmt"))
            return s
        return dataclasses.replace(f, body=walk(f.body, False))

    assert id(first.value) not in scratch.fused_transposes(with_reader(True))
    assert scratch.fused_transposes(with_reader(False))[id(first.value)][0] == "oneload"


def test_one_region_over_several_runs_is_loaded_for_the_first_member_only():
    """gang_access._one_or_load: runs that all read one region (several tasks' members reading one
    activation) load the first member's tile alone and hand back that tile repeated; runs of other
    regions, or a gather, load every member's tile."""
    from pypto.ops.support import gang_access as G

    x = _bf16((64, 256), 7, True)
    region = x[16:32]

    def runs_at(*offsets):
        out, lo = [], 0
        for k, off in offsets:
            out.append((lo, lo + k, x.as_strided((k, 16, 256), (0, 256, 1), off * 256)))
            lo += k
        return out

    dst = torch.full((5, 16, 256), 7.0, dtype=torch.bfloat16)
    got = G._one_or_load(dst, runs_at((2, 16), (1, 16), (2, 16)))
    assert got.stride(0) == 0 and got.data_ptr() == dst.data_ptr() and got.shape == dst.shape
    assert torch.equal(dst[0].view(torch.int16), region.view(torch.int16))
    assert torch.equal(dst[1].float(), torch.full((16, 256), 7.0))   # (the others: not written)
    dst = torch.zeros(5, 16, 256, dtype=torch.bfloat16)
    got = G._one_or_load(dst, runs_at((2, 16), (3, 32)))
    assert got is dst
    for k, off in ((0, 16), (1, 16), (2, 32), (3, 32), (4, 32)):
        assert torch.equal(dst[k].view(torch.int16), x[off:off + 16].view(torch.int16))
    windows = x.as_strided((4, 16, 256), (16 * 256, 256, 1), 0)
    dst = torch.zeros(3, 16, 256, dtype=torch.bfloat16)
    got = G._one_or_load(dst, [(0, 3, (windows, torch.tensor([1, 1, 1])))])
    assert got is dst and all(torch.equal(dst[k].view(torch.int16), region.view(torch.int16)) for k in range(3))


def test_the_matmul_is_only_handed_contiguous_matrices():
    """gang_access._view_or_load: a left-out load's view goes to the matmul only where its items are
    contiguous matrices (the matmul then converts them as each task converts its own tile: FP16 NaN
    payloads come out of torch's conversion loops by position); one region whose rows lie apart is
    copied into the first member's tile alone; column blocks at a step are loaded."""
    from pypto.ops.support import gang_access as G

    w = torch.arange(64 * 256, dtype=torch.int16).view(torch.float16).reshape(64, 256)
    rows = [(0, 3, w.as_strided((3, 16, 256), (16 * 256, 256, 1), 0))]        # contiguous items
    shared_cols = [(0, 3, w.as_strided((3, 16, 128), (0, 256, 1), 128))]     # one region, rows apart
    cols = [(0, 2, w.as_strided((2, 16, 128), (128, 256, 1), 0))]            # column blocks
    dst = torch.zeros(3, 16, 256, dtype=torch.float16)
    assert G._view_or_load(dst, rows) is rows[0][2]
    dst = torch.zeros(3, 16, 128, dtype=torch.float16)
    got = G._view_or_load(dst, shared_cols)
    assert got.stride(0) == 0 and got[0].is_contiguous() and got.data_ptr() == dst.data_ptr()
    assert torch.equal(dst[0].view(torch.int16), w[:16, 128:].contiguous().view(torch.int16))
    dst = torch.zeros(2, 16, 128, dtype=torch.float16)
    assert G._view_or_load(dst, cols) is dst
    assert torch.equal(dst.view(torch.int16), torch.stack([w[:16, :128], w[:16, 128:]]).view(torch.int16))
