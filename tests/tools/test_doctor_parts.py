"""The doctor's parts: the tolerance it may suggest (tolerance.py), the experiments that attribute an
error to one op (attribution.py), and fixes tried on a copy of the kernel (fixes.py)."""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kernels_doctor as K  # noqa: E402

from pypto.debug import fixes, tolerance  # noqa: E402
from pypto.debug.doctor import doctor  # noqa: E402


def test_suggested_tolerance_rejects_zeros_where_a_flat_one_does_not():
    """The issue's softmax: largest value 0.0044, so rtol=atol=0.01 passes an all-zeros output."""
    g = torch.Generator().manual_seed(0)
    golden = torch.softmax(torch.randn(16, 1024, generator=g, dtype=torch.float64) * 0.5, 1).half()
    assert float(golden.max()) < 0.01
    zeros = {"out": torch.zeros_like(golden)}
    assert tolerance.passes(zeros, {"out": golden}, 0.01, 0.01)          # the old suggestion had no teeth
    close = {"out": (golden.double() * (1 + 2 ** -11)).half()}          # about 1 ULP off
    t = tolerance.suggest(close, {"out": golden}, torch.float16)
    assert t.rtol == tolerance.ULP_BUDGET * 2 ** -10
    assert t.accepts_result and t.rejects_zeros and t.rejects_shuffled and t.usable
    assert not tolerance.passes(zeros, {"out": golden}, t.rtol, t.atol)
    assert "8 ULPs of float16" in t.describe()


def test_tolerance_on_constant_data_has_no_teeth():
    golden = {"out": torch.full((8, 8), 3.0)}
    t = tolerance.suggest({"out": torch.full((8, 8), 3.0)}, golden, torch.float32)
    assert t.rejects_zeros and not t.rejects_shuffled and not t.usable


def test_compute_dtype_is_the_lowest_precision_in_play():
    assert tolerance.compute_dtype([torch.float32]) == torch.float32
    assert tolerance.compute_dtype([torch.float32, torch.bfloat16, torch.float16]) == torch.bfloat16


def test_padding_in_a_helper_kernel_is_fixed_there(tmp_path):
    """The reduction sits in a pl.jit.incore helper: the fix is applied to the helper's source and the
    entry is re-bound to the patched helper before compiling."""
    x = torch.randn(16, 64)
    r = doctor(K.calls_masked_sum, {"x": x, "out": torch.zeros(16, 1)},
               expected={"out": x[:, :24].exp().sum(1, keepdim=True)}, seeds=2, html=tmp_path / "r.html")
    assert (r.settled_step, r.cause) == (2, "padding"), r.format()
    assert r.verification.status == "verified", r.format()
    assert any("pl.fillpad(pl.exp(t), pl.PadValue.zero)" in c for c in r.verification.changed)
    assert "kernels_doctor.py:9" in r.fix


def test_an_edit_that_does_not_apply_is_reported_not_raised():
    src = str(Path(K.__file__))
    v = fixes.verify(K.calls_masked_sum, src, [fixes.CallEdit(9, "row_max", fixes.fill_padding("min"))],
                     {"x": torch.randn(16, 64), "out": torch.zeros(16, 1)}, {"out": torch.zeros(16, 1)},
                     1e-5, 1e-5, "a2a3sim")
    assert v.status == "could not verify" and "no call of row_max at line 9" in v.detail


def test_race_fix_for_a_loop_it_cannot_index_is_not_claimed_verified():
    a = torch.randn(128, 64)
    lines = Path(K.__file__).read_text().splitlines()
    prod = next(i for i, ln in enumerate(lines, 1) if "for i in pl.range(1, 3)" in ln) + 1
    cons = prod + 2
    v = fixes.verify(K.ranged_producers, K.__file__, [fixes.DepsEdit(prod, cons)], {"a": a, "out": torch.zeros(128, 64)},
                     {"out": torch.zeros(128, 64)}, 1e-5, 1e-5, "a2a3sim")
    assert v.status == "could not verify" and "trip count" in v.detail


def test_the_summary_wraps_long_entries_with_a_hanging_indent_and_keeps_diffs_verbatim():
    from pypto.debug.doctor import DoctorReport

    r = DoctorReport("k")
    r.add(1, "gap", "info", "word " * 60)
    r.add(4, "per-pass check", "explains", "first diverging pass: X\n-    a = b + c   # a long diff line " + "x" * 90)
    r.settle(2, "conclusion " * 20, "fix " * 30, "tolerance")
    text = r.format(width=80)
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines if "xxxx" not in line), text
    assert any(line.startswith("      word") for line in lines)          # hanging indent under the entry
    assert any(line.endswith("x" * 90) for line in lines)                # the diff line is not re-wrapped
    assert " ".join(text.split()).count("word") == 60                    # nothing lost


def test_a_tools_own_name_is_not_repeated_in_its_entry():
    """'race detector: race detector: 8 tasks' (the tool's summary starts with its name): said once."""
    from pypto.debug.doctor import DoctorReport

    r = DoctorReport("k")
    r.add(5, "race detector", "ok", "race detector: 8 tasks, 0 races")
    r.add(5, "poison check", "ok", "poison check: 8 tasks, no store reads padding")
    r.add(1, "ulp", "info", "ulp distance up to 3")           # a detail that merely starts alike is kept
    text = r.format(width=100)
    assert "race detector: 8 tasks, 0 races" in text and "race detector: race detector" not in text
    assert "poison check: poison check" not in text and "ulp: ulp distance up to 3" in text
    labels = [f.check for f in r.findings]
    assert len(labels) == len(set(labels))


def test_the_golden_table_uses_the_kernels_store_tiles():
    """The report page's per-tile table has the heatmap's grid (the kernel's [32, 64] stores), not the
    comparison's default one."""
    from pypto.debug.doctor import _golden_text
    from pypto.runtime import RunConfig

    a, out = torch.randn(128, 64), torch.zeros(128, 64)
    compiled = K.ranged_producers.compile(a, out, config=RunConfig())
    bad = (a + 1).clone()
    bad[40, 3] = 7.0
    text = _golden_text({"out": bad}, {"out": a + 1}, 1e-5, 1e-5, (), compiled)
    assert "mismatches per [32, 64] tile" in text
    rows = text.split("mismatches per [32, 64] tile (rows x cols of tiles):")[1].strip().splitlines()
    assert [r.split() for r in rows] == [["0"], ["1"], ["0"], ["0"]]


def test_a_diagnostic_is_named_in_words_not_only_by_its_code():
    from pypto.debug.doctor import _diagnostic_words
    from pypto.errors import Span

    class D:
        code, message, span = "PH001", "tile.load has innermost dim = 64B (tile FP32[16, 16]); moves 1024B", \
            Span("k.py", 3, 5, 3, 9)
    text = _diagnostic_words(D())
    assert text.startswith("performance hint PH001 at k.py:3:6: tile.load has innermost dim = 64B")
    assert "moves 1024B" not in text
