"""Mixed-kernel (Group) programs with many independent tasks, for test_lockstep_bits_group.py:
the scheduler runs them as lockstep gangs of clusters (pypto.runtime.cross_core.GroupGang)."""
import textwrap

import pypto.language as pl
from kernel_templates import kernels

N = 64          # group tasks (more than the 48 clusters: several gangs, some left over)
R, C = 16, 32   # each task's rows of the input, and its columns
SLOT = R * C * 4
H = R // 2      # a vector lane's half of a split tile


@pl.jit
def mm_softmax(q: pl.Tensor, k: pl.Tensor, n: pl.INDEX, r: pl.INDEX, out: pl.Out[pl.Tensor]):
    """softmax(q_i @ k) per block of r rows: ExpandMixedKernel splits the scope into a cube function
    (the scores) and a vector function (the softmax) talking through a c2v pipe."""
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            a = pl.load(q, [i * r, 0], [r, 32], target_memory=pl.Mem.Mat)
            b = pl.load(k, [0, 0], [32, 64], target_memory=pl.Mem.Mat)
            s = pl.matmul(pl.move(a, target_memory=pl.Mem.Left), pl.move(b, target_memory=pl.Mem.Right))
            tmp = pl.create_tile([r, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
            m = pl.row_max(s, tmp)
            e = pl.exp(pl.row_expand_sub(s, m))
            z = pl.row_sum(e, tmp)
            out = pl.store(pl.row_expand_div(e, z), [i * r, 0], out)
    return out


@pl.jit
def mm_overlap(q: pl.Tensor, k: pl.Tensor, n: pl.INDEX, r: pl.INDEX, h: pl.INDEX, out: pl.Out[pl.Tensor]):
    """exp(q_i @ k) stored at rows i * h: with h < r each task's rows overlap the next task's (a
    race by design), so the footprint rule must refuse to gang them."""
    for i in pl.parallel(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            a = pl.load(q, [i * r, 0], [r, 32], target_memory=pl.Mem.Mat)
            b = pl.load(k, [0, 0], [32, 64], target_memory=pl.Mem.Mat)
            s = pl.matmul(pl.move(a, target_memory=pl.Mem.Left), pl.move(b, target_memory=pl.Mem.Right))
            out = pl.store(pl.exp(s), [i * h, 0], out)
    return out


@pl.program
class MixedBlocks:
    """One multi-block mixed task (pl.spmd: the blocks are natural gang members): block ob adds 1 to
    its 16 rows of a on the vector core, the cube multiplies them by b, the vector core adds 1."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[N * 16, 64], pl.FP32], b: pl.Tensor[[64, 32], pl.FP32],
             out: pl.Out[pl.Tensor[[N * 16, 32], pl.FP32]]) -> pl.Tensor[[N * 16, 32], pl.FP32]:
        for ob in pl.spmd(N, name_hint="mix"):
            m0 = ob * 16
            x = pl.add(pl.slice(a, [16, 64], [m0, 0]), 1.0)
            c = pl.matmul(x, b)
            out = pl.assemble(out, pl.add(c, 1.0), [m0, 0])
        return out


# ---------------------------------------------------------------- Group programs from one template
# A cube (AIC) and a vector (AIV) function, a Group calling both (the cube first) and an
# orchestration launching it for every i < N; the parameters are a, the case's extra ones, i and
# out. One of the two functions (``stores``) stores ``out`` and returns it; a case gives the two
# bodies, which is defined first (the programs' function order), the extra parameters and the
# vector function's attrs.
_GROUP = '''
@pl.program
class $name:
    """$doc"""

    $first

    $second

    @pl.function(type=pl.FunctionType.Group)
    def grp(self, $params) -> pl.Tensor[[N * R, C], pl.FP32]:
        ${r_cube}self.cube($args)
        ${r_vec}self.vec($args)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, $main_params) -> pl.Tensor[[N * R, C], pl.FP32]:
        for i in pl.parallel(N):
            out = self.grp($args)
        return out
'''
_TYPES = {"a": "pl.Tensor[[N * R, C], pl.FP32]", "w": "pl.Tensor[[C, C], pl.FP32]", "scale": "pl.Scalar[pl.FP32]",
          "i": "pl.Scalar[pl.INDEX]", "out": "pl.Out[pl.Tensor[[N * R, C], pl.FP32]]"}


def _group(name, doc, cube, vec, extra="w", stores="vec", vec_first=False, vec_attrs=""):
    names = ["a", *extra.split(), "i", "out"]
    params = ", ".join(f"{n}: {_TYPES[n]}" for n in names)

    def fn(kind, fname, body, attrs=""):
        ret = " -> pl.Tensor[[N * R, C], pl.FP32]" if fname == stores else ""
        head = f"@pl.function(type=pl.FunctionType.{kind}{attrs})\ndef {fname}(self, {params}){ret}:\n"
        return head + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")

    c, v = fn("AIC", "cube", cube), fn("AIV", "vec", vec, vec_attrs)
    first, second = (v, c) if vec_first else (c, v)
    mod = kernels(name, _GROUP, consts=dict(N=N, R=R, C=C, SLOT=SLOT, H=H), doc=doc, first=first, second=second,
                  params=params, args=", ".join(names), main_params=", ".join(f"{n}: {_TYPES[n]}" for n in names
                                                                               if n != "i"),
                  r_cube="r = " if stores == "cube" else "", r_vec="r = " if stores == "vec" else "")
    return getattr(mod, name)


PingPong = _group("PingPong", """Both directions of one pipe with 2-slot rings: the vector core pushes three tiles (x,
    2x, x + 1: the third push waits for the cube's first tfree), the cube multiplies each by w and pushes it back (its
    third push waits for the vector core's first tfree), the vector core sums the three products.
    out_i = (x + 2x + (x + 1)) @ w, summed product by product.""", vec_first=True, vec="""
    pl.aiv_initialize_pipe(dir_mask=3, slot_size=SLOT, slot_num=2, id=0)
    x: pl.Tile[[R, C], pl.FP32, pl.Mem.Vec] = pl.load(a, [i * R, 0], [R, C])
    pl.tpush_to_aic(x, split=0, id=0)
    pl.tpush_to_aic(pl.mul(x, 2.0), split=0, id=0)
    pl.tpush_to_aic(pl.add(x, 1.0), split=0, id=0)
    p1: pl.Tile[[R, C], pl.FP32, pl.Mem.Vec] = pl.tpop_from_aic(split=0, id=0)
    s1 = pl.mul(p1, 1.0)
    pl.tfree_to_aic(p1, id=0)
    p2: pl.Tile[[R, C], pl.FP32, pl.Mem.Vec] = pl.tpop_from_aic(split=0, id=0)
    s2 = pl.add(s1, p2)
    pl.tfree_to_aic(p2, id=0)
    p3: pl.Tile[[R, C], pl.FP32, pl.Mem.Vec] = pl.tpop_from_aic(split=0, id=0)
    s3 = pl.add(s2, p3)
    pl.tfree_to_aic(p3, id=0)
    out = pl.store(s3, [i * R, 0], out)
    return out
    """, cube="""
    pl.aic_initialize_pipe(dir_mask=3, slot_size=SLOT, slot_num=2, id=0)
    wm = pl.load(w, [0, 0], [C, C], target_memory=pl.Mem.Mat)
    wr = pl.move(wm, target_memory=pl.Mem.Right)
    for k in pl.range(3):
        s: pl.Tile[[R, C], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=0)
        r = pl.matmul(pl.move(s, target_memory=pl.Mem.Left), wr)
        pl.tfree_to_aiv(s, id=0)
        pl.tpush_to_aiv(r, split=0, id=0)
    """)

SplitLanes = _group("SplitLanes", """Two vector lanes and split pushes both ways: the cube pushes c = a_i @ w split
    UP_DOWN (each lane gets its [H, C] half), each lane pushes its half + 1 back split, the cube pops the two halves
    joined, multiplies by w again and pushes that split too; each lane stores it plus exp of its first half at its own
    rows (pl.tile.get_subblock_idx()). out = (c + 1) @ w + exp(c).""",
                    vec_attrs=', attrs={"dual_aiv_dispatch": True}', cube="""
    pl.aic_initialize_pipe(dir_mask=3, slot_size=SLOT, id=0)
    x = pl.load(a, [i * R, 0], [R, C], target_memory=pl.Mem.Mat)
    y = pl.load(w, [0, 0], [C, C], target_memory=pl.Mem.Mat)
    wr = pl.move(y, target_memory=pl.Mem.Right)
    c = pl.matmul(pl.move(x, target_memory=pl.Mem.Left), wr)
    pl.tpush_to_aiv(c, split=1, id=0)
    j: pl.Tile[[R, C], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=1, id=0)
    d = pl.matmul(pl.move(j, target_memory=pl.Mem.Left), wr)
    pl.tfree_to_aiv(j, id=0)
    pl.tpush_to_aiv(d, split=1, id=0)
    """, vec="""
    pl.aiv_initialize_pipe(dir_mask=3, slot_size=SLOT, id=0)
    h: pl.Tile[[H, C], pl.FP32, pl.Mem.Vec] = pl.tpop_from_aic(split=1, id=0)
    x = pl.exp(h)
    pl.tpush_to_aic(pl.add(h, 1.0), split=1, id=0)
    pl.tfree_to_aic(h, id=0)
    g: pl.Tile[[H, C], pl.FP32, pl.Mem.Vec] = pl.tpop_from_aic(split=1, id=0)
    r = pl.add(g, x)
    pl.tfree_to_aic(g, id=0)
    lane = pl.tile.get_subblock_idx()
    out = pl.store(r, [i * R + lane * H, 0], out)
    return out
    """)

PopsTwice = _group("PopsTwice", "Deadlock in every task: the vector core pushes once, the cube pops twice.",
                   extra="", stores="cube", vec_first=True, vec="""
    pl.aiv_initialize_pipe(dir_mask=2, slot_size=SLOT, id=3)
    x: pl.Tile[[R, C], pl.FP32, pl.Mem.Vec] = pl.load(a, [i * R, 0], [R, C])
    pl.tpush_to_aic(x, split=0, id=3)
    """, cube="""
    pl.aic_initialize_pipe(dir_mask=2, slot_size=SLOT, id=3)
    s: pl.Tile[[R, C], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=3)
    t: pl.Tile[[C, C], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=3)  # WAITS FOREVER
    r = pl.matmul(pl.move(s, target_memory=pl.Mem.Left), pl.move(t, target_memory=pl.Mem.Right))
    return pl.store(r, [i * R, 0], out)
    """)

PopsWrongShape = _group("PopsWrongShape", "Misuse in every task: the cube pushes [R, C] tiles, the vector core pops "
                        "[H, C] ones.", extra="", cube="""
    pl.aic_initialize_pipe(dir_mask=1, slot_size=SLOT, id=0)
    x = pl.load(a, [i * R, 0], [R, C], target_memory=pl.Mem.Mat)
    y = pl.load(a, [0, 0], [C, C], target_memory=pl.Mem.Mat)
    c = pl.matmul(pl.move(x, target_memory=pl.Mem.Left), pl.move(y, target_memory=pl.Mem.Right))
    pl.tpush_to_aiv(c, split=0, id=0)
    """, vec="""
    pl.aiv_initialize_pipe(dir_mask=1, slot_size=SLOT, id=0)
    h: pl.Tile[[H, C], pl.FP32, pl.Mem.Vec] = pl.tpop_from_aic(split=0, id=0)   # WRONG SHAPE
    out = pl.store(h, [i * R, 0], out)
    return out
    """)

Scaled = _group("Scaled", """out_i = exp(scale * (a_i @ w)): the vector function reads the float scalar parameter
    ``scale`` in a tile op (every gang member must share its value: its GANG_SAME, mapped to the group's).""",
                extra="w scale", cube="""
    pl.aic_initialize_pipe(dir_mask=1, slot_size=SLOT, id=0)
    x = pl.load(a, [i * R, 0], [R, C], target_memory=pl.Mem.Mat)
    y = pl.load(w, [0, 0], [C, C], target_memory=pl.Mem.Mat)
    c = pl.matmul(pl.move(x, target_memory=pl.Mem.Left), pl.move(y, target_memory=pl.Mem.Right))
    pl.tpush_to_aiv(c, split=0, id=0)
    """, vec="""
    pl.aiv_initialize_pipe(dir_mask=1, slot_size=SLOT, id=0)
    h: pl.Tile[[R, C], pl.FP32, pl.Mem.Vec] = pl.tpop_from_aic(split=0, id=0)
    e = pl.exp(pl.mul(h, scale))
    pl.tfree_to_aic(h, id=0)
    out = pl.store(e, [i * R, 0], out)
    return out
    """)
