"""Exception classes of pypto.

Every error a user can reach carries a :class:`~pypto.ir.span.Span` when one is known and renders
as ``file:line:col: error: message``, the source line, a caret under the span and, where known,
the fix (``hint``). Nothing here imports the rest of the package, so any layer may raise these.
"""
from __future__ import annotations

import linecache
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Span:
    """A source location: 1-based ``line``/``end_line``, 0-based ``col``/``end_col`` (as in ``ast``)."""

    file: str
    line: int
    col: int
    end_line: int = -1   # -1: the start's (the reference's three-argument ``ir.Span(file, line, col)``)
    end_col: int = -1

    def __post_init__(self):
        if self.end_line == -1:
            object.__setattr__(self, "end_line", self.line)
        if self.end_col == -1:
            object.__setattr__(self, "end_col", self.col)

    # the reference's field names
    filename = property(lambda self: self.file, doc="``file`` (the reference's name)")
    begin_line = property(lambda self: self.line, doc="``line`` (the reference's name)")
    begin_column = property(lambda self: self.col, doc="``col`` (the reference's name)")

    @staticmethod
    def unknown() -> "Span":
        """The span of nodes built by the compiler with no user source behind them."""
        return _UNKNOWN

    def is_unknown(self) -> bool:
        """True for :meth:`unknown`."""
        return self.line <= 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"

    def source_line(self) -> str | None:
        """The text of the first line of the span, from ``linecache`` (files and registered strings)."""
        if self.is_unknown():
            return None
        text = linecache.getline(self.file, self.line)
        return text.rstrip("\n") if text else None

    def render(self, message: str, severity: str = "error", hint: str | None = None) -> str:
        """``file:line:col: severity: message`` + the source line + a caret under the span (+ hint)."""
        if self.is_unknown():
            out = f"{severity}: {message}"
        else:
            out = f"{self}: {severity}: {message}"
            src = self.source_line()
            if src is not None:
                end = self.end_col if self.end_line == self.line and self.end_col > self.col else len(src)
                width = max(1, min(end, len(src)) - self.col)
                out += f"\n    {src}\n    {' ' * self.col}{'^' * width}"
        if hint:
            out += f"\n  hint: {hint}"
        return out


_UNKNOWN = Span("<unknown>", 0, 0, 0, 0)


class PyptoError(Exception):
    """Base class of every error pypto raises on purpose. ``str()`` renders span, caret and hint."""

    severity = "error"

    def __init__(self, message: str, span: Optional[Span] = None, hint: str | None = None):
        self.message = message
        self.span = span or Span.unknown()
        self.hint = hint
        super().__init__(message)

    def __str__(self) -> str:
        return self.span.render(self.message, self.severity, self.hint)


class TypeCheckError(PyptoError):
    """An op's schema or type rule rejects its operands or attributes, at whatever stage the call is
    checked: :class:`InvalidOperationError` when the parser builds it from the source,
    :class:`PassTypeError` when a pass builds or re-checks it. Catch this one for both."""


class ParserError(PyptoError):
    """The kernel source cannot be turned into IR."""


class ParserTypeError(ParserError):
    """A type annotation or an operand type is wrong."""


class ParserSyntaxError(ParserError):
    """Python syntax the DSL does not accept."""


class InvalidOperationError(ParserError, TypeCheckError):
    """An op was called with arguments its schema or type rule rejects (raised while parsing)."""


class UnsupportedFeatureError(ParserError):
    """A construct that exists in the language but is not implemented here (yet)."""


class SSAViolationError(ParserError):
    """A rebinding that SSA form forbids."""


class PassError(PyptoError):
    """The source parsed, but a pass cannot lower the program as written for its target: a loop to
    unroll too large, a cast with no path on the platform, conflicting memory spaces, ... (the message
    names the construct, the span points at it). Not a :class:`ParserError`: the source is valid."""


class PassTypeError(PassError, TypeCheckError):
    """A type rule rejected an op call during a pass (the pass manager re-raises a type error a pass
    hits under this class, keeping message, span and hint)."""


class SplitBoundaryError(TypeCheckError, ValueError):
    """A value crossing the cube <-> vector boundary of a split kernel (``pl.aiv_shard`` /
    ``pl.aic_gather``, or a crossing of ``pl.split``) has valid extents the boundary cannot carry to
    the two vector lanes (pypto.ops.aiv_split). The reference rejects these programs with a
    ``ValueError``; this class is one too, so code written for it catches the same error."""


class VerificationError(PyptoError):
    """An IR property failed to hold after a pass; the message names the pass and the property."""


class CodegenError(PyptoError):
    """The lowered program cannot be turned into kernels (e.g. a tensor op left in orchestration)."""


class CapacityError(PyptoError):
    """Live tiles of a kernel do not fit in an on-chip memory space."""


class PlatformError(PyptoError, ValueError):
    """An unknown platform, or a real-device platform this package cannot run."""


class SimulationError(PyptoError):
    """The simulated device hit a fault (out-of-bounds access, deadlock, ...)."""


class IRBuilderError(PyptoError, RuntimeError):
    """:class:`pypto.ir.IRBuilder` used out of order (a statement outside a function, a loop closed
    with unequal iter_args and return_vars, a result read before its ``with`` block ended ...); the
    span is the builder call's line in the user's code. A ``RuntimeError``, as the reference's."""


class IRBuilderTypeError(IRBuilderError, TypeError, ValueError):
    """A type given to :class:`pypto.ir.IRBuilder` disagrees with the one it infers (the reference
    raises ``ValueError`` or ``TypeError`` there: this is both)."""


class InternalError(PyptoError, RuntimeError):
    """A compiler invariant broke: a bug in pypto, not in the kernel. Names the pass and the op."""
