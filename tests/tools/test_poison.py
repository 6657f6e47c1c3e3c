"""Poison mode (``RunConfig(sim_poison=True)``) and the uninitialized-read check
(``pypto.debug.races.detect_uninitialized``): padding that reaches a reduction and a ``create_tile`` read
before it is written turn into NaN on the simulator and are reported with the store's source line; the
fillpad'ed form and every example kernel (but the deliberately padded ones) are clean."""
import math
import sys
import warnings
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.debug.races import detect_uninitialized
from pypto.errors import PyptoError
from pypto.runtime import RunConfig

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "examples" / "precision"))
import case3_padding_row_max as case3  # noqa: E402

HERE = Path(__file__).name


@pl.jit
def read_before_write(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="rbw"):
        t = pl.load(x, [0, 0], [32, 64])
        acc = pl.create_tile([32, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        out = pl.store(pl.add(t, acc), [0, 0], out)
    return out


@pl.jit
def written_before_read(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="wbr"):
        t = pl.load(x, [0, 0], [32, 64])
        acc = pl.create_tile([32, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        acc = pl.mul(t, 2.0)
        out = pl.store(pl.add(t, acc), [0, 0], out)
    return out


def _x():
    torch.manual_seed(0)
    x = -torch.rand(case3.ROWS, 128) - 0.5
    return x


def _line(fn, text):
    """``file:line`` of the first source line of this test file / module containing ``text``."""
    import inspect

    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, ln in enumerate(lines) if text in ln)


# ------------------------------------------------------------------ poison mode on the simulator
def test_sim_poison_turns_padding_into_nan():
    x = _x()
    out = torch.zeros(case3.ROWS, 2)
    case3.block_row_max(x, out, config=RunConfig(sim_poison=True, sim_seed=0))
    assert torch.isnan(out[:, 1]).all() and not torch.isnan(out[:, 0]).any()
    plain = torch.zeros(case3.ROWS, 2)
    case3.block_row_max(x, plain, config=RunConfig(sim_seed=0))
    assert torch.equal(plain[:, 1], torch.zeros(case3.ROWS))     # zero padding by default
    fixed = torch.zeros(case3.ROWS, 2)
    case3.block_row_max_fixed(x, fixed, config=RunConfig(sim_poison=True, sim_seed=0))
    assert torch.equal(fixed[:, 1], x[:, 64:100].max(1).values)


def test_sim_poison_never_written_tile_and_pool_stays_zeroed():
    x = torch.randn(32, 64)
    out = torch.zeros(32, 64)
    read_before_write(x, out, config=RunConfig(sim_poison=True))
    assert torch.isnan(out).all()
    # the poisoned buffers go to their own pool: a plain run after it still starts from zeroed memory
    out = torch.zeros(32, 64)
    read_before_write(x, out)
    assert torch.equal(out, x)
    out = torch.zeros(32, 64)
    written_before_read(x, out, config=RunConfig(sim_poison=True))
    assert torch.equal(out, x + x * 2.0)


def test_sim_poison_validated():
    with pytest.raises(ValueError, match="sim_poison"):
        RunConfig(sim_poison=1)


# ------------------------------------------------------------------ the per-task report
def test_padded_row_max_is_reported_with_the_store_line():
    x, out = _x(), torch.zeros(case3.ROWS, 2)
    rep = detect_uninitialized(case3.block_row_max, [x, out])
    assert rep.tasks == 2 and rep.out_of_bounds == []
    (f,) = rep.findings
    assert f.kernel == "last_block" and f.cause == "padding" and f.tensor == "out"
    assert (f.elements, f.total) == (case3.ROWS, case3.ROWS)
    store = _line(case3.block_row_max, "out = pl.store(pl.row_max(t, tmp), [0, 1], out)")
    load = _line(case3.block_row_max, "valid_shape=[ROWS, WIDTH - TILE]")
    assert f.store_span.startswith(f"{case3.__file__}:{store}:"), f.format()
    assert any(f"case3_padding_row_max.py:{load}:" in s and "padded tile.load" in s for s in f.sources), f.format()
    text = rep.format()
    assert "uninitialized read: task r0t1 (last_block" in text and "pl.fillpad" in text


def test_fillpad_version_is_clean():
    rep = detect_uninitialized(case3.block_row_max_fixed, [_x(), torch.zeros(case3.ROWS, 2)])
    assert rep.findings == [] and rep.tasks == 2
    assert "no store reads padding" in rep.format()


def test_create_tile_read_before_write_is_reported():
    rep = detect_uninitialized(read_before_write, [torch.randn(32, 64), torch.zeros(32, 64)])
    (f,) = rep.findings
    assert f.kernel == "rbw" and f.cause == "uninitialized tile" and f.elements == 32 * 64
    assert f.store_span.startswith(f"{__file__}:{_line(read_before_write, 'out = pl.store(pl.add(t, acc)')}:")
    create = _line(read_before_write, "acc = pl.create_tile")
    assert any(f"{HERE}:{create}:" in s for s in f.sources), f.format()
    assert "write every element of the tile" in f.format()
    assert detect_uninitialized(written_before_read, [torch.randn(32, 64), torch.zeros(32, 64)]).findings == []


def test_nan_inputs_are_not_poison():
    """The check compares runs bit for bit, so NaN in the data is not mistaken for poison."""
    x = _x()
    x[:, :8] = math.nan
    assert detect_uninitialized(case3.block_row_max_fixed, [x, torch.zeros(case3.ROWS, 2)]).findings == []


# ------------------------------------------------------------------ every example
# entries that let padding into their result on purpose: {(kernel, cause)}
EXPECTED_POISONED = {
    "precision/case3_padding_row_max.py::block_row_max": {("last_block", "padding")},
    "reduction/padded_row_max.py::row_max_padded": None,   # one finding, whatever the scope's name
}


@pytest.fixture(scope="module")
def survey():
    import test_races as TR

    result = {}
    for path in TR._example_files():
        rel = path.relative_to(TR.EXAMPLES).as_posix()
        if TR._unguarded(path):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mod = TR._import_example(path)
        for attr, v in vars(mod).items():
            if not (isinstance(v, TR.JITFunction) and v.kind == "entry" and v.fn.__module__ == mod.__name__):
                continue
            key = f"{rel}::{attr}"
            if key in TR.MANUAL_INPUTS:
                torch.manual_seed(0)
                calls = TR.MANUAL_INPUTS[key]()
            else:
                try:
                    calls = [TR.sig_inputs(v)]
                except Exception:  # noqa: BLE001 - no inputs from the signature
                    continue
            try:
                result[key] = [detect_uninitialized(v, list(args)) for args in calls]
            except PyptoError as e:  # an example that does not compile is test_races' (and its owner's) failure
                warnings.warn(f"poison check skipped for {key}: {type(e).__name__}: {str(e)[:200]}")
    return result


@pytest.mark.slow   # a sweep over every example kernel (about a minute); the tests above keep the fast tier
def test_every_example_kernel_is_clean(survey):
    assert len(survey) >= 10, sorted(survey)
    for key, reports in survey.items():
        for rep in reports:
            assert rep.out_of_bounds == [], f"{key}: {rep.format()}"
            got = {(f.kernel, f.cause) for f in rep.findings}
            if key in EXPECTED_POISONED:
                want = EXPECTED_POISONED[key]
                assert got and (want is None or got == want), f"{key}: {rep.format()}"
            else:
                assert got == set(), f"{key}: {rep.format()}"
    assert "reduction/padded_row_max.py::row_max_filled" in survey
    assert "precision/case3_padding_row_max.py::block_row_max_fixed" in survey
