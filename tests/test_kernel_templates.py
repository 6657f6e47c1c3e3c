"""tests/kernel_templates.py: templates fill in completely or not at all, statement placeholders
indent, one name keeps one text, and a generated kernel's errors point at its generated line."""
import pytest
import torch

from kernel_templates import filename, kernels, render, source, where
from pypto.errors import InvalidOperationError

_ADD = '''
@pl.jit
def $name(a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        $pre
        out = pl.assemble(out, $expr, [0, 0])   # THE CALL
    return out
'''


def test_render_indents_statement_placeholders_and_drops_empty_ones():
    text = render("def f():\n    $body\n    $none\n    return $v\n", body="x = 1\ny = 2", none="", v=3)
    assert text == "def f():\n    x = 1\n    y = 2\n    return 3\n"


def test_render_refuses_a_missing_parameter():
    with pytest.raises(KeyError):
        render(_ADD, name="k", pre="")


def test_one_name_one_text():
    a = kernels("tmpl_same", _ADD, pre="", expr="pl.add(a, a)")
    assert kernels("tmpl_same", _ADD, pre="", expr="pl.add(a, a)") is a   # the same text: the same module
    with pytest.raises(ValueError, match="already built from another text"):
        kernels("tmpl_same", _ADD, pre="", expr="pl.mul(a, a)")


def test_a_generated_kernel_runs_and_its_error_points_at_its_line():
    ok = kernels("tmpl_ok", _ADD, pre="b = pl.mul(a, 2.0)", expr="pl.add(a, b)").tmpl_ok
    a, out = torch.randn(16, 16), torch.zeros(16, 16)
    ok(a, out)
    assert torch.equal(out, a + a * 2.0)
    assert "        b = pl.mul(a, 2.0)\n" in source(ok)

    bad = kernels("tmpl_bad", _ADD, pre="", expr="pl.add(a, a, a)").tmpl_bad
    with pytest.raises(InvalidOperationError) as e:
        bad(a, out)
    msg = str(e.value)
    assert filename(bad) == "<test_kernel_templates.tmpl_bad>"
    assert msg.startswith(where(bad, "THE CALL") + ":")          # file:line:col of the generated line
    assert "pl.add(a, a, a)" in msg and "^" in msg                # the source line and its caret


def test_where_reads_hand_written_modules_too():
    from tests.mixed import kernels_sync as K   # FlagNeverSet is hand-written, EventNeverSet generated

    assert where(K.FlagNeverSet, "FLAG NEVER SET").startswith("kernels_sync.py:")
    n = int(where(K.EventNeverSet, "NEVER SET").rpartition(":")[2])
    assert where(K.EventNeverSet, "NEVER SET") == f"<kernels_sync.EventNeverSet>:{n}"
    assert "# NEVER SET" in source(K.EventNeverSet).splitlines()[n - 1]
