"""Op traits (pypto/ops/traits.py): the definitions declare them, the consumers query them, and the
pre-trait OpDef keywords still work (the compatibility path other branches' ops use)."""
import pytest

from pypto.language.enums import MemorySpace
from pypto.ops.registry import OpDef, Param, all_ops, get_op, op_trait
from pypto.ops.traits import (Elementwise, GlobalMemoryAccess, InPlaceSafe, Lockstep, MemorySpaces, ReadsBlock,
                              Reduction, Scratch, ViewOf, from_legacy)


def _op(**kw):
    return OpDef(name="tile.trait_probe", params=(Param("x", "tile"),), infer=lambda a, s: a.x.type,
                 ref=lambda a: str(a.x), **kw)


def test_legacy_keywords_become_traits():
    op = _op(gm="read", batch="rows", scratch="x", inplace_safe=True, input_spaces=(MemorySpace.Vec,),
             result_space=MemorySpace.Vec)
    assert op.trait(GlobalMemoryAccess) == GlobalMemoryAccess("read")
    assert op.trait(Lockstep) is not None and op.trait(Lockstep).form == "rows"
    assert op.trait(Scratch) == Scratch("x") and op.has(InPlaceSafe)
    assert op.trait(MemorySpaces) == MemorySpaces((MemorySpace.Vec,), MemorySpace.Vec)
    # reading the old names answers from the traits
    assert (op.gm, op.batch, op.scratch, op.inplace_safe) == ("read", "rows", "x", True)
    assert op.input_spaces == (MemorySpace.Vec,) and op.result_space == MemorySpace.Vec


def test_an_op_without_traits_reads_the_old_defaults():
    op = _op()
    assert op.traits == () and not op.has(InPlaceSafe)
    assert (op.gm, op.batch, op.scratch, op.inplace_safe, op.input_spaces, op.result_space) == \
        (None, None, None, False, (), None)


def test_legacy_and_trait_spellings_define_the_same_op():
    assert set(_op(batch="copy", gm="write").traits) == {Lockstep.COPY, GlobalMemoryAccess("write")}
    assert set(from_legacy(inplace_safe=True, batch="gang")) == {InPlaceSafe(), Lockstep.GANG}


@pytest.mark.parametrize("bad", [dict(batch="rowz"), dict(gm="rw")])
def test_a_misspelt_legacy_value_is_refused(bad):
    with pytest.raises(ValueError):
        _op(**bad)


def test_two_different_traits_of_one_kind_are_refused():
    with pytest.raises(ValueError, match="declares"):
        _op(traits=(Lockstep.ROWS,), batch="copy")
    with pytest.raises(TypeError, match="not a Trait"):
        _op(traits=("rows",))


def test_per_operand_spaces():
    mm = get_op("tile.matmul").trait(MemorySpaces)
    assert mm.allowed("lhs") == (MemorySpace.Left,) and mm.allowed("rhs") == (MemorySpace.Right,)
    assert mm.allowed("nope") == () and mm.result == MemorySpace.Acc


def test_the_registry_declares_the_queried_traits():
    ops = all_ops()
    padded = {n for n, o in ops.items() if n.startswith("tile.") and (r := o.trait(Reduction)) and r.reads_padding}
    # exactly the reductions that take the padding in (what the PTO-P001 lint and the doctor ask for)
    assert padded == {f"tile.{f}_{k}" for f in ("row", "col") for k in ("sum", "max", "min")}
    assert op_trait("tile.row_sum", Reduction) == Reduction(-1, "sum")
    assert op_trait("tile.col_prod", Reduction) == Reduction(-2, "prod", reads_padding=False)
    assert {n for n, o in ops.items() if o.has(ReadsBlock)} == {
        "tile.get_block_idx", "tile.get_block_num", "tile.get_subblock_idx", "tile.split_aiv_lane",
        "system.syncall"}   # (its reference form refuses a barrier across the blocks it runs in turn)
    assert op_trait("tensor.slice", ViewOf) == ViewOf("x")
    assert {n for n, o in ops.items() if o.trait(GlobalMemoryAccess) == GlobalMemoryAccess("write")} >= {"tile.store"}
    assert get_op("tile.row_sum").trait(Scratch) == Scratch("tmp_tile")
    assert op_trait("no.such_op", Reduction) is None


def test_elementwise_ops_are_marked():
    for name in ("tile.add", "tile.exp", "tensor.mul", "tile.cmp", "tile.cast", "tile.and_"):
        assert get_op(name).has(Elementwise), name
    assert not get_op("tile.row_sum").has(Elementwise) and not get_op("tile.matmul").has(Elementwise)
    # cast is elementwise but its result has another dtype: it never writes over its operand
    assert not get_op("tile.cast").has(InPlaceSafe) and get_op("tile.add").has(InPlaceSafe)


def test_every_definition_uses_traits_not_the_old_keywords():
    """The compatibility keywords are for ops written elsewhere before traits; the definitions in
    pypto/ops use ``traits=`` (this scan reads the sources, so it fails on a reintroduced keyword)."""
    import ast
    from pathlib import Path

    import pypto.ops

    legacy = {"gm", "batch", "scratch", "inplace_safe", "input_spaces", "result_space"}
    found = []
    for path in Path(pypto.ops.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "OpDef":
                found += [f"{path.name}:{node.lineno} {k.arg}=" for k in node.keywords if k.arg in legacy]
    assert not found, found
