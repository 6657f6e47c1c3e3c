"""The compile cache and the artifact store (issue 13 items 1, 2, 3, 16; issue 19's persistent cache).

Each test here failed before the cache was keyed by content; the comment says how.
"""
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

import kernels_cache as K
import pypto.language as pl
from pypto.errors import ParserError
from pypto.ir import artifacts
from pypto.ir.compiled import CompiledProgram
from pypto.runtime import RunConfig


def _run(kernel, rows, config=None):
    a = torch.randn(rows, 128)
    out = torch.full((rows, 128), float("nan"))
    kernel(a, out, config=config)
    return a, out


def test_shared_save_kernels_dir_64_32_64(tmp_path):
    """Before: the third call reused the 64-row program whose directory now held the 32-row
    kernels, so rows 32..63 were never computed."""
    k = pl.jit(K.doubled.fn)
    cfg = RunConfig(save_kernels_dir=str(tmp_path / "shared"))
    for rows in (64, 32, 64):
        a, out = _run(k, rows, cfg)
        assert torch.equal(out, a + a), rows
    meta = json.loads((tmp_path / "shared" / "compiled_meta.json").read_text())
    assert meta["params"][0]["shape"] == [64, 128]  # the directory holds the latest build


def test_shared_dir_with_two_programs_runs_each_its_own(tmp_path):
    """Two compiled programs alive at once, one directory: each runs the modules it built."""
    cfg = RunConfig(save_kernels_dir=str(tmp_path / "d"))
    first = pl.jit(K.doubled.fn).compile(torch.zeros(16, 128), torch.zeros(16, 128), config=cfg)
    second = pl.jit(K.by_global.fn).compile(torch.zeros(16, 128), torch.zeros(16, 128), config=cfg)
    a = torch.randn(16, 128)
    out = torch.zeros(16, 128)
    first(a, out)
    assert torch.equal(out, a + a)
    second(a, out)
    assert torch.equal(out, a * K.SCALE)
    # the directory is second's; reopening it gives second, and the first keeps running its own text
    assert CompiledProgram.from_dir(tmp_path / "d").cache_key == second.cache_key
    first(a, out)
    assert torch.equal(out, a + a)


def test_module_global_change_recompiles():
    """Before: after ``SCALE = 3.0`` the cached program still computed ``a * 2.0``."""
    k = pl.jit(K.by_global.fn)
    a, out = _run(k, 16)
    assert torch.equal(out, a * 2.0)
    old = K.SCALE
    try:
        K.SCALE = 3.0
        a, out = _run(k, 16)
        assert torch.equal(out, a * 3.0)
        assert k.cache_info() == 2
    finally:
        K.SCALE = old
    a, out = _run(k, 16)
    assert torch.equal(out, a * 2.0) and k.cache_info() == 2


def test_mutated_global_container_recompiles():
    k = pl.jit(K.by_global_item.fn)
    a, out = _run(k, 16)
    assert torch.equal(out, a + 1.0)
    try:
        K.OFFSETS[0] = 5.0
        a, out = _run(k, 16)
        assert torch.equal(out, a + 5.0)
    finally:
        K.OFFSETS[0] = 1.0


def test_source_is_read_once(tmp_path, monkeypatch):
    """Before: a new specialisation re-read the file, so after an edit that moved the kernels the
    second shape compiled whatever the old line now held (here: the other kernel's body)."""
    src = tmp_path / "edited_kernels.py"
    src.write_text(textwrap.dedent("""
        import pypto.language as pl


        @pl.jit
        def plus(a: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.add(a, a)
            return out
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    import edited_kernels as E

    a, out = _run(E.plus, 16)
    assert torch.equal(out, a + a)
    text = src.read_text()
    src.write_text(text.replace("pl.add(a, a)", "pl.mul(a, a)"))
    os.utime(src, (time.time() + 5, time.time() + 5))  # a different mtime even on a coarse clock
    a, out = _run(E.plus, 32)  # a new shape: specialised again, from the text read at import
    assert torch.equal(out, a + a)


def test_signed_zero_scalars_are_two_specialisations():
    """Before: -0.0 and +0.0 shared one cache entry, so 1 / +0.0 gave -inf."""
    k = pl.jit(K.divided.fn)
    a = torch.ones(16, 128)
    out = torch.zeros(16, 128)
    k(a, -0.0, out)
    assert torch.equal(out, torch.full_like(out, -float("inf")))
    k(a, 0.0, out)
    assert torch.equal(out, torch.full_like(out, float("inf")))
    assert k.cache_info() == 2


def test_nan_scalar_compiles_once():
    """Before: every call with a (new) NaN object compiled again."""
    k = pl.jit(K.divided.fn)
    a = torch.ones(16, 128)
    out = torch.zeros(16, 128)
    for _ in range(3):
        k(a, float("nan"), out)
    assert k.cache_info() == 1
    assert torch.isnan(out).all()


def test_same_named_callees_are_refused():
    """Before: the second ``scale_tile`` (x10) silently reused the first (x2): y came out a * 2."""
    with pytest.raises(ParserError, match="two different kernel functions are named 'scale_tile'"):
        K.two_scalers(torch.ones(16, 64), torch.zeros(16, 64), torch.zeros(16, 64))


def test_deleted_artifact_dir_recompiles():
    """Before: the cached program kept pointing at the deleted directory and failed."""
    k = pl.jit(K.doubled.fn)
    _run(k, 16)
    compiled = k.compile(torch.zeros(16, 128), torch.zeros(16, 128))
    shutil.rmtree(compiled.output_dir)
    a, out = _run(k, 16)
    assert torch.equal(out, a + a)
    again = k.compile(torch.zeros(16, 128), torch.zeros(16, 128))
    assert (again.output_dir / "compiled_meta.json").is_file()


def test_default_dir_is_content_keyed_and_reused():
    k1, k2 = pl.jit(K.doubled.fn), pl.jit(K.doubled.fn)
    c1 = k1.compile(torch.zeros(16, 128), torch.zeros(16, 128))
    c2 = k2.compile(torch.zeros(16, 128), torch.zeros(16, 128))
    assert c1.output_dir == c2.output_dir and c1.output_dir.name == f"doubled_{c1.cache_key[:16]}"
    assert c2.lowered is not None  # reused from disk: the pipeline result is recomputed on demand
    c3 = k1.compile(torch.zeros(32, 128), torch.zeros(32, 128))
    c4 = k1.compile(torch.zeros(16, 128), torch.zeros(16, 128), config=RunConfig(platform="a5sim"))
    assert len({c1.output_dir, c3.output_dir, c4.output_dir}) == 3
    root = c1.output_dir.parent
    assert not [p for p in root.iterdir() if p.name.startswith(artifacts.STAGING_PREFIX)]


def test_damaged_module_is_rebuilt_not_imported():
    """A truncated module in a cache entry (a killed writer, a full disk) is never executed."""
    c1 = pl.jit(K.doubled.fn).compile(torch.zeros(16, 128), torch.zeros(16, 128))
    kernel_file = c1.output_dir / next(iter(c1.meta["kernels"].values()))
    kernel_file.write_text(kernel_file.read_text()[:40])
    with pytest.raises(ValueError, match="do not match compiled_meta.json"):
        CompiledProgram.from_dir(c1.output_dir)
    a, out = _run(pl.jit(K.doubled.fn), 16)
    assert torch.equal(out, a + a)
    CompiledProgram.from_dir(c1.output_dir)  # repaired


_REUSE = textwrap.dedent("""
    import sys, torch
    sys.path.insert(0, {tests!r})
    import kernels_cache as K
    import pypto.driver.build as C  # the module (pypto.ir.compile is the function)
    if sys.argv[1] == "reuse":
        def refuse(*a, **k):
            raise SystemExit("the pipeline ran: the build was not reused")
        C.run_pipeline = refuse
    a, out = torch.randn(16, 128), torch.zeros(16, 128)
    K.doubled(a, out)
    assert torch.equal(out, a + a)
    print(K.doubled.compile(a, out).output_dir)
""")


@pytest.mark.slow  # two fresh interpreters import torch
def test_build_is_reused_by_a_new_process(tmp_path):
    script = _REUSE.format(tests=str(Path(__file__).parent))
    env = dict(os.environ, PYPTO_PROG_BUILD_DIR=str(tmp_path / "cache"))
    first = subprocess.run([sys.executable, "-c", script, "build"], capture_output=True, text=True, env=env,
                           timeout=300)
    assert first.returncode == 0, first.stderr
    second = subprocess.run([sys.executable, "-c", script, "reuse"], capture_output=True, text=True, env=env,
                            timeout=300)
    assert second.returncode == 0, second.stderr
    assert first.stdout == second.stdout


def test_pruning_keeps_the_most_recent_entries(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PYPTO_CACHE_MAX_ENTRIES", "2")
    stale = tmp_path / "cache" / ".tmp-killed-build"
    stale.mkdir(parents=True)
    os.utime(stale, (time.time() - 2 * artifacts.STALE_STAGING_S,) * 2)
    young = tmp_path / "cache" / ".tmp-building-now"
    young.mkdir()
    user = tmp_path / "cache" / "not_ours"
    user.mkdir()
    # named like an entry, older than all, but without a meta saying it is one: never removed
    lookalike = tmp_path / "cache" / "mine_0123456789abcdef"
    lookalike.mkdir()
    os.utime(lookalike, (time.time() - 60,) * 2)
    k = pl.jit(K.doubled.fn)
    dirs = []
    for rows in (16, 32, 48):
        dirs.append(k.compile(torch.zeros(rows, 128), torch.zeros(rows, 128)).output_dir)
        time.sleep(0.02)  # distinct mtimes
    assert not dirs[0].exists() and dirs[1].exists() and dirs[2].exists()
    assert not stale.exists() and young.exists() and user.exists() and lookalike.exists()
    a, out = _run(k, 16)  # the pruned program is compiled again
    assert torch.equal(out, a + a)


def test_diagnostics_replayed_on_reuse(capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parent / "compiler"))
    import kernels_dbg as D

    k1 = pl.jit(D.unused_value.fn)
    k1.compile(torch.zeros(64, 128), torch.zeros(64, 128))
    first = capsys.readouterr().err
    k2 = pl.jit(D.unused_value.fn)
    c2 = k2.compile(torch.zeros(64, 128), torch.zeros(64, 128))
    second = capsys.readouterr().err
    assert "[PTO-W002]" in first and first == second
    assert [d.code for d in c2.diagnostics] == ["PTO-W002"] and "kernels_dbg.py" in str(c2.diagnostics[0].span)


def test_key_covers_options_and_package(monkeypatch):
    k = pl.jit(K.doubled.fn)
    args = (torch.zeros(16, 128), torch.zeros(16, 128))
    base = k.compile(*args).cache_key
    assert k.compile(*args, config=RunConfig(dump_passes=True)).cache_key != base
    monkeypatch.setenv("PYPTO_WARNING_LEVEL", "none")
    assert pl.jit(K.doubled.fn).compile(*args).cache_key != base
    monkeypatch.delenv("PYPTO_WARNING_LEVEL")
    monkeypatch.setattr(artifacts, "_fingerprint", ["another package build"])
    assert pl.jit(K.doubled.fn).compile(*args).cache_key != base


def test_golden_without_a_directory_is_not_reused_by_the_next_run(monkeypatch):
    """Before: with no ``golden_data_dir`` the golden went into the build directory, which every run
    of the program shares, so a second run with a corrected golden function was compared against
    the first one's golden (and passed a kernel the corrected golden rejects)."""
    from pypto.runtime import TensorSpec, run

    monkeypatch.syspath_prepend(str(Path(__file__).parent / "precision"))
    from kernels_prec import fused  # out = (a + b) * 2

    specs = [TensorSpec("a", [64, 128], torch.float32, init_value=torch.randn),
             TensorSpec("b", [64, 128], torch.float32, init_value=torch.randn),
             TensorSpec("out", [64, 128], torch.float32, is_output=True)]

    def golden_right(t, params):
        t["out"][:] = (t["a"] + t["b"]) * 2.0

    def golden_other(t, params):
        t["out"][:] = (t["a"] + t["b"]) * 3.0

    assert run(fused, specs, golden_right).passed
    assert not run(fused, specs, golden_other).passed
    assert run(fused, specs, golden_right).passed


def test_structural_equality_tells_signed_zeros_apart():
    """Structural equality is the roundtrip check's key: ``-0.0 == 0.0`` let a sign flip through."""
    from pypto.ir.equality import structural_equal
    from pypto.ir.nodes import ConstFloat

    assert not structural_equal(ConstFloat(-0.0), ConstFloat(0.0))
    assert structural_equal(ConstFloat(-0.0), ConstFloat(-0.0))
    assert structural_equal(ConstFloat(float("nan")), ConstFloat(float("nan")))


def test_kernel_decorated_after_an_edit_is_refused(tmp_path, monkeypatch):
    """A kernel decorated after its file was edited (a factory called later): the line its code
    points at now holds another function; compiling that body would be silently wrong."""
    src = tmp_path / "factory_kernels.py"
    body = textwrap.dedent("""
        import pypto.language as pl


        def make():
            @pl.jit
            def inner(a: pl.Tensor, out: pl.Out[pl.Tensor]):
                with pl.at(level=pl.Level.CORE_GROUP):
                    out[:] = pl.add(a, a)
                return out
            return inner
    """)
    src.write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    import factory_kernels as F

    src.write_text(body.replace("def make():", "def other(a: pl.Tensor, out: pl.Out[pl.Tensor]):\n    return out\n\n\n"
                                "def make():"))
    os.utime(src, (time.time() + 5, time.time() + 5))
    with pytest.raises(ParserError, match="changed since it was imported"):
        _run(F.make(), 16)


def test_warm_compile_of_the_same_program_object_skips_printing_it(monkeypatch):
    """A program object is compiled again (a model program in a loop): its digest is remembered
    (IR is frozen, so it cannot have changed) and the build is reused without printing the program;
    a distinct object parsed from the same text gets its digest computed afresh."""
    from pypto.driver import artifacts as A
    from pypto.driver.build import compile as ir_compile
    from pypto.language.program import parse

    src = textwrap.dedent('''
        import pypto.language as pl

        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
                o = pl.store(pl.add(pl.load(a, [0, 0], [16, 64]), 1.0), [0, 0], o)
                return o

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
                o = self.k(a, o)
                return o
    ''')
    prog = parse(src)
    first = ir_compile(prog)
    calls = []
    real = A.print_program
    monkeypatch.setattr(A, "print_program", lambda p: calls.append(p) or real(p))
    again = ir_compile(prog)
    assert calls == [] and again.output_dir == first.output_dir
    other = parse(src)
    third = ir_compile(other)
    assert calls == [other] and third.output_dir.is_dir()
    a, o = torch.randn(16, 64), torch.zeros(16, 64)
    again(a, o)
    assert torch.equal(o, a + 1.0)


def test_modules_are_loaded_once_and_replaced_sources_are_run(monkeypatch):
    """A call does not hash the generated text again (load_modules remembers its modules), but a
    program whose ``sources`` are replaced runs the new text, not the remembered modules."""
    import pypto.driver.compiled as compiled_mod

    prog = pl.jit(K.doubled.fn).compile(torch.zeros(16, 128), torch.zeros(16, 128))
    a, out = torch.randn(16, 128), torch.zeros(16, 128)
    prog(a, out)
    assert torch.equal(out, a + a)
    built = []
    real = compiled_mod.module_from_source
    monkeypatch.setattr(compiled_mod, "module_from_source", lambda text, name: built.append(name) or real(text, name))
    prog(a, out)
    assert built == [] and torch.equal(out, a + a)
    rel = prog.meta["kernels"]["doubled_incore_0"]
    assert prog.sources[rel].count("torch.add(a_tile, a_tile, out=a_tile)") == 2   # task and gang forms
    prog.sources = {**prog.sources, rel: prog.sources[rel].replace("torch.add(a_tile, a_tile,", "torch.mul(a_tile, a_tile,")}
    prog(a, out)
    assert len(built) == 2 and torch.equal(out, a * a)   # (the kernel and the orchestration: rebuilt)
    out.zero_()
    prog(a, out)
    assert len(built) == 2 and torch.equal(out, a * a)
