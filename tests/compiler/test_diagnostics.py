"""Every diagnostic fires on a kernel that deserves it and disabled_diagnostics silences it."""
import pytest
import torch

import kernels_dbg as K
from pypto.passes.diagnostics import CHECKS, DiagnosticPhase
from pypto.runtime import RunConfig

CASES = {
    "PTO-W001": (K.out_rebound, [torch.zeros(64, 128), torch.zeros(64, 128)], "a2a3sim"),
    "PTO-W002": (K.unused_value, [torch.zeros(64, 128), torch.zeros(64, 128)], "a2a3sim"),
    "PTO-P002": (K.fp16_accumulate, [torch.zeros(16, 256, dtype=torch.float16)] * 2, "a2a3sim"),
    "PTO-P003": (K.int_to_bf16, [torch.zeros(16, 128, dtype=torch.int32), torch.zeros(16, 128, dtype=torch.bfloat16)],
                 "a5sim"),
    "PTO-P004": (K.read_uninit, [torch.zeros(16, 128), torch.zeros(16, 128)], "a2a3sim"),
    "PH001": (K.short_rows, [torch.zeros(64, 64), torch.zeros(64, 64)], "a2a3sim"),
    "PTO-W003": (K.parallel_overlap, [torch.zeros(16, 128), torch.zeros(40, 128)], "a2a3sim"),
    "PTO-W004": (K.scratch_read_after, [torch.zeros(16, 128), torch.zeros(16, 1), torch.zeros(16, 128)], "a2a3sim"),
    "PTO-P001": (K.padded_row_max, [torch.zeros(64, 64), torch.zeros(64, 1)], "a2a3sim"),
    "PTO-W006": (K.fp8_floor, [torch.zeros(16, 128), torch.zeros(16, 128, dtype=torch.float8_e4m3fn)], "a5sim"),
    "PTO-W007": (K.writes_in_param, [torch.zeros(16, 128), torch.zeros(16, 128)], "a2a3sim"),
    "PTO-W005": (K.mixed_dtypes, [torch.zeros(16, 128), torch.zeros(16, 128, dtype=torch.float16),
                                  torch.zeros(16, 128)], "a2a3sim"),
}


def _codes(kernel, args, platform, **cfg):
    compiled = kernel.compile(*args, config=RunConfig(platform=platform, **cfg))
    return compiled, {d.code for d in compiled.diagnostics}


@pytest.mark.parametrize("code", sorted(CASES))
def test_fires_and_can_be_silenced(code, capsys):
    kernel, args, platform = CASES[code]
    compiled, codes = _codes(kernel, args, platform)
    assert code in codes
    err = capsys.readouterr().err
    log = (compiled.output_dir / "report" / "diagnostics.log").read_text()
    assert f"[{code}]" in log and "kernels_dbg.py:" in log and "^" in log
    if CHECKS[code].severity.value == "perf_hint":
        # perf hints: one summary line on stderr, the full text in report/perf_hints.log
        assert "[perf_hint]" in err and code in err and "perf_hints.log" in err
        assert f"[{code}]" in (compiled.output_dir / "report" / "perf_hints.log").read_text()
    else:
        assert f"[{code}]" in err and "kernels_dbg.py:" in err and "^" in err
    _, codes = _codes(kernel, args, platform, disabled_diagnostics=frozenset({code}))
    assert code not in codes
    _, codes = _codes(kernel, args, platform, disabled_diagnostics=frozenset({CHECKS[code].name}))
    assert code not in codes


def test_phase_none_silences_everything():
    for code, (kernel, args, platform) in CASES.items():
        _, codes = _codes(kernel, args, platform, diagnostic_phase=DiagnosticPhase.NONE)
        assert not codes, code


def test_pre_pipeline_phase_runs_only_early_checks():
    _, codes = _codes(K.short_rows, [torch.zeros(64, 64)] * 2, "a2a3sim", diagnostic_phase=DiagnosticPhase.PRE_PIPELINE)
    assert "PH001" not in codes
    _, codes = _codes(*CASES["PTO-W002"], diagnostic_phase=DiagnosticPhase.PRE_PIPELINE)
    assert "PTO-W002" in codes


def test_exact_chain_is_not_flagged():
    x = torch.zeros(16, 128, dtype=torch.int32)
    from tests_seed_kernels import to_fp16  # noqa: F401 - see below
    _, codes = _codes(to_fp16, [x, torch.zeros(16, 128, dtype=torch.float16)], "a5sim")
    assert "PTO-P003" not in codes


def test_unknown_code_is_an_error():
    with pytest.raises(ValueError, match="unknown diagnostic"):
        _codes(*CASES["PH001"], disabled_diagnostics=frozenset({"NOPE"}))


def test_every_check_has_a_case():
    missing = set(CHECKS) - set(CASES)
    assert not missing, f"diagnostics without a firing test: {missing}"


def test_padding_hint_names_the_tile_and_keeps_its_store_valid():
    """The fix feeds the filled tile to the reduction only: fillpad's result is fully valid, so
    storing it instead would write the padding into the output (issue 19)."""
    compiled, _ = _codes(*CASES["PTO-P001"])
    (d,) = [d for d in compiled.diagnostics if d.code == "PTO-P001"]
    assert "pl.row_max(pl.fillpad(part, pl.PadValue.min), ...)" in d.message, d.message
    assert "keep storing 'part' itself" in d.message
