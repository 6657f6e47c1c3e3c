"""docs/ops.md is generated from the op registry (pypto.tools.op_reference) and current: every op
with its signature, the dtypes its type rule accepts, its meaning, its torch reference and its
family's numerics contract."""
from pathlib import Path

from pypto.ops.registry import all_ops
from pypto.tools import op_reference

ROOT = Path(__file__).resolve().parents[2]


def test_the_page_is_current():
    page = (ROOT / "docs" / "ops.md").read_text(encoding="utf-8")
    assert page == op_reference.render(), \
        "docs/ops.md is stale: run python -m pypto.tools.op_reference -o docs/ops.md"


def test_every_op_is_listed_and_every_family_has_a_contract():
    page = op_reference.render()
    for name, op in all_ops().items():
        assert f"| `{name}` |" in page, name
        assert op_reference.family(op) in op_reference.FAMILY_CONTRACT, \
            f"{name}: family {op_reference.family(op)!r} states no numerics contract (FAMILY_CONTRACT)"
    assert "(no contract stated)" not in page


def test_dtypes_come_from_the_type_rule():
    ops = all_ops()
    exp = op_reference.dtypes(ops["tile.exp"])
    assert exp and set(exp) <= {"FP16", "BF16", "FP32"} and "FP32" in exp
    add = op_reference.dtypes(ops["tile.add"])
    assert "FP16" in add and "INT32" in add and "BOOL" not in add
    assert op_reference.dtypes(ops["tile.load"]) is None     # needs offsets and shapes: "see the rule"


def test_signature_and_semantics_name_the_parameters():
    ops = all_ops()
    assert op_reference.signature(ops["tile.cast"]).startswith("tile.cast(x: tile, dtype: dtype, mode: mode = ")
    assert op_reference.semantics(ops["tile.exp"]) == "torch.exp(x)"
