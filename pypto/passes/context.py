"""What a pass may know besides the program: the target platform and the diagnostics sink."""
from __future__ import annotations

from dataclasses import dataclass, field

from pypto.backend.platforms import A2A3SIM, Platform


@dataclass
class PassContext:
    """Per-compilation context handed to every pass."""

    platform: Platform = A2A3SIM
    diagnostics: list = field(default_factory=list)
    # AutoDeriveTaskDependencies analyses AUTO scopes only when set (ir.compile / RunConfig knob)
    analyze_auto_scopes_for_deps: bool = False
    # id -> Call of the calls the TypeChecked verification accepted in this compilation: IR nodes are
    # frozen, so a call a pass kept unchanged (the same object) needs no second check after the next
    # pass (the verifier ran ~20 times per compile over every call; the objects are kept alive here
    # so that an id is never reused by another call)
    typed_calls: dict = field(default_factory=dict, repr=False, compare=False)
    # (property, id) -> (Function, summary of the other functions): the functions a per-function
    # property accepted in this compilation (pypto.ir.verifier.verify skips them while unchanged)
    verified_functions: dict = field(default_factory=dict, repr=False, compare=False)
    # AutoTileMatmulL0 may realise the chooser's double-buffered-C (dbC = 2) design: on when the memory
    # planner is DSA_RP or PTOAS, or PYPTO with enable_pypto_l0c_double_buffer=True (the reference's
    # gates; see l0c_double_buffer_enabled)
    l0c_double_buffer: bool = False


def l0c_double_buffer_enabled(memory_planner, enable_pypto_l0c_double_buffer) -> bool:
    """Whether a compilation with these settings lets AutoTileMatmulL0 double-buffer Acc: the
    reference enables dbC = 2 unconditionally under the DSA_RP and PTOAS planners and, under its
    default PYPTO planner, only on the experimental opt-in flag."""
    name = getattr(memory_planner, "value", memory_planner) or "PYPTO"
    return str(name).upper() in ("DSA_RP", "PTOAS") or bool(enable_pypto_l0c_double_buffer)
