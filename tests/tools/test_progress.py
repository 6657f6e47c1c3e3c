"""The progress line of the debugging tools (``pypto.progress``): drawn on a terminal only, after
the work has taken ``delay`` seconds, nested bars share one line, the line is erased at the end; the
tools (race detector, poison check, validate_ir, fuzz, cast-check, doctor) report through it."""
import io

import pytest
import torch

from pypto import progress
from pypto.progress import Progress, track


class Tty(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture(autouse=True)
def no_throttle(monkeypatch):
    monkeypatch.setattr(progress, "_MIN_INTERVAL", 0.0)
    monkeypatch.delenv("PYPTO_PROGRESS", raising=False)
    monkeypatch.delenv("PYPTO_PROGRESS_DELAY", raising=False)
    yield
    assert progress._STACK == []


def frames(text):
    return [f.rstrip() for f in text.split("\r") if f.strip()]


def test_forced_lines_and_erase():
    out = io.StringIO()
    with Progress("work", 3, stream=out, force=True, delay=0) as bar:
        bar.update(detail="a")
        bar.update(detail="b")
        bar.update()
    text = out.getvalue()
    assert frames(text) == ["work: 1/3 (33%) a", "work: 2/3 (66%) b", "work: 3/3 (100%) b"]
    assert text.endswith("\r" + " " * len("work: 3/3 (100%) b") + "\r")   # erased
    assert "\n" not in text                                               # one updating line


def test_nested_bars_share_the_line():
    out = io.StringIO()
    with Progress("doctor", 5, stream=out, force=True, delay=0) as outer:
        outer.set(1, "step 2")
        for _ in track(range(2), "seeds"):
            pass
    fs = frames(out.getvalue())
    assert "doctor: 1/5 (20%) step 2" in fs
    assert "doctor: 1/5 (20%) step 2 › seeds: 1/2 (50%)" in fs
    assert "doctor: 1/5 (20%) step 2 › seeds: 2/2 (100%)" in fs


def test_tty_and_delay():
    quiet = Tty()
    with Progress("slow", 2, stream=quiet, delay=3600) as bar:    # a terminal, but not slow enough yet
        bar.update()
    assert quiet.getvalue() == ""
    tty = Tty()
    with Progress("slow", 2, stream=tty, delay=0) as bar:
        bar.update()
    assert frames(tty.getvalue()) == ["slow: 1/2 (50%)"]


def test_nothing_written_when_not_a_tty():
    out = io.StringIO()
    with Progress("work", 3, stream=out, delay=0) as bar:
        for _ in range(3):
            bar.update()
    assert out.getvalue() == ""
    for _ in track(range(3), "work", stream=out, delay=0):
        pass
    assert out.getvalue() == ""


def test_env_forces_on_and_off(monkeypatch):
    monkeypatch.setenv("PYPTO_PROGRESS", "1")
    monkeypatch.setenv("PYPTO_PROGRESS_DELAY", "0")
    out = io.StringIO()
    for _ in track(range(2), "env", stream=out):
        pass
    assert frames(out.getvalue()) == ["env: 1/2 (50%)", "env: 2/2 (100%)"]
    monkeypatch.setenv("PYPTO_PROGRESS", "0")
    tty = Tty()
    for _ in track(range(2), "env", stream=tty):
        pass
    assert tty.getvalue() == ""


def test_bar_closed_when_the_loop_breaks():
    out = io.StringIO()
    for i in track(range(10), "partial", stream=out, force=True, delay=0):
        if i == 2:
            break
    assert progress._STACK == []
    assert out.getvalue().endswith("\r")


def _tool_stderr(capsys, monkeypatch, fn):
    monkeypatch.setenv("PYPTO_PROGRESS", "1")
    monkeypatch.setenv("PYPTO_PROGRESS_DELAY", "0")
    capsys.readouterr()
    fn()
    on = capsys.readouterr().err
    monkeypatch.delenv("PYPTO_PROGRESS")
    fn()
    off = capsys.readouterr().err
    return on, off


def test_tools_report_progress(capsys, monkeypatch):
    import test_races as TR
    from pypto.debug.cast_check import certify
    from pypto.debug.races import detect_races, detect_uninitialized

    k = TR.K.war_basic
    args = TR.sig_inputs(k)
    on, off = _tool_stderr(capsys, monkeypatch, lambda: (detect_races(k, args), detect_uninitialized(k, args)))
    assert "race detector: running tasks: 1/" in on and "race detector: task pairs:" in on
    assert "poison check: tasks: " in on
    assert "race detector" not in off and "poison check" not in off   # pytest's stderr is not a terminal
    on, off = _tool_stderr(capsys, monkeypatch, lambda: certify("INT32", "FP16", "a5sim", samples=1000))
    assert "cast-check INT32 -> FP16" in on and "cast-check" not in off


def test_fuzz_and_validate_ir_report_progress(capsys, monkeypatch):
    from pypto.debug.fuzz import fuzz
    import test_races as TR

    k = TR.K.war_basic
    args = TR.sig_inputs(k)
    on, off = _tool_stderr(capsys, monkeypatch, lambda: fuzz(k, args, seeds=3, jobs=1, find_races=False))
    assert "fuzz war_basic: seeds: 1/3 (33%) seed 1" in on.replace("\r", "\n") or "fuzz war_basic: seeds: 1/3" in on
    assert "fuzz" not in off
    from pypto.runtime import RunConfig

    compiled = k.compile(*args, config=RunConfig(dump_passes=True))
    a, buf, out = args
    validate = lambda: compiled.validate_ir({"a": a, "buf": buf, "out": out}, {"out": a + buf}, rtol=1e-5,
                                            atol=1e-5, raise_on_mismatch=False, verbose=False)
    on, off = _tool_stderr(capsys, monkeypatch, validate)
    assert "validate_ir: passes: 1/" in on and "frontend" in on
    assert "validate_ir" not in off


def test_a_long_run_shows_its_task_counts(capsys, monkeypatch):
    """A simulated run longer than the delay draws "run <kernel>: tasks: done/submitted" (terminal only);
    the results are the same with the line and without."""
    import test_races as TR

    # the race-free form: war_basic's outcome depends on the (unseeded) schedule, so its two runs may
    # differ for a reason that has nothing to do with the progress line
    k = TR.K.war_fixed
    args = TR.sig_inputs(k)
    outs = []

    def run():
        a = [x.clone() for x in args]
        k(*a)
        outs.append(a[-1])
    on, off = _tool_stderr(capsys, monkeypatch, run)
    assert "run war_fixed: tasks: " in on and "/" in on.split("run war_fixed: tasks: ")[1]
    assert "run war_fixed" not in off
    assert torch.equal(outs[0], outs[1])
