"""``RuntimeTag``: the per-argument tags of a task submission — what the compiler decides
(DeriveCallDirections writes them into ``FuncCall.arg_directions``, AutoDeriveTaskDependencies
rewrites some), what the orchestration code passes to ``submit`` and what the runtime's dependency
tracking reads (:mod:`pypto.runtime.deps`). One definition for the three of them.

The reference's ``ir.ArgDirection`` (Input, Output, InOut, OutputExisting, NoDep, Scalar) mirrors the
same runtime tags. Members are ``str`` (a :class:`enum.StrEnum`) equal to their names, and their
``repr`` is the quoted name: the IR, the printed program, the generated modules and ``deps.json``
spell a tag as the plain string ``'INPUT'`` they always have, and a tag read back from any of them
(a plain string) equals the member.
"""
from __future__ import annotations

import enum

__all__ = ["RuntimeTag", "INPUT", "OUTPUT", "INOUT", "OUTPUT_EXISTING", "NO_DEP", "SCALAR", "ALL_TAGS",
           "TENSOR_TAGS", "WRITING_TAGS", "MAY_WRITE_TAGS", "LOOKUP_TAGS", "REGISTER_TAGS"]


class RuntimeTag(enum.StrEnum):
    """How the runtime treats one argument of a submitted task."""

    INPUT = "INPUT"                       # read: looked up in the tensormap (RAW)
    OUTPUT = "OUTPUT"                     # a buffer the runtime allocates: no dependency at all
    INOUT = "INOUT"                       # read and written: looked up (RAW, WAW) and registered
    OUTPUT_EXISTING = "OUTPUT_EXISTING"   # written into an existing buffer: registered
    NO_DEP = "NO_DEP"                     # takes no part in tracking (the kernel may still write it)
    SCALAR = "SCALAR"                     # a scalar argument (its tag is otherwise ignored)

    def __repr__(self) -> str:
        return repr(self.value)


INPUT, OUTPUT, INOUT = RuntimeTag.INPUT, RuntimeTag.OUTPUT, RuntimeTag.INOUT
OUTPUT_EXISTING, NO_DEP, SCALAR = RuntimeTag.OUTPUT_EXISTING, RuntimeTag.NO_DEP, RuntimeTag.SCALAR

ALL_TAGS = tuple(RuntimeTag)
TENSOR_TAGS = frozenset((INPUT, INOUT, OUTPUT_EXISTING, NO_DEP))   # the compiler's choices for a tensor argument
WRITING_TAGS = frozenset((INOUT, OUTPUT_EXISTING))                 # the compiler's "this task writes it"
MAY_WRITE_TAGS = frozenset((OUTPUT, INOUT, OUTPUT_EXISTING, NO_DEP))  # the task may write it (NO_DEP too)
LOOKUP_TAGS = frozenset((INPUT, INOUT))                            # looked up in the tensormap (step B)
REGISTER_TAGS = frozenset((INOUT, OUTPUT_EXISTING))                # registered as producer (step 4)
