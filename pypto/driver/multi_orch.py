"""A single-chip program with several independent Orchestration functions (none calls another):
the reference's multi-orchestration form. Each one is its own sub-build,
``<output_dir>/next_levels/<name>/`` (a program of that orchestration and the functions it reaches,
named after it), and the compiled result selects one: ``compiled["chip_orch_add"](a, b, f)`` or
``compiled.chip_orch_add(...)``. A plain ``compiled(...)`` is refused: which one to run would be a
guess (before, the first was run and the others silently dropped)."""
from __future__ import annotations

from pathlib import Path

from pypto.ir.nodes import FuncCall, Program
from pypto.ir.visit import Visitor
from pypto.language.enums import FunctionType


class _Calls(Visitor):
    def __init__(self):
        self.names: set[str] = set()

    def visit_FuncCall(self, c: FuncCall) -> None:
        self.names.add(c.func)
        self.generic_visit(c)


def _callees(f) -> set[str]:
    v = _Calls()
    v.visit(f)
    return v.names


def orchestration_roots(program: Program) -> list[str]:
    """The Orchestration functions no other function calls, in program order."""
    called = set()
    for f in program.functions:
        called |= _callees(f) - {f.name}
    return [f.name for f in program.functions if f.func_type == FunctionType.Orchestration and f.name not in called]


def sub_program(program: Program, root: str) -> Program:
    """``program`` reduced to orchestration ``root`` and what it reaches, named ``root``."""
    funcs = {f.name: f for f in program.functions}
    keep, todo = set(), [root]
    while todo:
        n = todo.pop()
        if n in keep or n not in funcs:
            continue
        keep.add(n)
        todo.extend(_callees(funcs[n]))
    return program.replace(name=root, functions=tuple(f for f in program.functions if f.name in keep))


class MultiOrchCompiledProgram:
    """The compiled multi-orchestration program: one :class:`CompiledProgram` per orchestration."""

    def __init__(self, program: Program, subs: dict, output_dir: Path | None):
        self.program = program
        self._subs = dict(subs)
        self.output_dir = output_dir

    @property
    def orchestration_names(self) -> list[str]:
        """The orchestration functions, in program order."""
        return list(self._subs)

    def __getitem__(self, name: str):
        try:
            return self._subs[name]
        except KeyError:
            raise KeyError(f"no orchestration '{name}' in program '{self.program.name}' (it has: "
                           f"{', '.join(self._subs)})") from None

    def __getattr__(self, name: str):
        subs = self.__dict__.get("_subs", {})
        if name in subs:
            return subs[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __call__(self, *args, **kwargs):
        raise TypeError(f"program '{self.program.name}' has {len(self._subs)} orchestration functions "
                        f"({', '.join(self._subs)}): select one explicitly, e.g. "
                        f"compiled[{next(iter(self._subs))!r}](...)")

    def __repr__(self) -> str:
        return f"MultiOrchCompiledProgram({self.program.name}, orchestrations={self.orchestration_names})"
