"""Mixed cube + vector programs synchronised by pl.system ops (written for the tests of this directory).

The pattern: the vector core computes ``a + 1`` and hands it to the cube through the global-memory
tensor ``ws``; the cube loads it, multiplies by ``b`` and stores ``out = (a + 1) @ b``. What orders
the vector's store before the cube's load is what each program varies (and, in the buggy ones,
leaves out).
"""
import pypto.language as pl

D = 16
SLOT = D * D * 4
EV = 4


@pl.program
class EventHandoff:
    """Correct: the vector store, then sync_set on MTE3 (the store's pipe); the cube's sync_wait on MTE2
    before its load."""

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
            ws: pl.InOut[pl.Tensor[[D, D], pl.FP32]], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        x: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [D, D])
        y = pl.add(x, 1.0)
        pl.store(y, [0, 0], ws)  # HANDOFF STORE
        pl.system.sync_set(EV, pipe=pl.PipeType.MTE3)

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
             ws: pl.Tensor[[D, D], pl.FP32],
             out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        pl.system.sync_wait(EV, pipe=pl.PipeType.MTE2)
        s = pl.load(ws, [0, 0], [D, D], target_memory=pl.Mem.Mat)  # HANDOFF LOAD
        w = pl.load(b, [0, 0], [D, D], target_memory=pl.Mem.Mat)
        r = pl.matmul(pl.move(s, target_memory=pl.Mem.Left), pl.move(w, target_memory=pl.Mem.Right))
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


@pl.program
class EventMissingWait:
    """Planted bug: the cube loads ws without waiting for the vector's event."""

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
            ws: pl.InOut[pl.Tensor[[D, D], pl.FP32]], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        x: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [D, D])
        y = pl.add(x, 1.0)
        pl.store(y, [0, 0], ws)  # EVENTMISSINGWAIT STORE
        pl.system.sync_set(EV, pipe=pl.PipeType.MTE3)

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
             ws: pl.Tensor[[D, D], pl.FP32],
             out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        s = pl.load(ws, [0, 0], [D, D], target_memory=pl.Mem.Mat)  # EVENTMISSINGWAIT LOAD
        w = pl.load(b, [0, 0], [D, D], target_memory=pl.Mem.Mat)
        r = pl.matmul(pl.move(s, target_memory=pl.Mem.Left), pl.move(w, target_memory=pl.Mem.Right))
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


@pl.program
class EventWrongPipe:
    """Planted bug: the event is raised on the vector pipe, which does not cover the store (MTE3)."""

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
            ws: pl.InOut[pl.Tensor[[D, D], pl.FP32]], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        x: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [D, D])
        y = pl.add(x, 1.0)
        pl.store(y, [0, 0], ws)  # EVENTWRONGPIPE STORE
        pl.system.sync_set(EV, pipe=pl.PipeType.V)

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
             ws: pl.Tensor[[D, D], pl.FP32],
             out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        pl.system.sync_wait(EV, pipe=pl.PipeType.MTE2)
        s = pl.load(ws, [0, 0], [D, D], target_memory=pl.Mem.Mat)  # EVENTWRONGPIPE LOAD
        w = pl.load(b, [0, 0], [D, D], target_memory=pl.Mem.Mat)
        r = pl.matmul(pl.move(s, target_memory=pl.Mem.Left), pl.move(w, target_memory=pl.Mem.Right))
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


@pl.program
class SyncallNoFence:
    """Planted bug: a syncall between store and load, but no fence publishes the store."""

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
            ws: pl.InOut[pl.Tensor[[D, D], pl.FP32]], sw: pl.InOut[pl.Tensor[[16], pl.INT32]],
            out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        x: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [D, D])
        y = pl.add(x, 1.0)
        pl.store(y, [0, 0], ws)  # SYNCALLNOFENCE STORE
        pl.system.syncall(core_type="mix", mode="soft", gm_workspace=sw, used_cores=3)

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
             ws: pl.Tensor[[D, D], pl.FP32],
             sw: pl.Tensor[[16], pl.INT32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        pl.system.syncall(core_type="mix", mode="soft", gm_workspace=sw, used_cores=3)
        s = pl.load(ws, [0, 0], [D, D], target_memory=pl.Mem.Mat)  # SYNCALLNOFENCE LOAD
        w = pl.load(b, [0, 0], [D, D], target_memory=pl.Mem.Mat)
        r = pl.matmul(pl.move(s, target_memory=pl.Mem.Left), pl.move(w, target_memory=pl.Mem.Right))
        return pl.store(r, [0, 0], out)

    @pl.function(type=pl.FunctionType.Group)
    def grp(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
            ws: pl.InOut[pl.Tensor[[D, D], pl.FP32]],
            sw: pl.InOut[pl.Tensor[[16], pl.INT32]], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        self.vec(a, b, ws, sw, out)
        r = self.cube(a, b, ws, sw, out)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
             ws: pl.InOut[pl.Tensor[[D, D], pl.FP32]],
             sw: pl.InOut[pl.Tensor[[16], pl.INT32]], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        out = self.grp(a, b, ws, sw, out)
        return out


@pl.program
class SyncallFence:
    """Correct: fence, then syncall: the store is published before the barrier."""

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
            ws: pl.InOut[pl.Tensor[[D, D], pl.FP32]], sw: pl.InOut[pl.Tensor[[16], pl.INT32]],
            out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        x: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [D, D])
        y = pl.add(x, 1.0)
        pl.store(y, [0, 0], ws)  # SYNCALLFENCE STORE
        pl.system.fence()
        pl.system.syncall(core_type="mix", mode="soft", gm_workspace=sw, used_cores=3)

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
             ws: pl.Tensor[[D, D], pl.FP32],
             sw: pl.Tensor[[16], pl.INT32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        pl.system.syncall(core_type="mix", mode="soft", gm_workspace=sw, used_cores=3)
        s = pl.load(ws, [0, 0], [D, D], target_memory=pl.Mem.Mat)  # SYNCALLFENCE LOAD
        w = pl.load(b, [0, 0], [D, D], target_memory=pl.Mem.Mat)
        r = pl.matmul(pl.move(s, target_memory=pl.Mem.Left), pl.move(w, target_memory=pl.Mem.Right))
        return pl.store(r, [0, 0], out)

    @pl.function(type=pl.FunctionType.Group)
    def grp(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
            ws: pl.InOut[pl.Tensor[[D, D], pl.FP32]],
            sw: pl.InOut[pl.Tensor[[16], pl.INT32]], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        self.vec(a, b, ws, sw, out)
        r = self.cube(a, b, ws, sw, out)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
             ws: pl.InOut[pl.Tensor[[D, D], pl.FP32]],
             sw: pl.InOut[pl.Tensor[[16], pl.INT32]], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        out = self.grp(a, b, ws, sw, out)
        return out


@pl.program
class EventNeverSet:
    """Deadlock: the cube waits for event 5, which the vector core never raises."""

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
            ws: pl.InOut[pl.Tensor[[D, D], pl.FP32]], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        x: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [D, D])
        y = pl.add(x, 1.0)
        pl.store(y, [0, 0], ws)  # EVENTNEVERSET STORE
        pl.system.sync_set(EV, pipe=pl.PipeType.MTE3)

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
             ws: pl.Tensor[[D, D], pl.FP32],
             out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        pl.system.sync_wait(5, pipe=pl.PipeType.MTE2)  # NEVER SET
        s = pl.load(ws, [0, 0], [D, D], target_memory=pl.Mem.Mat)  # EVENTNEVERSET LOAD
        w = pl.load(b, [0, 0], [D, D], target_memory=pl.Mem.Mat)
        r = pl.matmul(pl.move(s, target_memory=pl.Mem.Left), pl.move(w, target_memory=pl.Mem.Right))
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


@pl.program
class TokenLoadBeforePop:
    """Planted bug (a missing tpop wait): the vector core stores ws and then pushes a token tile; the
    cube loads ws before it pops the token, so nothing orders the load after the store."""

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
            ws: pl.InOut[pl.Tensor[[D, D], pl.FP32]], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        pl.aiv_initialize_pipe(dir_mask=2, slot_size=SLOT, id=0)
        x: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [D, D])
        y = pl.add(x, 1.0)
        pl.store(y, [0, 0], ws)  # TOKEN STORE
        pl.tpush_to_aic(y, split=0, id=0)

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
             ws: pl.Tensor[[D, D], pl.FP32],
             out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        pl.aic_initialize_pipe(dir_mask=2, slot_size=SLOT, id=0)
        s = pl.load(ws, [0, 0], [D, D], target_memory=pl.Mem.Mat)  # TOKEN LOAD
        tok: pl.Tile[[D, D], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=0)
        pl.tfree_to_aiv(tok, id=0)
        w = pl.load(b, [0, 0], [D, D], target_memory=pl.Mem.Mat)
        r = pl.matmul(pl.move(s, target_memory=pl.Mem.Left), pl.move(w, target_memory=pl.Mem.Right))
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


@pl.program
class TokenLoadAfterPop:
    """Correct: as TokenLoadBeforePop, but the cube pops the token before it loads ws."""

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
            ws: pl.InOut[pl.Tensor[[D, D], pl.FP32]], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        pl.aiv_initialize_pipe(dir_mask=2, slot_size=SLOT, id=0)
        x: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [D, D])
        y = pl.add(x, 1.0)
        pl.store(y, [0, 0], ws)
        pl.tpush_to_aic(y, split=0, id=0)

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
             ws: pl.Tensor[[D, D], pl.FP32],
             out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        pl.aic_initialize_pipe(dir_mask=2, slot_size=SLOT, id=0)
        tok: pl.Tile[[D, D], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=0)
        pl.tfree_to_aiv(tok, id=0)
        s = pl.load(ws, [0, 0], [D, D], target_memory=pl.Mem.Mat)
        w = pl.load(b, [0, 0], [D, D], target_memory=pl.Mem.Mat)
        r = pl.matmul(pl.move(s, target_memory=pl.Mem.Left), pl.move(w, target_memory=pl.Mem.Right))
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


@pl.program
class PopWrongDtype:
    """Bad: the vector core pushes an FP32 tile, the cube pops it as FP16 (the simulator used to convert
    it silently; a pipe moves bytes unchanged)."""

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, a: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        pl.aiv_initialize_pipe(dir_mask=2, slot_size=SLOT, id=0)
        x: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [D, D])
        pl.tpush_to_aic(x, split=0, id=0)

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[D, D], pl.FP32],
             out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        pl.aic_initialize_pipe(dir_mask=2, slot_size=SLOT, id=0)
        s: pl.Tile[[D, D], pl.FP16, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=0)  # WRONG DTYPE
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


@pl.program
class LanesDifferUnsplit:
    """Bad: both vector lanes push a different tile unsplit (lane i pushes a + i); the cube's unsplit
    pop keeps one copy (the simulator used to drop lane 1's silently)."""

    @pl.function(type=pl.FunctionType.AIV, attrs={"dual_aiv_dispatch": True})
    def vec(self, a: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        pl.aiv_initialize_pipe(dir_mask=2, slot_size=SLOT, id=0)
        x: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [D, D])
        lane = pl.tile.get_subblock_idx()
        y = pl.add(x, pl.cast(lane, pl.FP32))
        pl.tpush_to_aic(y, split=0, id=0)

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[D, D], pl.FP32],
             out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        pl.aic_initialize_pipe(dir_mask=2, slot_size=SLOT, id=0)
        s: pl.Tile[[D, D], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=0)  # LANES DIFFER
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
