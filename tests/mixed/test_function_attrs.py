"""``@pl.function(attrs={...})``: parsed into ``Function.attrs``, printed so that the dump re-parses."""
import pytest

import pypto.language as pl
from pypto.errors import ParserSyntaxError, ParserTypeError
from pypto.ir.equality import structural_equal

SRC = '''
import pypto.language as pl


@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore, attrs={ATTRS})
    def k(self, a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        t = pl.load(a, [0, 0], [16, 16])
        out = pl.store(t, [0, 0], out)
        return out
'''


def _parse(text: str):
    return pl.parse(text, filename="<attrs>")


def test_attrs_recorded_in_order_and_none_split_dropped():
    p = _parse(SRC.replace("ATTRS", '"split": pl.SplitMode.LEFT_RIGHT, "dual_aiv_dispatch": True, '
                                    '"core_num": 4, "none": pl.SplitMode.NONE'))
    f = p.functions["k"]
    assert f.attrs == (("split", pl.SplitMode.LEFT_RIGHT), ("dual_aiv_dispatch", True), ("core_num", 4))
    assert f.attr("dual_aiv_dispatch") is True and f.attr("missing", 7) == 7


def test_printed_attrs_reparse_to_the_same_program():
    p = _parse(SRC.replace("ATTRS", '"split": pl.SplitMode.UP_DOWN, "dual_aiv_dispatch": True'))
    text = p.as_python()
    assert "attrs={'split': pl.SplitMode.UP_DOWN, 'dual_aiv_dispatch': True}" in text
    again = _parse(text)
    assert structural_equal(again.functions["k"].attrs, p.functions["k"].attrs)
    assert again.as_python() == text


@pytest.mark.parametrize("attrs, err, words", [
    ('**{"a": 1}', ParserSyntaxError, "string literals"),
    ('1: True', ParserSyntaxError, "string literals"),
    ('"a": 1, "a": 2', ParserSyntaxError, "given twice"),
    ('"a": [1, 2]', (ParserSyntaxError, ParserTypeError), ""),
])
def test_bad_attrs_are_located_errors(attrs, err, words):
    with pytest.raises(err) as e:
        _parse(SRC.replace("ATTRS", attrs))
    assert words in str(e.value)
    assert "<attrs>:7" in str(e.value)
