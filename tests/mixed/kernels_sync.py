"""Mixed cube + vector programs synchronised by pl.system ops (written for the tests of this directory).

The pattern: the vector core computes ``a + 1`` and hands it to the cube through the global-memory
tensor ``ws``; the cube loads it, multiplies by ``b`` and stores ``out = (a + 1) @ b``. What orders
the vector's store before the cube's load is what each program varies (and, in the buggy ones,
leaves out).
"""
import pypto.language as pl
from kernel_templates import kernels

D = 16
SLOT = D * D * 4
EV = 4


# The handoff programs: one template; each case says what the vector core does after its store
# (``signal``), what the cube does before (``wait``) and after (``after``) its load of ws, and the
# marker of those two lines (``# MARK STORE``, ``# MARK LOAD``) that the race tests look up.
_HANDOFF = '''
@pl.program
class $name:
    """$doc"""

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
            ws: pl.InOut[pl.Tensor[[D, D], pl.FP32]], ${sw}out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        $pipe_aiv
        x: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [D, D])
        y = pl.add(x, 1.0)
        pl.store(y, [0, 0], ws)  # $mark STORE
        $signal

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
             ws: pl.Tensor[[D, D], pl.FP32], ${sw_in}out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        $pipe_aic
        $wait
        s = pl.load(ws, [0, 0], [D, D], target_memory=pl.Mem.Mat)  # $mark LOAD
        $after
        w = pl.load(b, [0, 0], [D, D], target_memory=pl.Mem.Mat)
        r = pl.matmul(pl.move(s, target_memory=pl.Mem.Left), pl.move(w, target_memory=pl.Mem.Right))
        return pl.store(r, [0, 0], out)

    @pl.function(type=pl.FunctionType.Group)
    def grp(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
            ws: pl.InOut[pl.Tensor[[D, D], pl.FP32]], ${sw}out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        self.vec(a, b, ws, ${sw_arg}out)
        r = self.cube(a, b, ws, ${sw_arg}out)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
             ws: pl.InOut[pl.Tensor[[D, D], pl.FP32]], ${sw}out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        out = self.grp(a, b, ws, ${sw_arg}out)
        return out
'''

_SET = "pl.system.sync_set(EV, pipe=pl.PipeType.MTE3)"
_WAIT = "pl.system.sync_wait(EV, pipe=pl.PipeType.MTE2)"
_SYNCALL = 'pl.system.syncall(core_type="mix", mode="soft", gm_workspace=sw, used_cores=3)'
_PUSH = "pl.tpush_to_aic(y, split=0, id=0)"
_POP = "tok: pl.Tile[[D, D], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=0)\npl.tfree_to_aiv(tok, id=0)"
# the soft syncall's workspace, a parameter of every function
_SW = dict(sw="sw: pl.InOut[pl.Tensor[[16], pl.INT32]], ", sw_in="sw: pl.Tensor[[16], pl.INT32], ", sw_arg="sw, ")
_NO_SW = dict(sw="", sw_in="", sw_arg="")
# the token programs' pipe (vector to cube)
_PIPE = dict(pipe_aiv="pl.aiv_initialize_pipe(dir_mask=2, slot_size=SLOT, id=0)",
             pipe_aic="pl.aic_initialize_pipe(dir_mask=2, slot_size=SLOT, id=0)")
_NO_PIPE = dict(pipe_aiv="", pipe_aic="")


_CONSTS = dict(D=D, SLOT=SLOT, EV=EV)


def _handoff(name, mark, signal, wait, doc, after="", sw=_NO_SW, pipe=_NO_PIPE):
    return getattr(kernels(name, _HANDOFF, consts=_CONSTS, mark=mark, signal=signal, wait=wait, after=after, doc=doc, **sw, **pipe),
                   name)


EventHandoff = _handoff("EventHandoff", "HANDOFF", _SET, _WAIT, """Correct: the vector store, then sync_set on MTE3
    (the store's pipe); the cube's sync_wait on MTE2 before its load.""")
EventMissingWait = _handoff("EventMissingWait", "EVENTMISSINGWAIT", _SET, "",
                            "Planted bug: the cube loads ws without waiting for the vector's event.")
EventWrongPipe = _handoff("EventWrongPipe", "EVENTWRONGPIPE", "pl.system.sync_set(EV, pipe=pl.PipeType.V)", _WAIT,
                          "Planted bug: the event is raised on the vector pipe, which does not cover the store (MTE3).")
SyncallNoFence = _handoff("SyncallNoFence", "SYNCALLNOFENCE", _SYNCALL, _SYNCALL, sw=_SW,
                          doc="Planted bug: a syncall between store and load, but no fence publishes the store.")
SyncallFence = _handoff("SyncallFence", "SYNCALLFENCE", "pl.system.fence()\n" + _SYNCALL, _SYNCALL, sw=_SW,
                        doc="Correct: fence, then syncall: the store is published before the barrier.")
EventNeverSet = _handoff("EventNeverSet", "EVENTNEVERSET", _SET, "pl.system.sync_wait(5, pipe=pl.PipeType.MTE2)  # NEVER SET",
                         "Deadlock: the cube waits for event 5, which the vector core never raises.")
TokenLoadBeforePop = _handoff("TokenLoadBeforePop", "TOKEN", _PUSH, "", after=_POP, pipe=_PIPE, doc="""Planted bug
    (a missing tpop wait): the vector core stores ws and then pushes a token tile; the cube loads ws before it pops
    the token, so nothing orders the load after the store.""")
TokenLoadAfterPop = _handoff("TokenLoadAfterPop", "TOKENAFTER", _PUSH, _POP, pipe=_PIPE,
                             doc="Correct: as TokenLoadBeforePop, but the cube pops the token before it loads ws.")


@pl.program
class FlagNeverSet:
    """Deadlock on one core: a wait_flag (sync_dst) with no set_flag (sync_src) before it."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        x: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [D, D])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        y = pl.add(x, 1.0)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)  # FLAG NEVER SET
        return pl.store(y, [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        out = self.k(a, out)
        return out


@pl.program
class FlagsPaired:
    """Correct: each sync_dst follows its sync_src; bar_v / bar_all / fence / cacheinvalid in between."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        x: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [D, D])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        y = pl.add(x, 1.0)
        pl.system.bar_v()
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
        out = pl.store(y, [0, 0], out)
        pl.system.bar_all()
        pl.system.fence()
        pl.system.cacheinvalid()
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        out = self.k(a, out)
        return out


@pl.program
class SlotReuse:
    """Planted bug (slot reuse before release): the cube frees the popped tile, then reads it; the
    vector core may refill that slot as soon as it is freed. out = x @ x where x = a + 1."""

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
            ws: pl.InOut[pl.Tensor[[D, D], pl.FP32]], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        pl.aiv_initialize_pipe(dir_mask=2, slot_size=SLOT, slot_num=1, id=0)
        x: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [D, D])
        y = pl.add(x, 1.0)
        for i in pl.range(2):
            pl.tpush_to_aic(y, split=0, id=0)

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
             ws: pl.Tensor[[D, D], pl.FP32],
             out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        pl.aic_initialize_pipe(dir_mask=2, slot_size=SLOT, slot_num=1, id=0)
        s: pl.Tile[[D, D], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=0)
        pl.tfree_to_aiv(s, id=0)  # SLOT RELEASED
        lhs = pl.move(s, target_memory=pl.Mem.Left)  # SLOT READ AFTER RELEASE
        t: pl.Tile[[D, D], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=0)
        r = pl.matmul(lhs, pl.move(t, target_memory=pl.Mem.Right))
        pl.tfree_to_aiv(t, id=0)
        return pl.store(r, [0, 0], out)

    @pl.function(type=pl.FunctionType.Group)
    def grp(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
            ws: pl.InOut[pl.Tensor[[D, D], pl.FP32]],
            out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        self.vec(a, b, ws, out)
        r = self.cube(a, b, ws, out)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
             ws: pl.InOut[pl.Tensor[[D, D], pl.FP32]],
             out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        out = self.grp(a, b, ws, out)
        return out


# A vector core pushes a tile the cube's pop cannot take as it is: one template, the cases differ
# in the vector function (its attrs, the tile it pushes) and the cube's pop (its dtype).
_BAD_POP = '''
@pl.program
class $name:
    """$doc"""

    @pl.function(type=pl.FunctionType.AIV$vec_attrs)
    def vec(self, a: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        pl.aiv_initialize_pipe(dir_mask=2, slot_size=SLOT, id=0)
        x: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [D, D])
        $make_y
        pl.tpush_to_aic($pushed, split=0, id=0)

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[D, D], pl.FP32],
             out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        pl.aic_initialize_pipe(dir_mask=2, slot_size=SLOT, id=0)
        s: pl.Tile[[D, D], pl.$pop_dtype, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=0)  # $mark
        r = pl.matmul(pl.move(s, target_memory=pl.Mem.Left), pl.move(s, target_memory=pl.Mem.Right))
        pl.tfree_to_aiv(s, id=0)
        return pl.store(r, [0, 0], out)

    @pl.function(type=pl.FunctionType.Group)
    def grp(self, a: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        r = self.cube(a, out)
        self.vec(a, out)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        out = self.grp(a, out)
        return out
'''


def _bad_pop(name, mark, doc, pop_dtype="FP32", vec_attrs="", make_y="", pushed="x"):
    return getattr(kernels(name, _BAD_POP, consts=_CONSTS, mark=mark, doc=doc, pop_dtype=pop_dtype,
                           vec_attrs=vec_attrs, make_y=make_y, pushed=pushed), name)


PopWrongDtype = _bad_pop("PopWrongDtype", "WRONG DTYPE", pop_dtype="FP16", doc="""Bad: the vector core pushes an FP32
    tile, the cube pops it as FP16 (the simulator used to convert it silently; a pipe moves bytes unchanged).""")
LanesDifferUnsplit = _bad_pop(
    "LanesDifferUnsplit", "LANES DIFFER", vec_attrs=', attrs={"dual_aiv_dispatch": True}', pushed="y",
    make_y="lane = pl.tile.get_subblock_idx()\ny = pl.add(x, pl.cast(lane, pl.FP32))",
    doc="""Bad: both vector lanes push a different tile unsplit (lane i pushes a + i); the cube's unsplit pop
    keeps one copy (the simulator used to drop lane 1's silently).""")
