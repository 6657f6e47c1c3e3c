"""InitMemRef: every tile of an InCore function gets a buffer of its own.

Requires: TileMemoryInferred (a buffer belongs to one memory space). Produces: HasMemRefs — each
tile type carries ``MemRef(base, 0, size)``: ``base`` names a buffer (``"mem_vec_3"``: the space in
lower case and a number unique in the function, in definition order), ``size`` is the tile's bytes,
and the buffer has no address yet.

Only values that must share storage share a buffer: a loop's iter_arg and its return var, because
the generated kernel keeps the carried value in one buffer across iterations and reads the loop's
result from it. Nothing else must: the kernel copies a loop's initial value into the carried buffer
and an if's yielded values into the if's results, so those stay separate here; MemoryReuse may later
let a loop's initial value hand its buffer over to the loop when it dies there (and merge any other
tiles whose lifetimes do not overlap). Addresses come from AllocateMemoryAddr.
"""
from __future__ import annotations

from pypto.ir.nodes import Function, Program, Var
from pypto.ir.types import MemRef
from pypto.language.enums import KERNEL_TYPES
from pypto.passes.context import PassContext
from pypto.passes.memory_liveness import Liveness, MemRefRewriter

NAME = "InitMemRef"
REQUIRES = ("TileMemoryInferred",)
PRODUCES = ("HasMemRefs",)


def run(program: Program, ctx: PassContext) -> Program:
    return program.replace(functions=tuple(
        _init(f) if f.func_type in KERNEL_TYPES else f for f in program.functions))


def base_name(space, n: int) -> str:
    """The name of the ``n``-th buffer of a function, in ``space``."""
    return f"mem_{space.name.lower()}_{n}"


def _init(f: Function) -> Function:
    live = Liveness(f)
    share = {id(rv): it for it, rv in live.carried}   # a loop result lives in its carried buffer
    refs: dict[int, MemRef] = {}
    count = 0
    for i in live.order:
        t = live.var[i].type
        owner = share.get(i)
        if owner is not None and id(owner) in refs:
            refs[i] = refs[id(owner)]
        else:
            refs[i] = MemRef(base_name(t.memory_space, count), 0, t.nbytes)
            count += 1

    def memref_of(v: Var):
        return refs.get(id(v))

    return MemRefRewriter(memref_of).function(f)
