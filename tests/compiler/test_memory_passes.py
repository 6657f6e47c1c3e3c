"""Memory planning: InitMemRef (a buffer per tile), MemoryReuse (tiles with disjoint lifetimes share a
buffer; in-place and loop-entry hand-offs), AllocateMemoryAddr (addresses, capacity), the verifier
properties HasMemRefs / NoLiveOverlap / AllocatedMemoryAddr against planted faults, the printed
MemRef form, and that the simulator's results do not depend on how much reuse happened."""
import re

import kernels_memory as K
import pytest
import torch

from pypto.errors import CapacityError, ParserTypeError, VerificationError
from pypto.frontend.specialize import specialize
from pypto.ir import run_pipeline
from pypto.ir.nodes import Var
from pypto.ir.types import TileType
from pypto.ir.visit import defined_vars
from pypto.language import parse
from pypto.language.enums import FunctionType
from pypto.passes.memory_liveness import MemRefRewriter, with_memref
from pypto.passes.pipeline import Pipeline
from pypto.runtime import RunConfig

PLATFORMS = ["a2a3sim", "a5sim"]


def _data(*shapes, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(*s, generator=g) for s in shapes]


def _args(kernel):
    n = {"disjoint": 4, "overlapping": 3}.get(kernel.__name__, 2)
    return tuple(_data(*[(64, 128)] * n))


def _lower(kernel, platform="a2a3sim", passes=None, args=None):
    prog = specialize(kernel, args or _args(kernel), {}).program
    return run_pipeline(prog, {"platform": platform, **({"passes": passes} if passes is not None else {})})


def _tiles(program):
    """printed name -> MemRef of every tile of the (single) InCore kernel of ``program``."""
    program = parse(program.as_python())      # Vars named as printed (acc, acc_1, ...)
    f = next(f for f in program.functions if f.func_type == FunctionType.InCore)
    return {v.name: v.type.memref for v in defined_vars(f.body) if isinstance(v.type, TileType)}


def _stage(result, name):
    return dict(result.stages)[name]


# ------------------------------------------------------------------------------------- pipeline


def test_memory_passes_in_order():
    names = Pipeline.default().names
    i = names.index("NormalizeReturnOrder")
    assert names[i + 1:i + 5] == ["InitMemRef", "MemoryReuse", "AllocateMemoryAddr", "DeriveCallDirections"]


def test_init_mem_ref_gives_each_tile_its_own_buffer():
    r = _lower(K.disjoint)
    tiles = _tiles(_stage(r, "InitMemRef"))
    assert tiles["t"].base != tiles["u"].base
    assert all(m.addr is None and m.offset == 0 and m.size == 64 * 128 * 4 for m in tiles.values())
    assert all(re.fullmatch(r"mem_vec_\d+", m.base) for m in tiles.values())
    text = _stage(r, "InitMemRef").as_python()
    assert f'pl.MemRef("{tiles["t"].base}", 0, 32768)]' in text


def test_disjoint_lifetimes_share_a_buffer():
    r = _lower(K.disjoint)
    tiles = _tiles(_stage(r, "MemoryReuse"))
    assert tiles["t"].base == tiles["u"].base, tiles      # t dies at its store before u is loaded
    final = _tiles(r.program)
    assert final["t"] == final["u"] and final["t"].addr == 0


def test_overlapping_lifetimes_do_not_share_and_in_place_does():
    r = _lower(K.overlapping)
    tiles = _tiles(_stage(r, "MemoryReuse"))
    assert tiles["t"].base != tiles["u"].base              # live together
    assert tiles["s"] == tiles["t"]                        # add(t, u) overwrites t, which dies there
    final = _tiles(r.program)
    assert {final["t"].addr, final["u"].addr} == {0, 32768}
    text = r.program.as_python()
    assert 's: pl.Tile[[64, 128], pl.FP32, pl.Mem.Vec, pl.MemRef("mem_vec_0", 0, 32768, addr=0)]' in text


def test_loop_carry_shares_the_buffer_and_takes_a_dying_init():
    r = _lower(K.carried)
    init = _tiles(_stage(r, "InitMemRef"))
    assert init["acc_1"] == init["acc_3"]                  # iter_arg and loop result: one buffer
    assert init["acc"] != init["acc_1"]
    reused = _tiles(_stage(r, "MemoryReuse"))
    assert reused["acc"] == reused["acc_1"] == reused["acc_3"]  # the initial value dies at the loop
    assert reused["acc_2"] != reused["acc_1"]              # the body's value is live with the carried one


def test_loop_init_read_after_the_loop_keeps_its_buffer():
    tiles = _tiles(_lower(K.carried_init_kept).program)
    assert tiles["t"].base != tiles["acc"].base
    assert tiles["acc"] == tiles["acc_2"]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_capacity_error_names_space_limit_and_tiles(platform):
    a, b, out = _data((128, 256), (128, 256), (128, 256))
    with pytest.raises(CapacityError) as e:
        _lower(K.too_big, platform, args=(a, b, out))
    msg = str(e.value)
    cap = {"a2a3sim": 184 * 1024, "a5sim": 240 * 1024}[platform]
    assert f"Vec buffer usage (262144 bytes) exceeds platform limit ({cap} bytes) on {platform}" in msg, msg
    # the buffers live at the peak, with the lines defining them; located at the peak statement
    assert "2 buffers of 262144 bytes are live" in msg, msg
    assert "'big_a' [128, 256] FP32 (131072 B, line 58)" in msg and "'big_b' [128, 256] FP32 (131072 B, line 59)" in msg
    assert "__tmp" not in msg                                          # no compiler temporaries
    assert "kernels_memory.py:59:" in msg and "too_big_incore_0" in msg
    assert "big_b = pl.load(b, [0, 0], [128, 256])" in msg             # the caret's line


def test_allocation_is_aligned_and_never_worse_without_reuse():
    """Every buffer address is a multiple of its space's alignment; without MemoryReuse the kernel
    still compiles (AllocateMemoryAddr packs the unmerged buffers) and uses at least as much."""
    from pypto.backend.platforms import get_platform

    align = get_platform("a2a3sim").align

    def top(prog):
        return max(m.addr + m.size for m in _tiles(prog).values())

    for kernel in (K.overlapping, K.carried, K.mixed_sizes, K.carried_init_kept):
        full = _lower(kernel).program
        bare = _lower(kernel, passes=Pipeline.default().drop("MemoryReuse")).program
        f = next(f for f in full.functions if f.func_type == FunctionType.InCore)
        for v in defined_vars(f.body):
            if isinstance(v.type, TileType):
                assert v.type.memref.addr % align(v.type.memory_space) == 0, v.name
        assert top(full) <= top(bare), kernel.__name__
        assert len({m.base for m in _tiles(full).values()}) < len({m.base for m in _tiles(bare).values()})


# ------------------------------------------------------------------------------------- planted faults


def _retile(program, fn, reparse=True):
    """Rebuild every InCore kernel giving tile ``v`` the MemRef ``fn(v)`` (``None``: unchanged).
    With ``reparse`` Vars are named as printed: the program is re-parsed first (structurally equal,
    but the spans then point into the printed text)."""
    if reparse:
        program = parse(program.as_python())
    return program.replace(functions=tuple(
        MemRefRewriter(fn).function(f) if f.func_type == FunctionType.InCore else f for f in program.functions))


def MergeLive(program):
    """A planted fault in place of MemoryReuse: u moves into t's buffer while both are live."""
    tiles = _tiles(program)
    return _retile(program, lambda v: tiles["t"] if v.name == "u" else None, reparse=False)  # keep the spans


def DropOneMemRef(program):
    """A planted fault in place of InitMemRef: u gets no buffer."""
    from pypto.passes import init_mem_ref

    program = parse(init_mem_ref.run(program, None).as_python())
    tiles = _tiles(program)

    class Strip(MemRefRewriter):
        def place(self, v):
            if v.name != "u":
                return v
            return self.redefine(v, Var(v.name, v.type.with_(memref=None), v.span))
    return program.replace(functions=tuple(
        Strip(None).function(f) if f.func_type == FunctionType.InCore else f for f in program.functions)), tiles


def ShiftOneAddress(program):
    """A planted fault after AllocateMemoryAddr: u's buffer moves onto t's bytes."""
    tiles = _tiles(program)
    return _retile(program, lambda v: with_memref(v.type.memref, addr=tiles["t"].addr + 128)
                   if v.type.memref.base == tiles["u"].base else None)


def test_planted_fault_merging_live_tiles_names_pass_and_property():
    from pypto.passes import memory_reuse
    from pypto.passes.manager import PassInfo

    # the replacement claims what MemoryReuse claims, so the check runs right after it
    pipe = Pipeline.default().replace("MemoryReuse", PassInfo("MergeLive", lambda p, c: MergeLive(p),
                                                              memory_reuse.REQUIRES, memory_reuse.PRODUCES))
    with pytest.raises(VerificationError) as e:
        _lower(K.overlapping, passes=pipe)
    msg = str(e.value)
    assert "after 'MergeLive' for property NoLiveOverlap" in msg, msg
    assert "'t'" in msg and "'u'" in msg and "overlap while both are live" in msg
    assert "u: pl.Tile" in msg                 # the offending statement, printed as IR
    assert "kernels_memory.py" in msg           # with its span
    # verification off: the fault goes through (the check really is what caught it)
    prog = specialize(K.overlapping, _args(K.overlapping), {}).program
    run_pipeline(prog, {"platform": "a2a3sim", "verification_level": "none", "passes": pipe})


def test_planted_fault_shifted_address_is_caught_after_allocation():
    pipe = Pipeline.default().insert_after("AllocateMemoryAddr", ShiftOneAddress)
    with pytest.raises(VerificationError, match=r"after 'ShiftOneAddress' for property NoLiveOverlap.*'t'.*'u'"):
        _lower(K.overlapping, passes=pipe)


def test_a_built_in_pass_breaking_an_established_property_is_named(monkeypatch):
    """After a built-in pass the manager checks only what that pass produces, and everything on the
    final program: a later built-in pass breaking NoLiveOverlap is found there and named, as if every
    property were checked after every pass (pypto.passes.manager.run_passes)."""
    from pypto.passes import final_simplify

    original = final_simplify.run
    monkeypatch.setattr(final_simplify, "run", lambda program, ctx: ShiftOneAddress(original(program, ctx)))
    with pytest.raises(VerificationError, match=r"after 'FinalSimplify' for property NoLiveOverlap.*'t'.*'u'"):
        _lower(K.overlapping)
    monkeypatch.setattr(final_simplify, "run", original)
    _lower(K.overlapping)


def test_a_pass_failing_on_ir_an_earlier_built_in_pass_broke_names_the_earlier_one(monkeypatch):
    """A built-in pass's fault that makes a later pass raise is reported as the verification error
    of the pass that broke the IR, not as the later pass's failure."""
    from pypto.passes import memory_reuse

    def boom(program, ctx):
        raise CapacityError("a later pass failed on the broken IR")

    class Strip(MemRefRewriter):   # u loses its buffer: HasMemRefs (InitMemRef's) no longer holds
        def place(self, v):
            return self.redefine(v, Var(v.name, v.type.with_(memref=None), v.span)) if v.name == "u" else v

    def strip_u(program):
        return program.replace(functions=tuple(
            Strip(None).function(f) if f.func_type == FunctionType.InCore else f for f in program.functions))

    original = memory_reuse.run
    monkeypatch.setattr(memory_reuse, "run", lambda program, ctx: strip_u(original(program, ctx)))
    pipe = Pipeline.default().insert_after("MemoryReuse", boom)
    with pytest.raises(VerificationError, match=r"after 'MemoryReuse' for property HasMemRefs.*tile 'u' has no MemRef"):
        _lower(K.overlapping, passes=pipe)
    with pytest.raises(VerificationError, match=r"after 'MemoryReuse' for property HasMemRefs"):
        _lower(K.overlapping)       # no failing pass: a later check finds it


def test_planted_fault_missing_memref_names_has_mem_refs():
    from pypto.passes.manager import PassInfo

    def no_buffer_for_u(program, ctx):
        return DropOneMemRef(program)[0]

    # a replacement for InitMemRef declares what InitMemRef produces, so the check runs after it
    pipe = Pipeline.default().replace("InitMemRef", PassInfo("NoBufferForU", no_buffer_for_u, (), ("HasMemRefs",)))
    with pytest.raises(VerificationError) as e:
        _lower(K.overlapping, passes=pipe)
    msg = str(e.value)
    assert "after 'NoBufferForU' for property HasMemRefs" in msg and "tile 'u' has no MemRef" in msg, msg


def test_loop_result_outside_the_carried_buffer_is_caught():
    def SplitCarry(program):
        tiles = _tiles(program)
        return _retile(program, lambda v: with_memref(tiles["acc_3"], base="mem_vec_99")
                       if v.name == "acc_3" else None)

    pipe = Pipeline.default().insert_after("InitMemRef", SplitCarry)
    with pytest.raises(VerificationError, match="after 'SplitCarry' for property HasMemRefs.*loop result 'acc_3'"):
        _lower(K.carried, passes=pipe)


# ------------------------------------------------------------------------------------- printing / parsing


def test_printed_memref_roundtrips_before_and_after_allocation():
    r = _lower(K.carried)
    for stage in ("InitMemRef", "MemoryReuse", "AllocateMemoryAddr"):
        text = _stage(r, stage).as_python()
        assert ('addr=' in text) == (stage == "AllocateMemoryAddr"), stage
        assert parse(text).as_python() == text


def test_old_memref_form_is_a_clear_parse_error():
    text = _stage(_lower(K.disjoint), "AllocateMemoryAddr").as_python()
    old = re.sub(r'pl\.MemRef\("mem_vec_\d+", 0, (\d+), addr=(\d+)\)', r"pl.MemRef(\2, \1)", text)
    assert old != text
    with pytest.raises(ParserTypeError, match=r'pl.MemRef takes \("buffer_name", offset, size\)'):
        parse(old)


# ------------------------------------------------------------------------------------- execution


@pytest.mark.parametrize("platform", PLATFORMS)
def test_results_do_not_depend_on_reuse(platform):
    """The simulator's output is bit-identical with and without MemoryReuse, and equals torch."""
    a = _data((64, 128))[0]
    outs = []
    for passes in (None, Pipeline.default().drop("MemoryReuse")):
        out = torch.zeros(64, 128)
        cfg = RunConfig(platform=platform, sim_seed=0, **({"passes": passes} if passes is not None else {}))
        K.carried(a, out, config=cfg)
        outs.append(out)
    want = a.clone()
    for _ in range(3):
        want = want + torch.exp(want)
    assert torch.equal(outs[0], outs[1])
    torch.testing.assert_close(outs[0], want, rtol=1e-5, atol=1e-5)


def test_loop_result_hands_its_buffer_to_the_next_loop():
    tiles = _tiles(_lower(K.two_loops).program)
    assert tiles["acc"] == tiles["acc_1"] == tiles["acc_3"] == tiles["acc_4"] == tiles["acc_6"]
    assert tiles["acc_2"].base != tiles["acc"].base


@pytest.mark.parametrize("kernel,want", [
    (K.two_loops, lambda a: a * 2 * 2 * 0.5 * 0.5),
    (K.branchy, lambda a: _branchy_ref(a)),
])
def test_more_shapes_of_reuse_keep_the_results(kernel, want):
    a = _data((64, 128), seed=3)[0]
    outs = []
    for passes in (None, Pipeline.default().drop("MemoryReuse")):
        out = torch.zeros(64, 128)
        cfg = RunConfig(platform="a2a3sim", sim_seed=0, **({"passes": passes} if passes is not None else {}))
        kernel(a, out, config=cfg)
        outs.append(out)
    assert torch.equal(outs[0], outs[1])
    torch.testing.assert_close(outs[0], want(a), rtol=1e-5, atol=1e-5)


def _branchy_ref(a):
    acc = a.clone()
    for i in range(4):
        acc = acc + torch.exp(acc) if i < 2 else acc * 0.5
    return acc
