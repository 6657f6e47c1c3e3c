"""Loop attributes (``ForStmt.attrs``, the reference's loop attrs): written
``pl.range(..., attrs={"key": value})``, printed back the same way, kept by the passes that rebuild
loops, and refused with a located error when malformed."""
from __future__ import annotations

import pytest

from pypto import ir, passes
from pypto.errors import ParserTypeError
from pypto.ir import assert_structural_equal
from pypto.ir.nodes import ForStmt
from pypto.ir.visit import iter_stmts
from pypto.language import parse

SRC = '''
import pypto.language as pl


@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        for i in pl.range(0, 4, attrs={ATTRS}):
            for j in pl.range(2):
                t = pl.load(a, [i * 16, j * 16], [16, 16])
                out = pl.store(t, [i * 16, j * 16], out)
        return out
'''


def _loops(prog):
    return [s for f in prog.functions for s in iter_stmts(f.body) if isinstance(s, ForStmt)]


def test_attrs_parse_print_and_parse_back():
    prog = parse(SRC.replace("ATTRS", '"pipeline_double_buffer_c": True, "n": -3, "f": 0.5, "s": "x\\"y"'))
    outer, inner = _loops(prog)
    assert outer.attrs == (("f", 0.5), ("n", -3), ("pipeline_double_buffer_c", True), ("s", 'x"y'))
    assert outer.attr("pipeline_double_buffer_c") is True and inner.attrs == ()
    text = ir.python_print(prog)
    assert text.count('"pipeline_double_buffer_c": True') == 1
    assert_structural_equal(prog, parse(text))


def test_attrs_survive_ssa_and_differ_structurally():
    prog = parse(SRC.replace("ATTRS", '"pipeline_double_buffer_c": True'))
    ssa = passes.convert_to_ssa()(prog)
    (outer, _) = _loops(ssa)
    assert outer.iter_args and outer.attr("pipeline_double_buffer_c") is True
    assert_structural_equal(ssa, parse(ir.python_print(ssa)))
    other = parse(SRC.replace("ATTRS", '"pipeline_double_buffer_c": False'))
    assert not ir.structural_equal(prog, other)


@pytest.mark.parametrize("attrs, msg", [
    ("ATTRS", "must be a dict literal"),
    ("{1: True}", "keys must be string literals"),
    ('{"k": [1]}', "must be a bool, int, float or str literal"),
])
def test_bad_attrs_are_located_errors(attrs, msg):
    src = SRC.replace("attrs={ATTRS}", f"attrs={attrs}")
    with pytest.raises(ParserTypeError, match=msg) as e:
        parse(src)
    assert e.value.span is not None
