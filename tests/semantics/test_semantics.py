"""Issue 13: the simulator and torch_codegen agree on what a kernel means, and bad input is a
located user error (items 4, 5, 7, 13, 15; item 12 is tests/ops/test_dtype_sweep.py, the
differential fuzzer tests/tools/test_difffuzz.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

import pypto.ir as ir
from pypto.errors import InternalError, ParserError, PyptoError, SimulationError, VerificationError
from pypto.ir.nodes import FuncCall
from pypto.ir.visit import iter_stmts
from pypto.language.enums import ParamDirection
from pypto.passes.param_writes import InParamWriteError, check_program
from pypto.runtime import RunConfig

import kernels_sem as K

sys.path.insert(0, str(Path(__file__).parents[1] / "ops"))
from ops_harness import assert_same_bits, run_ref, run_sim  # noqa: E402

CFG = RunConfig(sim_seed=0)


def located(e: BaseException, line_text: str) -> None:
    """``e`` is a user error whose span points at the kernel line containing ``line_text``."""
    assert isinstance(e, PyptoError) and not isinstance(e, (InternalError, VerificationError)), repr(e)
    assert e.span is not None and e.span.line > 0, str(e)
    assert line_text in (e.span.source_line() or ""), str(e)
    assert f":{e.span.line}:" in str(e) and "^" in str(e)


def warnings_of(kernel, *args) -> list:
    return [d for d in kernel.compile(*args, config=CFG).diagnostics]


# ------------------------------------------------------------------ item 4 (decision revised by issue 14)
# A written In tensor parameter is written in place, as in the reference, and inferred InOut: the
# expected values below are computed by hand from the kernels' source (a = ones).
ONES = torch.ones(16, 64)
_SLICE_A = torch.cat([torch.full((8, 64), 2.0), torch.full((8, 64), 3.0)])
_SLICE_OUT = torch.cat([torch.full((8, 64), 3.0), torch.full((8, 64), 2.0)])
WRITTEN_IN = [
    # kernel, line of the write, expected a, expected out
    (K.forgot_out, "out[:] = pl.add(a, 1.0)", ONES, ONES + 1),
    (K.stores_into_input, "a = pl.store(pl.add(t, t), [0, 0], a)", ONES * 2, ONES),
    # iteration 1 reads the rows of a that iteration 0 wrote: only an ordered run gives these values
    (K.writes_a_slice_of_input, "a[i * 8:i * 8 + 8, :]", _SLICE_A, _SLICE_OUT),
]


@pytest.mark.parametrize("kernel, line, want_a, want_out", WRITTEN_IN)
def test_a_written_in_parameter_is_written_in_place_by_both_executors(kernel, line, want_a, want_out):
    for p in ("a2a3sim", "a5sim"):
        sim_a, sim_out = run_sim(kernel, [ONES, torch.zeros(16, 64)], p)
        assert torch.equal(sim_a, want_a) and torch.equal(sim_out, want_out), p
    ref_a, ref_out = run_ref(kernel, [ONES, torch.zeros(16, 64)])
    assert torch.equal(ref_a, want_a) and torch.equal(ref_out, want_out)
    # the caller's own tensors, through the jit call
    a, out = ONES.clone(), torch.zeros(16, 64)
    kernel(a, out, config=CFG)
    assert torch.equal(a, want_a) and torch.equal(out, want_out)
    # the warning names the write and the fix; the compiled signature says InOut
    (d,) = [d for d in warnings_of(kernel, ONES.clone(), torch.zeros(16, 64)) if d.code == "PTO-W007"]
    assert line in (d.span.source_line() or "") and "pl.InOut" in d.message and d.span.line > 0
    lowered = kernel.lower(ONES.clone(), torch.zeros(16, 64))
    name = "out" if kernel is K.forgot_out else "a"
    entry = lowered.entry
    assert dict(zip([q.name for q in entry.params], entry.directions))[name] == ParamDirection.InOut


def test_a_written_in_parameter_orders_the_tasks_under_every_schedule():
    """The tasks of writes_a_slice_of_input touch ``a`` as INOUT, so a later iteration's read waits for
    the earlier write whatever order the simulator picks among ready tasks."""
    lowered = K.writes_a_slice_of_input.lower(ONES.clone(), torch.zeros(16, 64))
    calls = [s.value for s in iter_stmts(lowered.entry.body) if isinstance(getattr(s, "value", None), FuncCall)]
    funcs = {f.name: f for f in lowered.functions}
    tags = [c.arg_directions[i] for c in calls for i, q in enumerate(funcs[c.func].params) if q.name == "a"]
    assert tags and all(t == "INOUT" for t in tags), tags
    for seed in range(6):
        a, out = ONES.clone(), torch.zeros(16, 64)
        K.writes_a_slice_of_input(a, out, config=RunConfig(sim_seed=seed))
        assert torch.equal(a, _SLICE_A) and torch.equal(out, _SLICE_OUT), seed


def test_an_incore_function_writing_an_in_parameter_writes_it_and_its_caller_passes_it_inout():
    c = ir.compile(K.InCoreWritesIn, dump_passes=False)
    kernel = c.lowered.function("kernel") if hasattr(c.lowered, "function") else \
        next(f for f in c.lowered.functions if f.name == "kernel")
    assert kernel.directions[1] == ParamDirection.InOut
    assert any(d.code == "PTO-W007" and "pl.store(t, [0, 0], out)" in d.span.source_line() for d in c.diagnostics)
    x, out = torch.randn(16, 64), torch.zeros(16, 64)
    c(x, out)
    assert torch.equal(out, x)
    with pytest.raises(InParamWriteError) as e:          # the strict form, for tools
        check_program(K.InCoreWritesIn)
    located(e.value, "pl.store(t, [0, 0], out)")


def test_an_inout_parameter_is_written_alike_by_both_executors():
    a = torch.randn(16, 64)
    for p in ("a2a3sim", "a5sim"):
        (s,) = run_sim(K.inout_is_fine, [a], p)
        (r,) = run_ref(K.inout_is_fine, [a])
        assert_same_bits(s, r, p)
        assert torch.equal(s, a + 1)


# ------------------------------------------------------------------ item 5
def test_a_reduction_scratch_read_afterwards_agrees_and_is_warned_about():
    a = torch.randn(16, 64)
    args = [a, torch.zeros(16, 1), torch.zeros(16, 64)]
    for p in ("a2a3sim", "a5sim"):
        sim, ref = run_sim(K.scratch_is_live, args, p), run_ref(K.scratch_is_live, args)
        for x, y in zip(sim, ref):
            assert_same_bits(x, y, p)       # torch_codegen left the row_max partial results in u too
    assert torch.equal(sim[1], a * 2) is False   # u was clobbered: the scratch holds partial results
    ds = [d for d in warnings_of(K.scratch_is_live, *args) if d.code == "PTO-W004"]
    assert len(ds) == 1 and "tile 'u'" in ds[0].message and "row_max" in ds[0].message
    assert "u_out = pl.store(u" in ds[0].span.source_line()


def test_a_scratch_reused_only_as_scratch_is_not_warned_about():
    args = [torch.randn(16, 64), torch.zeros(16, 1)]
    assert not [d for d in warnings_of(K.scratch_reused_as_scratch, *args) if d.code == "PTO-W004"]
    sim, ref = run_sim(K.scratch_reused_as_scratch, args, "a2a3sim"), run_ref(K.scratch_reused_as_scratch, args)
    assert_same_bits(sim[1], ref[1])


# ------------------------------------------------------------------ item 7
def test_a_store_overlapping_itself_across_parallel_iterations_is_warned_about():
    ds = [d for d in warnings_of(K.overlapping_bands, torch.ones(16, 64), torch.zeros(40, 64)) if d.code == "PTO-W003"]
    assert len(ds) == 1 and "i=0 and i=1" in ds[0].message
    assert "out[i * 8:i * 8 + 16, :]" in ds[0].span.source_line()


def test_two_overlapping_stores_in_parallel_are_warned_about_at_both():
    ds = [d for d in warnings_of(K.two_stores_overlap, torch.ones(16, 64), torch.zeros(80, 64)) if d.code == "PTO-W003"]
    lines = sorted(d.span.line for d in ds)
    assert len(ds) == 2 and lines[0] != lines[1]
    for d, other in ((ds[0], ds[1]), (ds[1], ds[0])):
        assert f":{other.span.line}:" in d.message   # each names the other store


@pytest.mark.parametrize("kernel, rows", [(K.disjoint_bands, 64), (K.overlapping_but_sequential, 40)])
def test_disjoint_or_ordered_stores_are_not_warned_about(kernel, rows):
    assert not [d for d in warnings_of(kernel, torch.ones(16, 64), torch.zeros(rows, 64)) if d.code == "PTO-W003"]


# ------------------------------------------------------------------ item 13
def _raises_located(fn, line):
    with pytest.raises(PyptoError) as e:
        fn()
    located(e.value, line)
    return e.value


def test_full_with_a_value_out_of_range_is_a_located_error():
    a = torch.randn(16, 32)
    e = _raises_located(lambda: K.full_too_big(a, torch.zeros(16, 32), config=CFG), "value=1e39")
    assert "does not fit FP32" in str(e)
    out = torch.zeros(16, 32)
    K.full_inf(a, out, config=CFG)                       # an explicit infinity is fine
    assert torch.isinf(out).all()


def test_a_float_past_its_dtype_is_a_located_error_not_an_infinity():
    """Before: an FP16 scalar argument 1e6 and a float literal 1e39 (every float literal is FP32)
    silently became infinities, as pl.full(value=1e39) no longer does."""
    a = torch.ones(16, 32).half()
    e = _raises_located(lambda: K.adds_fp16_param(a, 1e6, torch.zeros_like(a), config=CFG), "def adds_fp16_param")
    assert "'s' is FP16" in str(e) and "infinity" in str(e)
    out = torch.zeros_like(a)
    K.adds_fp16_param(a, float("inf"), out, config=CFG)     # an infinity meant as one is fine
    assert torch.isinf(out).all()
    K.adds_fp16_param(a, 65504.0, out, config=CFG)           # the largest finite FP16 too
    assert torch.equal(out, a + 65504.0)
    e = _raises_located(lambda: K.literal_too_big(torch.ones(16, 32), torch.zeros(16, 32), config=CFG), "1e39")
    assert "does not fit FP32" in str(e)


def test_a_region_out_of_bounds_once_a_scalar_is_specialised_is_a_located_error():
    """Before (difffuzz seed 39046): with n = 1 compiled in, Simplify folded i * 64 to 0 and the
    verifier, not the user, found the load leaving the [1, 128] tensor: a VerificationError."""
    e = _raises_located(lambda: K.loads_past_a_short_tensor(torch.randn(1, 128), 1, torch.zeros(256, 128),
                                                            config=CFG), "pl.load(a, [i * 64, 0], [64, 128])")
    assert not isinstance(e, (VerificationError, InternalError)) and "leaves the tensor" in str(e)


def test_an_int_literal_beyond_64_bits_is_a_located_error():
    a = torch.ones(16, 32, dtype=torch.int32)
    e = _raises_located(lambda: K.huge_literal(a, torch.zeros_like(a), config=CFG), "100000000000000000000")
    assert "64 bits" in str(e)


def test_a_fractional_loop_bound_is_a_located_error():
    e = _raises_located(lambda: K.fractional_range(torch.ones(16, 32), torch.zeros(16, 32), config=CFG),
                        "pl.range(2.5)")
    assert "must be an integer" in str(e)


def test_a_zero_step_at_run_time_is_a_located_error():
    e = _raises_located(lambda: K.step_from_data(torch.ones(16, 32), torch.zeros(1, 8, dtype=torch.int32),
                                                 torch.zeros(16, 32), config=CFG), "pl.range(0, 4, st)")
    assert isinstance(e, SimulationError) and "step is 0" in str(e)


def test_a_task_id_array_overflow_is_a_located_error():
    e = _raises_located(lambda: K.task_ids_overflow(torch.ones(16, 32), torch.zeros(16, 32), config=CFG),
                        "tids[i] = tid")
    assert isinstance(e, SimulationError)


def test_an_out_of_bounds_access_at_run_time_names_the_kernel_line():
    s = torch.full((1, 8), 40, dtype=torch.int32)
    e = _raises_located(lambda: K.reads_past_the_end(torch.ones(16, 32), s, torch.zeros(16, 32), config=CFG),
                        "pl.load(a, [r, 0], [16, 32])")
    assert isinstance(e, SimulationError) and "out of bounds" in str(e)


def test_an_incore_function_without_return_returns_its_outputs():
    # the reference's form (no return annotation, no return statement): the kernel's Out / InOut
    # parameters' final values are its results, so the caller's rebinding sees the stored values
    x = torch.arange(16 * 32, dtype=torch.float32).reshape(16, 32)
    for p in ("a2a3sim", "a5sim"):
        out = torch.zeros(16, 32)
        K.calls_kernel_without_return(x, out, config=RunConfig(platform=p))
        assert torch.equal(out, x), p


def test_zero_size_and_negative_dims_are_located_errors():
    e = _raises_located(lambda: K.bare_add(torch.zeros(0, 32), torch.zeros(0, 32), torch.zeros(0, 32), config=CFG),
                        "def bare_add")
    assert "zero-size" in str(e) and "'a'" in str(e)
    e = _raises_located(lambda: K.negative_dim(torch.zeros(16, 32), torch.zeros(16, 32), config=CFG), "[16, -1]")
    assert ">= 1" in str(e)


def test_a_tensor_read_after_a_store_in_the_same_kernel_reads_the_stored_values():
    a = torch.randn(16, 32)
    args = [a, torch.zeros(16, 32), torch.zeros(16, 32)]
    for p in ("a2a3sim", "a5sim"):
        sim, ref = run_sim(K.write_then_read, args, p), run_ref(K.write_then_read, args)
        for x, y in zip(sim, ref):
            assert_same_bits(x, y, p)
        assert torch.equal(sim[2], (a + 1) * 2)


def test_a_tensor_the_program_creates_and_returns_is_returned_by_the_simulator():
    x = torch.randint(0, 5, (16, 32), dtype=torch.int32)
    y = torch.randint(0, 5, (16, 32), dtype=torch.int32)
    r = K.returns_a_new_tensor(x, y, config=CFG)     # (used to return None: the result was lost)
    assert isinstance(r, torch.Tensor) and torch.equal(r, x < y)


# ------------------------------------------------------------------ item 15
@pytest.mark.parametrize("what, out, needle", [
    ("expanded", lambda: torch.zeros(1, 32).expand(16, 32), "share memory"),
    ("requires_grad", lambda: torch.zeros(16, 32, requires_grad=True), "requires grad"),
    ("meta", lambda: torch.zeros(16, 32, device="meta"), "device 'meta'"),
])
def test_an_unwritable_out_argument_is_rejected_before_running(what, out, needle, monkeypatch):
    import pypto.runtime.simulator as S

    ran = []
    real = S.Runtime.run_all
    monkeypatch.setattr(S.Runtime, "run_all", lambda self: ran.append(1) or real(self))
    with pytest.raises(TypeError) as e:
        K.bare_add(torch.randn(16, 32), torch.randn(16, 32), out(), config=CFG)
    assert needle in str(e.value) and "'out'" in str(e.value)
    assert not ran                                    # nothing ran: no work lost at write-back


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex64])
def test_a_tensor_of_a_dtype_the_device_lacks_is_a_located_error(dtype):
    """Before: a float64 argument raised a bare TypeError from inside dtype_from_torch, naming no
    parameter and pointing nowhere."""
    e = _raises_located(lambda: K.bare_add(torch.randn(16, 32), torch.zeros(16, 32, dtype=dtype),
                                           torch.zeros(16, 32), config=CFG), "def bare_add")
    assert "argument 'b'" in str(e) and str(dtype) in str(e)


def test_mixed_float_dtypes_promote_by_an_explicit_rule_with_a_warning():
    a, b, out = torch.randn(16, 32), torch.randn(16, 32).half(), torch.zeros(16, 32)
    ds = [d for d in warnings_of(K.bare_add, a, b, out) if d.code == "PTO-W005"]
    assert len(ds) == 1 and "FP32 and FP16" in ds[0].message
    K.bare_add(a, b, out, config=CFG)
    assert torch.equal(out, a + b.float())
    # FP16 with BF16: no type holds both exactly (the reference's rule and torch's differ): an error
    e = _raises_located(lambda: K.bare_add(a.bfloat16(), b, out.half(), config=CFG), "pl.add(a, b)")
    assert "BF16 and FP16" in str(e)


@pytest.mark.parametrize("make", [
    lambda: torch.zeros(16, 64)[:, ::2],                          # every other column
    lambda: torch.zeros(32, 16).t(),                              # transposed (torch: no overlap)
    lambda: torch.zeros(16, 2, 32).permute(1, 0, 2)[0],           # a strided slice of a permuted tensor
    lambda: torch.zeros(64, 32).as_strided((16, 32), (33, 1)),    # rows 33 apart: distinct elements
])
def test_a_non_contiguous_out_view_without_shared_elements_is_written(make):
    """Before: torch's overlap test cannot classify most non-contiguous layouts ("too hard") and
    such an Out view was refused as if elements shared memory."""
    out = make()
    a, b = torch.randn(16, 32), torch.randn(16, 32)
    K.bare_add(a, b, out, config=CFG)
    assert torch.equal(out, a + b)


@pytest.mark.parametrize("make", [
    lambda: torch.zeros(64).as_strided((16, 32), (2, 1)),          # rows overlap by 30 elements
    lambda: torch.zeros(600).as_strided((16, 32), (31, 2)),        # interleaved: a later row meets an earlier one
])
def test_an_out_view_whose_elements_share_memory_is_still_refused(make):
    from pypto.runtime.arguments import _overlaps
    out = make()
    assert _overlaps(out)
    with pytest.raises(TypeError, match="share memory"):
        K.bare_add(torch.randn(16, 32), torch.randn(16, 32), out, config=CFG)


def test_the_overlap_test_agrees_with_enumerating_offsets():
    """The exact decision against a brute-force oracle over random small strided layouts."""
    import random
    from pypto.runtime.arguments import _overlaps
    rng = random.Random(0)
    base = torch.zeros(4096)
    for _ in range(400):
        shape = [rng.randint(1, 5) for _ in range(rng.randint(1, 3))]
        strides = [rng.randint(0, 12) for _ in shape]
        v = base.as_strided(shape, strides)
        offs = [sum(i * s for i, s in zip(idx, strides)) for idx in __import__("itertools").product(*map(range, shape))]
        assert _overlaps(v) == (len(set(offs)) != len(offs)), (shape, strides)
