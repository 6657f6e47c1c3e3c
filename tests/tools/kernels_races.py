"""Planted ordering bugs for the race detector (``pypto.debug.races``), and their fixed forms.

Every racy kernel names its scopes with ``name_hint`` so the test can check which two tasks the detector
blames. A planted bug and its fix that differ only in a scope's ``as NAME`` / ``deps=`` come from one
template (tests/kernel_templates.py), one line each; the others are written out."""
import pypto.language as pl
from kernel_templates import HEADER, kernels

CG = pl.Level.CORE_GROUP


# ------------------------------------------------------------------ WAR (the runtime never tracks it)
@pl.jit
def war_slice(a: pl.Tensor[[64, 64], pl.FP32], buf: pl.InOut[pl.Tensor[[64, 64], pl.FP32]],
              out: pl.Out[pl.Tensor[[48, 64], pl.FP32]]):
    """The reader loads rows 0:48 of buf, the writer stores rows 32:64: 16 rows overlap."""
    with pl.at(level=CG, name_hint="slice_reader"):
        t = pl.load(buf, [0, 0], [48, 64])
        out = pl.store(pl.mul(t, 2.0), [0, 0], out)
    with pl.at(level=CG, name_hint="band_writer"):
        u = pl.load(a, [32, 0], [32, 64])
        buf = pl.store(u, [32, 0], buf)
    return out


@pl.jit
def war_slice_disjoint(a: pl.Tensor[[64, 64], pl.FP32], buf: pl.InOut[pl.Tensor[[64, 64], pl.FP32]],
                       out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    """The reader loads rows 0:32, the writer stores rows 32:64: no overlap, no race."""
    with pl.at(level=CG, name_hint="slice_reader"):
        t = pl.load(buf, [0, 0], [32, 64])
        out = pl.store(pl.mul(t, 2.0), [0, 0], out)
    with pl.at(level=CG, name_hint="band_writer"):
        u = pl.load(a, [32, 0], [32, 64])
        buf = pl.store(u, [32, 0], buf)
    return out


@pl.jit
def war_intermediate(a: pl.Tensor[[64, 64], pl.FP32], out1: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
                     out2: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """A pl.create_tensor intermediate: filled, read, then refilled before the reader is done.
    fill -> reader is RAW (tracked), fill -> refill is WAW (tracked), reader -> refill is WAR (not)."""
    tmp = pl.create_tensor([64, 64], pl.FP32)
    with pl.at(level=CG, name_hint="fill"):
        tmp[:] = pl.add(a, a)
    with pl.at(level=CG, name_hint="tmp_reader"):
        out1[:] = pl.mul(tmp, tmp)
    with pl.at(level=CG, name_hint="refill"):
        tmp[:] = pl.mul(a, 3.0)
    with pl.at(level=CG, name_hint="tmp_reader2"):
        out2[:] = pl.add(tmp, 1.0)
    return out1, out2


# ------------------------------------------------------------------ manual scopes: nothing inferred
@pl.jit
def manual_waw(a: pl.Tensor[[128, 64], pl.FP32], out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]):
    """Two writers of overlapping rows of out inside pl.manual_scope(), no deps=."""
    with pl.manual_scope():
        with pl.at(level=CG, name_hint="top_writer"):
            t = pl.load(a, [0, 0], [96, 64])
            out = pl.store(t, [0, 0], out)
        with pl.at(level=CG, name_hint="bottom_writer"):
            u = pl.load(a, [64, 0], [64, 64])
            out = pl.store(pl.mul(u, 2.0), [64, 0], out)
    return out


@pl.jit
def manual_tid_array_missing(a: pl.Tensor[[256, 64], pl.FP32], b: pl.Out[pl.Tensor[[256, 64], pl.FP32]],
                             out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    """Four band writers in a manual scope; the join waits only for the first (deps=[first]) but also
    reads band 3."""
    with pl.manual_scope():
        with pl.at(level=CG, name_hint="first_fill") as first:
            b = pl.store(pl.mul(pl.load(a, [0, 0], [64, 64]), 2.0), [0, 0], b)
        for i in pl.range(1, 4):
            with pl.at(level=CG, name_hint="band_fill"):
                b = pl.store(pl.mul(pl.load(a, [i * 64, 0], [64, 64]), 2.0), [i * 64, 0], b)
        with pl.at(level=CG, name_hint="join", deps=[first]):
            out = pl.store(pl.add(pl.load(b, [0, 0], [64, 64]), pl.load(b, [192, 0], [64, 64])), [0, 0], out)
    return out


@pl.jit
def manual_tid_array_fixed(a: pl.Tensor[[256, 64], pl.FP32], b: pl.Out[pl.Tensor[[256, 64], pl.FP32]],
                           out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    tids = pl.array.create(4, pl.TASK_ID)
    with pl.manual_scope():
        for i in pl.range(4):
            with pl.at(level=CG, name_hint="band_fill") as tid:
                b = pl.store(pl.mul(pl.load(a, [i * 64, 0], [64, 64]), 2.0), [i * 64, 0], b)
            tids[i] = tid
        with pl.at(level=CG, name_hint="join", deps=[tids]):
            out = pl.store(pl.add(pl.load(b, [0, 0], [64, 64]), pl.load(b, [192, 0], [64, 64])), [0, 0], out)
    return out


# ------------------------------------------------------------------ no_dep_args
@pl.jit
def no_dep_overlap(a: pl.Tensor[[128, 64], pl.FP32], out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]):
    """no_dep_args=[out] asserts the bands are disjoint, but band i covers rows 32i:32i+64: they overlap."""
    for i in pl.range(3):
        with pl.at(level=CG, name_hint="band", no_dep_args=[out]):
            t = pl.load(a, [i * 32, 0], [64, 64])
            out = pl.store(pl.mul(t, 2.0), [i * 32, 0], out)
    return out


@pl.jit
def no_dep_disjoint(a: pl.Tensor[[256, 128], pl.FP32], out: pl.Out[pl.Tensor[[256, 128], pl.FP32]]):
    """examples/canonical/t2_disjoint_bands.py: disjoint bands with no_dep_args=[out] — correct, not a race."""
    for i in pl.range(4):
        with pl.at(level=CG, name_hint="band", no_dep_args=[out]):
            t = pl.load(a, [i * 64, 0], [64, 128])
            out = pl.store(pl.mul(t, 2.0), [i * 64, 0], out)
    return out


@pl.jit
def no_dep_disjoint_manual(a: pl.Tensor[[256, 128], pl.FP32], out: pl.Out[pl.Tensor[[256, 128], pl.FP32]]):
    """T2's alternative: the whole loop in pl.manual_scope()."""
    with pl.manual_scope():
        for i in pl.range(4):
            with pl.at(level=CG, name_hint="band"):
                t = pl.load(a, [i * 64, 0], [64, 128])
                out = pl.store(pl.mul(t, 2.0), [i * 64, 0], out)
    return out


# ------------------------------------------------------------------ bugs and fixes from one template each
# ``$...`` in a template: what the bug leaves out and the fix adds (an ``as NAME`` on the scope a
# later one must wait for, the ``deps=`` of that later scope).
def _case(template, name, **params):
    globals()[name] = getattr(kernels(name, template, header=HEADER + "CG = pl.Level.CORE_GROUP\n", **params), name)


# A reader of buf, then a writer overwriting all of buf: no edge unless the writer waits (WAR).
_WAR = '''
@pl.jit
def $name(a: pl.Tensor[[64, 64], pl.FP32], buf: pl.InOut[pl.Tensor[[64, 64], pl.FP32]],
          out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=CG, name_hint="reader")$reader_as:
        out[:] = pl.add(a, buf)
    with pl.at(level=CG, name_hint="writer"$deps):
        buf[:] = pl.mul(a, a)
    return out
'''
_case(_WAR, "war_basic", reader_as="", deps="")
_case(_WAR, "war_fixed", reader_as=" as reader_tid", deps=", deps=[reader_tid]")

# Two readers of buf, then a writer: each reader the writer does not wait for races with it.
_WAR2 = '''
@pl.jit
def $name(a: pl.Tensor[[64, 64], pl.FP32], buf: pl.InOut[pl.Tensor[[64, 64], pl.FP32]],
          out1: pl.Out[pl.Tensor[[64, 64], pl.FP32]], out2: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=CG, name_hint="reader_a")$a_as:
        out1[:] = pl.add(a, buf)
    with pl.at(level=CG, name_hint="reader_b")$b_as:
        out2[:] = pl.mul(a, buf)
    with pl.at(level=CG, name_hint="writer"$deps):
        buf[:] = pl.mul(a, a)
    return out1, out2
'''
_case(_WAR2, "war_two_readers", a_as="", b_as="", deps="")
_case(_WAR2, "war_two_readers_half_fixed", a_as=" as ra", b_as="", deps=", deps=[ra]")   # reader_b still races
_case(_WAR2, "war_two_readers_fixed", a_as=" as ra", b_as=" as rb", deps=", deps=[ra, rb]")

# In each iteration a reader of buf's band i, then a writer overwriting band i.
_WAR_LOOP = '''
@pl.jit
def $name(a: pl.Tensor[[256, 64], pl.FP32], buf: pl.InOut[pl.Tensor[[256, 64], pl.FP32]],
          out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
    for i in pl.range(4):
        with pl.at(level=CG, name_hint="loop_reader")$reader_as:
            t = pl.load(buf, [i * 64, 0], [64, 64])
            out = pl.store(pl.add(t, 1.0), [i * 64, 0], out)
        with pl.at(level=CG, name_hint="loop_writer"$deps):
            u = pl.load(a, [i * 64, 0], [64, 64])
            buf = pl.store(pl.mul(u, u), [i * 64, 0], buf)
    return out
'''
_case(_WAR_LOOP, "war_loop", reader_as="", deps="")
_case(_WAR_LOOP, "war_loop_fixed", reader_as=" as r", deps=", deps=[r]")

# Producer and consumer of tmp inside pl.manual_scope(): nothing is inferred, the consumer needs deps=.
_MANUAL_RAW = '''
@pl.jit
def $name(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    tmp = pl.create_tensor([64, 64], pl.FP32)
    with pl.manual_scope():
        with pl.at(level=CG, name_hint="producer")$producer_as:
            tmp[:] = pl.add(a, a)
        with pl.at(level=CG, name_hint="consumer"$deps):
            out[:] = pl.mul(tmp, tmp)
    return out
'''
_case(_MANUAL_RAW, "manual_raw", producer_as="", deps="")
_case(_MANUAL_RAW, "manual_raw_fixed", producer_as=" as p", deps=", deps=[p]")

# manual_dep=True switches RAW inference off for tmp: the reader needs deps=[w].
_MANUAL_DEP = '''
@pl.jit
def $name(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    tmp = pl.create_tensor([64, 64], pl.FP32, manual_dep=True)
    with pl.at(level=CG, name_hint="md_writer")$writer_as:
        tmp[:] = pl.add(a, a)
    with pl.at(level=CG, name_hint="md_reader"$deps):
        out[:] = pl.mul(tmp, tmp)
    return out
'''
_case(_MANUAL_DEP, "manual_dep_raw", writer_as="", deps="")
_case(_MANUAL_DEP, "manual_dep_fixed", writer_as=" as w", deps=", deps=[w]")

# Atomic adds into c after a zero-init: concurrent adds commute (not a race) once they all wait for
# the zero-init; without that wait, zero_init and partial are a WAW.
_ATOMIC = '''
@pl.jit
def $name(a: pl.Tensor[[256, 64], pl.FP32], c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=CG, name_hint="zero_init")$zero_as:
        c[:] = pl.full([64, 64], pl.FP32, 0.0)
    for i in pl.parallel(4):
        with pl.at(level=CG, name_hint="partial"$deps, no_dep_args=[c]):
            t = pl.load(a, [i * 64, 0], [64, 64])
            c = pl.store(t, [0, 0], c, atomic=pl.AtomicType.Add)
    return c
'''
_case(_ATOMIC, "atomic_parallel", zero_as=" as zero", deps=", deps=[zero]")
_case(_ATOMIC, "atomic_no_zero_dep", zero_as="", deps="")
