"""Op traits: the properties of an op that passes, diagnostics and code generators ask about.

An :class:`~pypto.ops.registry.OpDef` lists its traits (``traits=(Elementwise(), Lockstep.ROWS,
MemorySpaces((Mem.Vec,), Mem.Vec))``); a consumer asks ``op.trait(Reduction)`` (the trait object or None) or
``op.has(Elementwise)`` instead of keeping its own list of op names, so a new op that declares the
trait is handled everywhere at once (the xDSL / MLIR design). The traits:

* :class:`Elementwise`: ``result[i]`` depends only on the operands' element ``i``.
* :class:`InPlaceSafe`: MemoryReuse may write the result into the buffer of a same-shaped operand
  that dies at this op (false for anything that reads operands after writing results).
* :class:`Reduction`: reduces ``axis`` with ``kind`` (``"sum"``, ``"max"``, ...); ``reads_padding``:
  the whole tile takes part, padding included (row_sum, not row_prod: see pypto/ops/argreduce.py).
* :class:`GlobalMemoryAccess`: reads or writes global memory (the simulator yields to the
  scheduler there; the race detector records it).
* :class:`Scratch`: the operand ``param`` is overwritten before it is read and left clobbered
  (reduction tmp tiles, :mod:`pypto.codegen.scratch`).
* :class:`Lockstep`: how ``sim`` runs on a lockstep gang of tasks (:mod:`pypto.codegen.gang`).
* :class:`MemorySpaces`: where the operands may live and where the result goes
  (InferTileMemorySpace).
* :class:`ReadsBlock`: the value depends on the running block (the reference executor passes
  ``_block`` to the functions that use one).
* :class:`ViewOf`: the tensor result is a view of operand ``param`` (a write to it writes that
  operand).
* :class:`CoreSync`: a synchronisation op of the running core (``pl.system.sync_src`` / ``fence`` /
  ``syncall``, :mod:`pypto.ops.sync`): its ``sim`` calls the kernel's sync link ``_cc``, which every
  kernel using one has (a plain InCore kernel gets a core-local one).

Compatibility path: ``OpDef(gm=..., batch=..., scratch=..., inplace_safe=..., input_spaces=...,
result_space=...)``, the keywords ops were declared with before traits existed, are still accepted
and turned into traits by :func:`from_legacy` (the only place that knows them); reading
``op.gm`` / ``op.batch`` / ... answers from the traits. New definitions use ``traits=``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Optional


class Trait:
    """Base class of op traits (frozen dataclasses; an op holds at most one of each class)."""


@dataclass(frozen=True)
class InPlaceSafe(Trait):
    """The result may share the buffer of a same-shaped operand that dies at this op."""


@dataclass(frozen=True)
class Elementwise(Trait):
    """``result[i]`` is a function of the operands' elements ``i`` alone. Independent of
    :class:`InPlaceSafe`: an elementwise op with a scratch operand, or one whose result has another
    dtype, does not share a buffer."""


@dataclass(frozen=True)
class Reduction(Trait):
    """Reduces ``axis`` (negative: from the end) with ``kind``; ``reads_padding``: over the whole
    tile, its padding included (the reduction over-padding lint applies)."""

    axis: int
    kind: str
    reads_padding: bool = True


@dataclass(frozen=True)
class GlobalMemoryAccess(Trait):
    """The op reads (``"read"``) or writes (``"write"``) global memory."""

    mode: str

    def __post_init__(self):
        if self.mode not in ("read", "write"):
            raise ValueError(f"GlobalMemoryAccess mode must be 'read' or 'write', got {self.mode!r}")


@dataclass(frozen=True)
class Scratch(Trait):
    """Operand ``param`` is scratch: overwritten before it is read, left clobbered."""

    param: str


@dataclass(frozen=True)
class Lockstep(Trait):
    """How the op runs in a lockstep gang, whose tile views have a leading axis over several cores:

    * ``"rows"``: ``sim`` on the gang views computes every tile's elements with the same loops as
      for one tile (elementwise, broadcast, reductions with negative axes), given that torch's thread
      split falls on tile boundaries (runtime.gangs.gang_size sizes gangs so);
    * ``"copy"``: ``sim`` on the gang views only moves data;
    * ``"plan"``: a scalar that may differ per task (block index, an extent), computed in each
      member's plan; only global-memory offsets and extents may use it;
    * ``"gang"``: ``sim(..., gang=True)`` makes, per task, the very call the op makes alone (matmul:
      one BLAS call per task), the data movement around it batched.
    """

    form: str
    FORMS: ClassVar[tuple[str, ...]] = ("rows", "copy", "plan", "gang")
    ROWS: ClassVar["Lockstep"]
    COPY: ClassVar["Lockstep"]
    PLAN: ClassVar["Lockstep"]
    GANG: ClassVar["Lockstep"]

    def __post_init__(self):
        if self.form not in self.FORMS:
            raise ValueError(f"Lockstep form must be one of {self.FORMS}, got {self.form!r}")


Lockstep.ROWS, Lockstep.COPY, Lockstep.PLAN, Lockstep.GANG = (Lockstep(f) for f in Lockstep.FORMS)


@dataclass(frozen=True)
class MemorySpaces(Trait):
    """``inputs``: the spaces every tile operand may live in (a tuple of spaces), or per operand
    (a tuple of ``(param name, spaces)`` pairs, e.g. matmul: lhs in Left, rhs in Right); empty:
    any. ``result``: the result's space (None: follow the operands)."""

    inputs: tuple = ()
    result: Any = None
    # ``(target space, inputs)`` pairs: the ``inputs`` that apply instead when the call's
    # ``target_memory`` is that space (tile.extract: a Vec -> Vec extract stays on the vector core)
    by_target: tuple = ()

    def allowed(self, param: str, target: Any = None) -> tuple:
        """The spaces operand ``param`` may live in (empty: any), for a call whose target_memory is
        ``target``."""
        inputs = dict(self.by_target).get(target, self.inputs) if target is not None else self.inputs
        if inputs and isinstance(inputs[0], tuple):
            return dict(inputs).get(param, ())
        return inputs


@dataclass(frozen=True)
class ReadsBlock(Trait):
    """The op's value is the running block's (index, count): it reads ``_block``."""


@dataclass(frozen=True)
class ViewOf(Trait):
    """The tensor result is a view of operand ``param``."""

    param: str


@dataclass(frozen=True)
class CoreSync(Trait):
    """A synchronisation op of the running core: ``sim`` calls ``_cc`` (flags, barriers, fences)."""


@dataclass(frozen=True)
class Clocked(Trait):
    """The op reads the kernel's cycle clock ``_clk`` (the async prefetch: its transfer overlaps the
    kernel's later instructions): the generator yields the pending cycles first, keeps ``_clk`` up to
    date at every yield, and passes ``platform=`` to ``sim``."""


def from_legacy(gm: Optional[str] = None, batch: Optional[str] = None, scratch: Optional[str] = None,
                inplace_safe: bool = False, input_spaces: tuple = (), result_space: Any = None) -> tuple[Trait, ...]:
    """The traits meant by the pre-trait ``OpDef`` keywords (the compatibility path, see the module
    docstring): ``gm`` -> GlobalMemoryAccess, ``batch`` -> Lockstep, ``scratch`` -> Scratch,
    ``inplace_safe`` -> InPlaceSafe, ``input_spaces``/``result_space`` -> MemorySpaces."""
    out: list[Trait] = []
    if gm is not None:
        out.append(GlobalMemoryAccess(gm))
    if batch is not None:
        out.append(Lockstep(batch))
    if scratch is not None:
        out.append(Scratch(scratch))
    if inplace_safe:
        out.append(InPlaceSafe())
    if input_spaces or result_space is not None:
        out.append(MemorySpaces(tuple(input_spaces), result_space))
    return tuple(out)


def normalize(op_name: str, traits: tuple) -> tuple[Trait, ...]:
    """``traits`` checked: each a :class:`Trait`, each class once (a repeat of the same trait is
    dropped; two different traits of one class are a definition error)."""
    out: dict[type, Trait] = {}
    for t in traits:
        if not isinstance(t, Trait):
            raise TypeError(f"op {op_name!r}: {t!r} is not a Trait")
        have = out.get(type(t))
        if have is not None and have != t:
            raise ValueError(f"op {op_name!r} declares {have!r} and {t!r}")
        out[type(t)] = t
    return tuple(out.values())
