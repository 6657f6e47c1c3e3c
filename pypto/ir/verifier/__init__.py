"""IR properties and their checks. At ``VerificationLevel.BASIC`` the pass manager checks, after
each built-in pass, the properties that pass produces, after a user's pass and on the final program
every property established so far (see :func:`pypto.passes.manager.run_passes`).

A failure raises :class:`VerificationError` naming the pass, the property, the offending statement
printed as IR, and its source span.

One module per concern, each registering its checks in :data:`PROPERTIES` (:mod:`.registry`):
:mod:`.structure` (SSA, NoNestedCalls, types, SplitIncoreOrch), :mod:`.tiles` (kernel tiles: ops,
memory spaces, memrefs, addresses, rank 2), :mod:`.calls` (ReturnParamsExplicit, CallDirections,
the derived task dependencies) and :mod:`.memory` (NoLiveOverlap).
"""
from __future__ import annotations

from pypto.errors import VerificationError
from pypto.ir.nodes import Program
from pypto.ir.printer import _Printer
# the checks register in this order (the order of PROPERTIES): front half, tiles, calls, memory
from pypto.ir.verifier import structure  # noqa: F401,I001
from pypto.ir.verifier import tiles  # noqa: F401
from pypto.ir.verifier import calls  # noqa: F401
from pypto.ir.verifier import memory  # noqa: F401
from pypto.ir.verifier.calls import return_roots
from pypto.ir.verifier.registry import PER_FUNCTION, PROPERTIES, Check, function_prop, prop

__all__ = ["PROPERTIES", "Check", "function_prop", "prop", "return_roots", "verify"]


def verify(program: Program, properties, ctx, pass_name: str) -> None:
    """Check ``properties``; raise :class:`VerificationError` on the first failure.

    The pass manager verifies after every pass, and most passes leave most functions alone (the
    same frozen object). A per-function property (:func:`function_prop`) that accepted a function
    under ``ctx`` (``ctx.verified_functions``, one compilation) is not checked again on that very
    object while what it reads of the other functions is unchanged: the verdict could not differ.
    (This halves the verifier's time, which was about a third of a compile.)"""
    memo = getattr(ctx, "verified_functions", None)
    for name in properties:
        check = PROPERTIES.get(name)
        if check is None:
            continue
        per_function = PER_FUNCTION.get(name) if memo is not None else None
        if per_function is None:
            bad = check(program, ctx)
        else:
            fcheck, reads = per_function
            summary = reads(program) if reads is not None else None
            bad = []
            for f in program.functions:
                seen = memo.get((name, id(f)))
                if seen is not None and seen[0] is f and seen[1] == summary:
                    continue
                found = fcheck(f, program, ctx)
                if found:
                    bad.extend(found)
                else:   # the function object is kept alive here, so its id() is never reused
                    memo[(name, id(f))] = (f, summary)
        if bad:
            f, s, msg = bad[0]
            text = ""
            if s is not None:
                p = _Printer()
                try:
                    p.stmt(s, 1)
                    text = "\n".join(p.lines[:3])
                except Exception:  # printing a malformed statement must not hide the report
                    text = f"    {type(s).__name__}"
            more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
            raise VerificationError(
                f"Verification failed after '{pass_name}' for property {name} in function '{f.name}': "
                f"{msg}{more}\n  offending statement:\n{text}", getattr(s, "span", None))
