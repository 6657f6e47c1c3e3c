"""PassDumpLevel CONCISE vs EXPLICIT (``dump_passes``; docs/compiler.md, "Pass dumps, validate_ir, ir_trace").

EXPLICIT annotates every assignment with its Var's full type; CONCISE leaves an annotation out
exactly when the parser re-infers the same type, so both forms parse back to a structurally equal
program at every stage of the pipeline.
"""
import re

import kernels as K
import kernels_lang as KL
import pytest
import torch

from pypto.frontend.specialize import specialize
from pypto.ir import PassDumpLevel, assert_structural_equal, run_pipeline
from pypto.ir.printer import print_function, print_program
from pypto.language import parse
from pypto.runtime import RunConfig
from pypto.tools import ir_trace

_ANN = re.compile(r"^\s*\w+: pl\.\w+\[.*\] = ", re.MULTILINE)   # an annotated assignment line


def _cases():
    f = torch.zeros
    return {
        "add": (K.add, (f(128, 128), f(128, 128), f(128, 128))),
        "fused": (K.fused, (f(64, 128), f(64, 128), f(64, 128))),
        "accumulate": (K.accumulate, (f(64, 128), f(64, 128))),
        "tile_exp": (K.tile_exp, (f(64, 128), f(64, 128))),
        "add_fp16": (K.add_fp16, tuple(f(128, 128, dtype=torch.float16) for _ in range(3))),
        "cast_i32_f16": (K.cast_i32_f16, (f(1, 32, dtype=torch.int32), f(1, 32, dtype=torch.float16))),
        "diamond": (KL.diamond, None),
        "unroll_if": (KL.unroll_if, None),
        "range_rows": (KL.range_rows, None),
    }


def _stages(name, platform="a2a3sim", **options):
    kernel, args = _cases()[name]
    if args is None:
        args = tuple(torch.zeros(*a.args[0]) for a in _annotations(kernel))
    program = specialize(kernel, args, {}).program
    return run_pipeline(program, {"platform": platform, **options}).stages


def _annotations(kernel):
    import inspect

    from pypto.language.annotations import Annotation

    out = []
    for p in inspect.signature(kernel.fn).parameters.values():
        a = p.annotation
        while isinstance(a, Annotation) and a.kind in ("Out", "InOut"):
            a = a.args
        out.append(a)
    return out


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
@pytest.mark.parametrize("name", list(_cases()))
def test_concise_roundtrips_at_every_stage(name, platform):
    dropped = 0
    for stage, program in _stages(name, platform):
        concise = program.as_python(concise=True)
        explicit = program.as_python()
        reparsed = parse(concise)
        assert_structural_equal(program, reparsed)
        assert reparsed.as_python(concise=True) == concise, f"{name} after {stage}"
        assert reparsed.as_python() == explicit, f"{name} after {stage}"
        assert len(_ANN.findall(concise)) <= len(_ANN.findall(explicit))
        dropped += len(_ANN.findall(explicit)) - len(_ANN.findall(concise))
    assert dropped > 0, f"{name}: CONCISE never dropped an annotation"


def test_concise_roundtrips_with_compiler_dep_edges():
    for stage, program in _stages("diamond", analyze_auto_scopes_for_deps=True):
        assert_structural_equal(program, parse(program.as_python(concise=True)))


def test_what_concise_omits_and_keeps():
    stages = dict(_stages("add"))
    # a kernel call's result type is its callee's return type: implied, so dropped in the orchestration
    final = stages["FinalSimplify"]
    orch = final.entry
    explicit, concise = print_program(final), print_program(final, concise=True)
    call_line = next(line for line in concise.splitlines() if "self." in line and "def " not in line)
    assert not _ANN.match(call_line), call_line
    assert any(_ANN.match(line) and "self." in line for line in explicit.splitlines())
    # an allocated tile's MemRef / memory space is a pass's decision the op's type rule cannot give:
    # the annotation stays
    alloc = stages["AllocateMemoryAddr"].as_python(concise=True)
    assert "pl.MemRef(" in alloc and "pl.Mem." in alloc
    # without the program the printer cannot see a callee's return type: it annotates
    alone = print_function(orch, concise=True)
    assert any(_ANN.match(line) and "self." in line for line in alone.splitlines())
    assert print_function(orch, concise=True, program=final).count(": pl.") < alone.count(": pl.")


def test_explicit_is_the_default_print():
    program = dict(_stages("fused"))["InferTileMemorySpace"]
    assert program.as_python() == print_program(program) == print_program(program, concise=False)
    assert print_program(program, concise=True) != print_program(program)


def _dump(kernel, args, level, tmp_path):
    out = tmp_path / level.name
    kernel.compile(*args, config=RunConfig(dump_passes=level, save_kernels_dir=str(out)))
    return out / "passes_dump"


@pytest.mark.parametrize("level", [PassDumpLevel.CONCISE, PassDumpLevel.EXPLICIT])
def test_dump_levels_write_parseable_files_and_ir_trace_reads_them(level, tmp_path):
    args = (torch.zeros(64, 128), torch.zeros(64, 128), torch.zeros(64, 128))
    dump = _dump(K.fused, args, level, tmp_path)
    files = sorted(dump.glob("*.py"))
    assert files and files[0].name == "00_frontend.py"
    for path in files:
        parse(path.read_text())
    stages = ir_trace.collect_stages(dump)
    assert len(stages) == len(files)
    page = ir_trace.build_page(stages, "t")
    assert "<script" in page
    assert ir_trace.main([str(dump), "-o", str(tmp_path / f"{level.name}.html")]) == 0


def test_concise_and_explicit_dumps_differ_and_true_means_concise(tmp_path):
    args = (torch.zeros(64, 128), torch.zeros(64, 128), torch.zeros(64, 128))
    concise = _dump(K.fused, args, PassDumpLevel.CONCISE, tmp_path)
    explicit = _dump(K.fused, args, PassDumpLevel.EXPLICIT, tmp_path)
    names = sorted(p.name for p in concise.glob("*.py"))
    assert names == sorted(p.name for p in explicit.glob("*.py"))
    differ = 0
    for n in names:
        c, e = (concise / n).read_text(), (explicit / n).read_text()
        assert_structural_equal(parse(c), parse(e))
        assert len(_ANN.findall(c)) <= len(_ANN.findall(e))
        differ += c != e
    assert differ > 0
    true_dir = tmp_path / "true"
    K.fused.compile(*args, config=RunConfig(dump_passes=True, save_kernels_dir=str(true_dir)))
    for n in names:
        assert (true_dir / "passes_dump" / n).read_text() == (concise / n).read_text()


def test_a_memo_shared_by_the_stages_prints_each_stage_as_alone():
    """The pass dumps print every stage through one memo (a function object printed before, with the
    same callees, is not printed again): each text equals the stage printed on its own."""
    for name in _cases():
        memo: dict = {}
        stages = _stages(name)
        assert any(a is b for (_, p), (_, q) in zip(stages, stages[1:]) for a, b in zip(p.functions, q.functions))
        for concise in (True, False):
            for _, stage in stages:
                assert print_program(stage, concise, memo) == print_program(stage, concise), name
