"""Mixed cube + vector programs for the tests of this directory (written for them)."""
import pypto.language as pl

D = 16
SLOT = D * D * 4


@pl.program
class TwoPipes:
    """Vector computes a + b and a - b on both lanes, pushes them through pipes 1 and 0 (in that
    order); the cube pops pipe 0 first, multiplies, stores: out = (a + b) @ (a - b)."""

    @pl.function(type=pl.FunctionType.AIV, attrs={"dual_aiv_dispatch": True})
    def vec(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
            out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        p0 = pl.import_peer_buffer(name="slots0", peer_func="cube")
        p1 = pl.import_peer_buffer(name="slots1", peer_func="cube")
        pl.aiv_initialize_pipe(pl.const(0, pl.INT32), p0, dir_mask=2, slot_size=SLOT, id=0)
        pl.aiv_initialize_pipe(pl.const(0, pl.INT32), p1, dir_mask=2, slot_size=SLOT, id=1)
        x: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [D, D])
        y: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.load(b, [0, 0], [D, D])
        s = pl.add(x, y)
        d = pl.sub(x, y)
        pl.tpush_to_aic(d, split=0, id=1)
        pl.tpush_to_aic(s, split=0, id=0)

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
             out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        b0 = pl.reserve_buffer(name="slots0", size=SLOT * 8, base=pl.AUTO)
        b1 = pl.reserve_buffer(name="slots1", size=SLOT * 8, base=pl.AUTO)
        pl.aic_initialize_pipe(pl.const(0, pl.INT32), b0, dir_mask=2, slot_size=SLOT, id=0)
        pl.aic_initialize_pipe(pl.const(0, pl.INT32), b1, dir_mask=2, slot_size=SLOT, id=1)
        s: pl.Tile[[D, D], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=0)
        d: pl.Tile[[D, D], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=1)
        r = pl.matmul(pl.move(s, target_memory=pl.Mem.Left), pl.move(d, target_memory=pl.Mem.Right))
        pl.tfree_to_aiv(s, id=0)
        pl.tfree_to_aiv(d, id=1)
        return pl.store(r, [0, 0], out)

    @pl.function(type=pl.FunctionType.Group)
    def grp(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
            out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        r = self.cube(a, b, out)
        self.vec(a, b, out)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
             out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        out = self.grp(a, b, out)
        return out


@pl.program
class CubeToVectorSplit:
    """The cube computes a @ b and pushes it split UP_DOWN: each vector lane pops its [D/2, D] half,
    adds 1 and stores it at its rows (lane = pl.tile.get_subblock_idx()). out = a @ b + 1."""

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
             out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        pl.aic_initialize_pipe(dir_mask=1, slot_size=SLOT, id=0)
        x = pl.load(a, [0, 0], [D, D], target_memory=pl.Mem.Mat)
        y = pl.load(b, [0, 0], [D, D], target_memory=pl.Mem.Mat)
        c = pl.matmul(pl.move(x, target_memory=pl.Mem.Left), pl.move(y, target_memory=pl.Mem.Right))
        pl.tpush_to_aiv(c, split=1, id=0)

    @pl.function(type=pl.FunctionType.AIV, attrs={"dual_aiv_dispatch": True})
    def vec(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
            out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        # the per-lane form: each lane's tile is its half, its rows from get_subblock_idx()
        pl.aiv_initialize_pipe(dir_mask=1, slot_size=SLOT, id=0)
        h: pl.Tile[[D // 2, D], pl.FP32, pl.Mem.Vec] = pl.tpop_from_aic(split=1, id=0)
        r = pl.add(h, 1.0)
        pl.tfree_to_aic(h, id=0)
        lane = pl.tile.get_subblock_idx()
        out = pl.store(r, [lane * (D // 2), 0], out)
        return out

    @pl.function(type=pl.FunctionType.Group)
    def grp(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
            out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        self.cube(a, b, out)
        r = self.vec(a, b, out)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
             out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        out = self.grp(a, b, out)
        return out


@pl.program
class PopsTwice:
    """Deadlock: the vector core pushes once, the cube pops twice (the second pop can never end)."""

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, a: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        pl.aiv_initialize_pipe(dir_mask=2, slot_size=SLOT, id=3)
        x: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [D, D])
        pl.tpush_to_aic(x, split=0, id=3)

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[D, D], pl.FP32],
             out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        pl.aic_initialize_pipe(dir_mask=2, slot_size=SLOT, id=3)
        s: pl.Tile[[D, D], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=3)
        t: pl.Tile[[D, D], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=3)  # WAITS FOREVER
        r = pl.matmul(pl.move(s, target_memory=pl.Mem.Left), pl.move(t, target_memory=pl.Mem.Right))
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
class RingNeverFreed:
    """Deadlock: the vector core pushes 3 tiles into a 2-slot ring whose consumer pops but never frees."""

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, a: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        pl.aiv_initialize_pipe(dir_mask=2, slot_size=SLOT, slot_num=2, id=0)
        x: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [D, D])
        for i in pl.range(3):
            pl.tpush_to_aic(x, split=0, id=0)  # THIRD PUSH WAITS

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[D, D], pl.FP32],
             out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        pl.aic_initialize_pipe(dir_mask=2, slot_size=SLOT, slot_num=2, id=0)
        s: pl.Tile[[D, D], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=0)
        t: pl.Tile[[D, D], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=0)
        u: pl.Tile[[D, D], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=0)
        r = pl.matmul(pl.move(s, target_memory=pl.Mem.Left), pl.move(u, target_memory=pl.Mem.Right))
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
class ReadAfterFree:
    """Planted bug: the cube frees the popped tile, then reads it again (the vector core may refill the slot)."""

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, a: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        pl.aiv_initialize_pipe(dir_mask=2, slot_size=SLOT, id=0)
        x: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [D, D])
        for i in pl.range(2):
            pl.tpush_to_aic(x, split=0, id=0)

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[D, D], pl.FP32],
             out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        pl.aic_initialize_pipe(dir_mask=2, slot_size=SLOT, id=0)
        s: pl.Tile[[D, D], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=0)
        pl.tfree_to_aiv(s, id=0)  # RELEASED HERE
        lhs = pl.move(s, target_memory=pl.Mem.Left)  # READ AFTER RELEASE
        t: pl.Tile[[D, D], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=0)
        r = pl.matmul(lhs, pl.move(t, target_memory=pl.Mem.Right))
        pl.tfree_to_aiv(t, id=0)
        pl.tfree_to_aiv(t, id=0)  # FREED TWICE
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
