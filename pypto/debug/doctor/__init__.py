"""``pypto doctor``: run the precision workflow's five steps for the user, cheapest first, and stop at
the first that explains the gap between the kernel's result and the golden.

1. **Golden and tolerance** (:mod:`.golden`) — is there a gap at all (over several simulated
   schedules); is the reference deterministic (recomputed when a reference function is given); is
   there a recorded golden; was the golden computed in a lower precision than the kernel's output;
   would a tolerance justified by the data type close the gap (:mod:`pypto.debug.tolerance`: it must
   also reject an all-zeros and a shuffled output). Step 1 *settles* on the tolerance only when no
   step-2 check explains the gap: a real bug is never answered with "loosen the tolerance".
2. **Expected differences** (:mod:`.expected`) — reruns under several simulator seeds (split-K /
   atomic order: last-bit drift); then experiments (:mod:`pypto.debug.attribution`): each reduction
   that reads padding, and each FP16/BF16 sum, is recomputed on the reference executor (padding
   filled, FP32 accumulation) and the one whose recomputation closes the gap is the cause — a lint
   that fired on a harmless op is named harmless; rounding-mode ties; every cast chain of the lowered
   IR classified.
3. **The compiler's own checks** (:mod:`.compiler`) — ROUNDTRIP verification after every pass, and
   every diagnostic.
4. **validate_ir** at the user's tolerance — the first diverging pass and the IR diff around it. A
   divergence already at the first stage is not a pass's fault: the kernel as written disagrees with
   the golden, and the doctor says so, with the compiler's warnings at their lines.
5. **Task by task** (:mod:`.tasks`) — the reference and the simulator side by side: the first task
   whose output differs, the race detector and the poison check
   (:func:`pypto.debug.races.detect_uninitialized`). A race adds the simulated task timeline of a
   failing seed, the racing pair highlighted.

The steps are the list :data:`STEPS`, run in order over one :class:`~.session.DoctorSession` (what
they share) until one settles the report — as the compiler's passes are ``pypto.passes.PIPELINE``.
A new check is a function ``(session) -> bool`` in the module of its step, or a new entry here.

Every fix the doctor prints has been tried first (:mod:`pypto.debug.fixes`): applied to a copy of the
kernel's source, compiled and run — the report says ``verified`` (the gap closes), ``not verified``
or ``could not verify`` and why.

The output is a terminal summary (what was checked, what settled it, the suggested fix), a JSON form
(:meth:`DoctorReport.to_dict`) and a self-contained HTML report with pictures
(:mod:`pypto.debug.visual`, :mod:`.page`). While it works, a progress line on stderr (a terminal
only, after the first second: :mod:`pypto.progress`) says which step runs; ``on_step`` receives each
step as it starts (the CLI prints them).
"""
from __future__ import annotations

from typing import Callable, Optional

from pypto.debug.doctor import compiler, expected as _expected, golden, tasks
from pypto.debug.doctor.page import _diagnostic_words, _finish, _golden_text  # noqa: F401 (tests read them)
from pypto.debug.doctor.report import (  # noqa: F401 (the public names of the package)
    CAUSES, STEP_NAMES, DoctorReport, Finding, verification as _verification,
)
from pypto.debug.doctor.session import DoctorSession, Step, _as_kernel
from pypto.progress import Progress
from pypto.runtime.distributed.program import HostFunction

# The diagnosis, cheapest step first; each entry settles the report or hands on to the next.
STEPS = (
    Step(1, STEP_NAMES[1], golden.golden_and_gap),
    Step(2, STEP_NAMES[2], _expected.expected_differences),
    # step 1's tolerance and golden-precision verdicts, once no expected difference explains the gap
    Step(1, STEP_NAMES[1], golden.tolerance_verdict, announce=False),
    Step(3, STEP_NAMES[3], compiler.compiler_checks),
    Step(4, STEP_NAMES[4], compiler.which_pass),
    Step(5, STEP_NAMES[5], tasks.which_task),
)


def doctor(kernel, inputs, expected: Optional[dict] = None, golden_data_dir=None, rtol: Optional[float] = None,
           atol: Optional[float] = None, platform: str = "a2a3sim", reference: Optional[Callable] = None,
           seeds: int = 16, html=None, verbose: bool = False, passes=None,
           on_step: Optional[Callable[[int, str], None]] = None, distributed_config=None) -> DoctorReport:
    """Diagnose why ``kernel(**inputs)`` does not match ``expected`` (see the module docstring).
    A ``@pl.jit.host`` multi-rank program (with ``distributed_config``) goes to
    :func:`pypto.debug.dist_doctor.doctor_distributed`: reduction-order drift or a real bug.

    ``inputs``: every kernel argument (a dict by name, or a list in order; outputs with their initial
    values). ``expected``: golden outputs by name; or ``golden_data_dir`` (recorded with
    ``write_golden``); or ``reference(inputs_dict) -> expected dict``. ``rtol``/``atol`` default to
    the recorded golden's, else 1e-5. ``seeds``: simulated schedules to run. ``html``: where to write
    the HTML report (default: a temporary file). ``passes``: the custom pipeline the kernel is compiled
    with, if any. ``on_step(step, name)`` is called as each step starts.

    A kernel that does not compile raises its compile error (a :class:`pypto.errors.PyptoError` with
    the source location); the doctor diagnoses results, not compile errors.
    """
    if isinstance(kernel, HostFunction):
        # a multi-rank program: its own diagnosis (reduction-order drift vs a real bug)
        from pypto.debug.dist_doctor import doctor_distributed

        return doctor_distributed(kernel, inputs, expected, rtol, atol, platform, seeds=min(seeds, 8),
                                  distributed_config=distributed_config, on_step=on_step)
    kernel = _as_kernel(kernel)
    session = DoctorSession(kernel, inputs, expected, golden_data_dir, rtol, atol, platform, reference, seeds,
                            passes=passes)
    bar = Progress(f"pypto doctor {kernel.fn.__name__}", 5)
    try:
        report = session.run(STEPS, bar, on_step)
    finally:
        bar.close()
    return _finish(report, html, kernel, session.bound, platform, verbose, session.actual, session.expected,
                   session.compiled)
