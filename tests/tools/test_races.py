"""The race detector (``pypto.debug.races``): planted ordering bugs are found with the right kind, the two
scopes by name_hint and a ``deps=`` fix; their fixed forms, disjoint ``no_dep_args`` bands and concurrent
atomic adds are not reported; and every ``pl.jit`` entry of ``examples/`` is race free except the
deliberately racy ones."""
import ast
import functools
import importlib.util
import sys
import warnings
from pathlib import Path

import pytest
import torch

import kernels_races as K
from kernel_templates import filename
from pypto.debug.races import detect_races
from pypto.frontend.specialize import signature_args
from pypto.language.jit import JITFunction

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def sig_inputs(kernel):
    """Deterministic inputs from a fully annotated signature (addresses never depend on the data)."""
    args = []
    for a in signature_args(kernel, {}):
        g = torch.Generator().manual_seed(len(args))
        args.append(torch.randn(a.shape, generator=g).to(a.dtype) if a.is_floating_point() else a.zero_())
    return args


def races_of(kernel, args=None):
    report = detect_races(kernel, sig_inputs(kernel) if args is None else args)
    assert report.out_of_bounds == [], report.format()
    return report


# ------------------------------------------------------------------ planted bugs
# kernel -> the races it must report: {(kind, first scope, second scope)}
PLANTED = {
    "war_basic": {("WAR", "reader", "writer")},
    "war_two_readers": {("WAR", "reader_a", "writer"), ("WAR", "reader_b", "writer")},
    "war_two_readers_half_fixed": {("WAR", "reader_b", "writer")},
    "war_slice": {("WAR", "slice_reader", "band_writer")},
    "war_loop": {("WAR", "loop_reader", "loop_writer")},
    "war_intermediate": {("WAR", "tmp_reader", "refill")},
    "manual_raw": {("RAW", "producer", "consumer")},
    "manual_waw": {("WAW", "top_writer", "bottom_writer")},
    "manual_tid_array_missing": {("RAW", "band_fill", "join")},
    "manual_dep_raw": {("RAW", "md_writer", "md_reader")},
    "no_dep_overlap": {("WAW", "band", "band")},
    "atomic_no_zero_dep": {("WAW", "zero_init", "partial")},
}

# kernels that are correct: the fixed forms of the bugs above, exact-region negatives, atomic adds
CLEAN = ["war_fixed", "war_two_readers_fixed", "war_slice_disjoint", "war_loop_fixed", "manual_raw_fixed",
         "manual_tid_array_fixed", "manual_dep_fixed", "no_dep_disjoint", "no_dep_disjoint_manual",
         "atomic_parallel"]


@pytest.mark.parametrize("name", list(PLANTED))
def test_planted_bug_is_found(name):
    report = races_of(getattr(K, name))
    got = {(r.kind, r.first_kernel, r.second_kernel) for r in report.races}
    assert got == PLANTED[name], report.format()
    for r in report.races:
        assert "deps=[" in r.fix, r.fix
        assert r.overlap_bytes > 0
        src = filename(getattr(K, name)) + ":"   # its source file (generated for the templated cases)
        assert src in r.first_span and src in r.second_span, r.format()
        assert r.first != r.second
        text = r.format()
        assert text.startswith(f"{r.kind} race:") and r.first_kernel in text and r.second_kernel in text
    if any(r.kind == "WAR" for r in report.races):
        war = next(r for r in report.races if r.kind == "WAR")
        assert "reader_tid" in war.fix and "pl.InOut" in war.fix   # order the writer after the reader


@pytest.mark.parametrize("name", CLEAN)
def test_correct_kernel_is_not_reported(name):
    report = races_of(getattr(K, name))
    assert report.races == [], report.format()
    assert report.tasks >= 2
    assert "no unordered conflicting accesses" in report.format()


def test_overlap_is_exact():
    """war_slice: rows 0:48 read, rows 32:64 written -> 16 rows x 64 FP32 overlap."""
    (race,) = races_of(K.war_slice).races
    assert race.overlap_bytes == 16 * 64 * 4
    (race,) = races_of(K.no_dep_overlap).races  # bands 32i:32i+64 overlap by 32 rows; one report per pair
    assert race.overlap_bytes == 32 * 64 * 4


def test_fix_is_verified_by_the_simulator():
    """The planted WAR really races on the simulator for some seed, and its fixed form never does."""
    from pypto.runtime import RunConfig

    a, buf0 = torch.randn(64, 64), torch.randn(64, 64)
    expected = a + buf0

    def wrong(kernel, seeds):
        bad = []
        for s in seeds:
            out = torch.zeros(64, 64)
            kernel(a, buf0.clone(), out, config=RunConfig(sim_seed=s))
            if not torch.equal(out, expected):
                bad.append(s)
        return bad

    assert wrong(K.war_basic, range(40)), "no seed exposed the planted WAR"
    assert wrong(K.war_fixed, range(40)) == []


# ------------------------------------------------------------------ every example
# entries that are racy on purpose: {(kind, first scope, second scope)}
EXPECTED_RACY = {
    "precision/case5_war.py::racy": {("WAR", "reader", "writer")},
    "precision/doctor_cases.py::war_racy": {("WAR", "reader", "writer")},
    # the planted missing dependency of precision case 6 (manual_dep on P)
    "precision/case6_decode_attention.py::attention_missing_dep": {("RAW", "softmax", "pv")},
}

# entries whose signature cannot build inputs (bare pl.Tensor, dynamic dims, scalars): the inputs the
# module itself uses in its __main__ demo. Each entry: a list of argument tuples (one call each).
MANUAL_INPUTS = {
    "language/dynamic_rows.py::drive": lambda: [(torch.randn(n, 64), torch.zeros(n, 64)) for n in (32, 96)],
    "language/specialize_scalar.py::scale_or_shift": lambda: [
        (torch.randn(64, 128), s, torch.zeros(64, 128)) for s in (2.0, 1.0)],
    "language/specialize_scalar.py::first_rows": lambda: [
        (torch.randn(256, 128), n, torch.zeros(256, 128)) for n in (1, 3)],
    "precision/case4_split_k.py::split_k": lambda: [
        (torch.randn(32, k), torch.randn(k, 48), torch.zeros(32, 48)) for k in (256, 512)],
    "precision/case4_split_k.py::k_blocked": lambda: [
        (torch.randn(32, k), torch.randn(k, 48), torch.zeros(32, 48)) for k in (256, 512)],
    "quickstart/bare_tensor.py::bare_add": lambda: [
        (torch.randn(*s), torch.randn(*s), torch.zeros(*s)) for s in ((64, 128), (32, 64))],
}

_TOP_OK = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)


def _unguarded(path: Path) -> list[str]:
    """Top-level statements that would run on import (anything but imports, defs, constants, the docstring
    and ``if __name__ == "__main__":``)."""
    bad = []
    for n in ast.parse(path.read_text()).body:
        if isinstance(n, _TOP_OK) or (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)):
            continue
        if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test):
            continue
        bad.append(f"line {n.lineno}: {type(n).__name__}")
    return bad


def _import_example(path: Path):
    """Import one example with its directory on sys.path (sibling imports such as ``_check``), under a
    private name so its ``__main__`` demo does not run; siblings are dropped again afterwards (every
    directory has its own ``_check``)."""
    name = f"_races_example_{path.parent.name}_{path.stem}"
    before = set(sys.modules)
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(path.parent))
        for k in set(sys.modules) - before:
            f = getattr(sys.modules[k], "__file__", None) or ""
            if f.startswith(str(EXAMPLES)):
                del sys.modules[k]
    return mod


def _example_files():
    return sorted(p for p in EXAMPLES.rglob("*.py") if not p.name.startswith("_"))


@functools.lru_cache(maxsize=None)
def survey():
    """{"dir/file.py::entry": ("checked", [(args, report), ...]) | ("skipped", reason)} for every entry."""
    result = {}
    for path in _example_files():
        rel = path.relative_to(EXAMPLES).as_posix()
        bad = _unguarded(path)
        if bad:
            result[f"{rel}::*"] = ("skipped", f"module runs code on import ({', '.join(bad)}): not imported")
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mod = _import_example(path)
        for attr, v in vars(mod).items():
            if not (isinstance(v, JITFunction) and v.kind == "entry" and v.fn.__module__ == mod.__name__):
                continue
            key = f"{rel}::{attr}"
            if key in MANUAL_INPUTS:
                torch.manual_seed(0)
                calls = MANUAL_INPUTS[key]()
            else:
                try:
                    calls = [sig_inputs(v)]
                except (TypeError, Exception) as e:  # bare pl.Tensor / dynamic dim / scalar parameter
                    result[key] = ("skipped", f"no inputs from the signature and none in MANUAL_INPUTS: {e}")
                    continue
            result[key] = ("checked", [(args, detect_races(v, list(args))) for args in calls])
    return result


@pytest.mark.parametrize("path", [p.relative_to(EXAMPLES).as_posix() for p in _example_files()])
def test_example_is_race_free(path):
    entries = {k: v for k, v in survey().items() if k.split("::")[0] == path}
    for key, (status, what) in entries.items():
        if status == "skipped":
            warnings.warn(f"race check skipped for {key}: {what}")
            continue
        for args, report in what:
            assert report.out_of_bounds == [], f"{key}: {report.format()}"
            got = {(r.kind, r.first_kernel, r.second_kernel) for r in report.races}
            assert got == EXPECTED_RACY.get(key, set()), f"{key}: {report.format()}"


def test_examples_coverage():
    s = survey()
    checked = sorted(k for k, (st, _) in s.items() if st == "checked")
    skipped = {k: why for k, (st, why) in s.items() if st == "skipped"}
    assert len(checked) >= 25, (checked, skipped)
    # the deliberately racy entries and the hand-fed ones were really checked (not skipped)
    present = {k for k in list(EXPECTED_RACY) + list(MANUAL_INPUTS) if (EXAMPLES / k.split("::")[0]).exists()}
    assert present <= set(checked), (present - set(checked), skipped)
    assert "precision/case5_war.py::racy" in checked
    assert "precision/case4_split_k.py::split_k" in checked


def test_split_k_atomic_adds_commute():
    """case4's partial tasks run concurrently (pl.parallel, no_dep_args=[c]) and atomic-add into the same
    c: not a race (the order only moves the last bits, the seed page's step 2). Each partial still waits
    for zero_init, whose plain store would race with them otherwise (see atomic_no_zero_dep)."""
    (_, runs), = [v for k, v in survey().items() if k == "precision/case4_split_k.py::split_k"]
    for args, report in runs:
        assert report.races == [] and report.tasks == 1 + args[0].shape[1] // 32, report.format()
