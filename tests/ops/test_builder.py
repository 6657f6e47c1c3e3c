"""``ops.build(name, span, **kwargs)`` (pypto/ops/builder.py): a call bound by parameter name, literals
converted, the type from the op's rule; a wrong name is an InternalError naming the op."""
import pytest

from pypto import ops
from pypto.errors import InternalError, Span, TypeCheckError
from pypto.ir.nodes import Call, ConstInt, MakeTuple, Var
from pypto.ir.types import TensorType, TileType
from pypto.language.dtypes import FP16, FP32
from pypto.language.enums import AtomicType, MemorySpace

SPAN = Span("k.py", 3, 4, 3, 20)
T = Var("t", TensorType((16, 32), FP32))


def test_binds_by_name_fills_defaults_and_infers_the_type():
    c = ops.build("tile.load", SPAN, shapes=[16, 32], tensor=T, offsets=[0, 0])   # any keyword order
    assert isinstance(c, Call) and c.op == "tile.load" and c.span == SPAN
    assert c.args[0] is T and c.args[3] is None and c.args[4] is None   # valid_shape, target_memory defaults
    assert c.args[1] == MakeTuple((ConstInt(0), ConstInt(0))) and c.args[2] == MakeTuple((ConstInt(16), ConstInt(32)))
    assert c.type == TileType((16, 32), FP32)
    # the same call the positional spelling makes, with the rule's type
    assert c == Call("tile.load", (T, c.args[1], c.args[2], None, None), TileType((16, 32), FP32), SPAN)


def test_aliases_and_attributes():
    tile = Var("x", TileType((16, 32), FP32, MemorySpace.Vec))
    c = ops.build("tile.cast", SPAN, input=tile, target_type=FP16)   # the reference's spellings
    assert c.args == (tile, FP16, "round") and c.type.dtype == FP16
    st = ops.build("tile.store", SPAN, tile=tile, offsets=[0, 0], tensor=T, atomic=AtomicType.Add)
    assert st.args[3] == AtomicType.Add and st.type == T.type
    m = ops.build("tile.move", None, x=tile, target_memory=MemorySpace.Mat)
    assert m.type.memory_space == MemorySpace.Mat and m.span.is_unknown()


def test_scalar_literals_become_constants():
    tile = Var("x", TileType((16, 32), FP32, MemorySpace.Vec))
    c = ops.build("tile.adds", SPAN, lhs=tile, rhs=2.0)
    assert c.args[1].value == 2.0 and c.type == tile.type


@pytest.mark.parametrize("kwargs, match", [
    (dict(tensor=T, offsets=[0, 0]), "missing argument 'shapes'"),
    (dict(tensor=T, offsets=[0, 0], shapes=[16, 32], shape=[1]), r"no parameter \['shape'\]"),
])
def test_a_wrong_call_is_an_internal_error_naming_the_op(kwargs, match):
    with pytest.raises(InternalError, match=match) as e:
        ops.build("tile.load", SPAN, **kwargs)
    assert "tile.load" in str(e.value)


def test_the_type_rule_still_judges_the_operands():
    with pytest.raises(TypeCheckError):
        ops.build("tile.load", SPAN, tensor=T, offsets=[0, 0], shapes=[64, 64])   # region outside the tensor
