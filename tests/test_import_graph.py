"""The import graph of the package: layered, no circle between packages, ``pypto.ir`` a leaf.

The layers (docs/architecture.md, "Layers"), lowest first. A module-level import may only go down
or stay within its layer (and never close a circle); a function-local import that goes up is the
exception and needs an entry, with its reason, in ``LAZY_UP`` below.
"""
from __future__ import annotations

import ast
import functools
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

pytestmark = pytest.mark.xdist_group("import_graph")   # one worker parses the package

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "pypto"

LAYERS = [
    {"pypto", "pypto.errors", "pypto.log", "pypto.tracebacks", "pypto.safe_files", "pypto.module_alias", "pypto.progress", "pypto.pyast"},
    {"pypto.language", "pypto.numerics"},     # dtypes, enums, annotations (the DSL facade: see LAZY_UP)
    {"pypto.ir"},
    {"pypto.ops"},
    {"pypto.backend"},
    {"pypto.passes"},
    {"pypto.codegen", "pypto.pypto_core"},
    {"pypto.frontend", "pypto.runtime"},
    {"pypto.driver"},
    {"pypto.debug", "pypto.testing"},
    {"pypto.tools", "pypto.cli", "pypto.demo", "pypto.__main__"},
]
RANK = {p: i for i, layer in enumerate(LAYERS) for p in layer}

# Function-local imports allowed to go up the layers: (from package, to package) -> why. Anything
# else that needs a higher layer's piece should move that piece down into a leaf module instead
# (as pypto.ir.pysource, pypto.ir.tags and pypto.ir.boxes were).
LAZY_UP = {
    ("pypto", "*"): "pypto/__init__ loads its subpackages on first attribute access (a cheap import pypto)",
    ("pypto.language", "*"): "the DSL facade (pl.jit, pl.program, pl.<op>) reaches the frontend, driver and "
                             "runtime when a kernel is specialised or called; dtypes and enums stay a leaf",
    ("pypto.ir", "pypto.ops"): "an op Call fills in its schema defaults, the printer and the verifier read op "
                               "schemas: the registry sits above the IR it types",
    ("pypto.ops", "pypto.backend"): "torch_codegen's pl.system.available_cluster/aiv_count reads the core counts "
                                    "of the platform it sizes launches for (support.available_cores)",
    ("pypto.backend", "pypto.codegen"): "pto_backend.generate is the reference's codegen entry point, "
                                        "kept where the reference has it",
    ("pypto.driver", "pypto.debug"): "CompiledProgram.validate_ir runs the debugging tool on the build",
    ("pypto.runtime", "pypto.driver"): "runner / harness are the reference's compile-and-run entry points",
    ("pypto.runtime", "pypto.testing"): "the golden harness compares with pypto.testing.compare",
    ("pypto.ir", "pypto.runtime"): "pypto.ir.distributed_compiled_program (the reference's path) loads "
                                   "DistributedCompiledProgram from the multi-rank engine on first access",
}


def _modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODS = _modules()


def _package(m: str) -> str:
    return ".".join(m.split(".")[:2])


def _targets(node: ast.ImportFrom | ast.Import) -> list[str]:
    """The pypto modules an import statement loads (``from pkg import sub`` loads ``pkg.sub``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in MODS]
    if node.level or not node.module or not node.module.startswith("pypto"):
        return []
    subs = [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in MODS]
    found = subs if len(subs) == len(node.names) else [node.module, *subs]
    return [t for t in found if t in MODS]


@functools.lru_cache(maxsize=None)   # once per process, even when the module fixture is set up again
def _imports() -> tuple[dict, list]:
    """(module-level edges {module: {module}}, function-local imports [(module, line, target)])."""
    top: dict[str, set] = defaultdict(set)
    local: list = []
    for m, path in MODS.items():
        def walk(node, in_function: bool, type_only: bool):
            for ch in ast.iter_child_nodes(node):
                if isinstance(ch, (ast.Import, ast.ImportFrom)):
                    for t in _targets(ch):
                        if in_function:
                            local.append((m, ch.lineno, t))
                        elif not type_only and t != m:
                            top[m].add(t)
                walk(ch, in_function or isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)),
                     type_only or (isinstance(ch, ast.If) and "TYPE_CHECKING" in ast.unparse(ch.test)))
        walk(ast.parse(path.read_text(encoding="utf-8")), False, False)
    return top, local


def _cycles(graph: dict) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in list(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter[0]; counter[0] += 1; stack.append(root); on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]; counter[0] += 1; stack.append(w); on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop(); on.discard(w); comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


@pytest.fixture(scope="module")
def edges():
    """(TOP, LOCAL) of :func:`_imports`: parsed once, when a test needs them, not at collection (it
    reads every module of the package: ~2 s that every pytest-xdist worker would pay)."""
    return _imports()


def test_every_package_has_a_layer():
    missing = sorted({_package(m) for m in MODS} - set(RANK))
    assert not missing, f"add these packages to LAYERS here and in docs/architecture.md: {missing}"


def test_no_import_circle_between_packages(edges):
    graph: dict[str, set] = defaultdict(set)
    for m, ts in edges[0].items():
        for t in ts:
            if _package(m) != _package(t):
                graph[_package(m)].add(_package(t))
    assert _cycles(graph) == []


def test_no_import_circle_between_modules(edges):
    # (pypto.ops.support is a package whose modules import core, never the package: issue 12)
    assert _cycles(edges[0]) == []


def test_module_level_imports_go_down_the_layers(edges):
    up = sorted(f"{m} -> {t}" for m, ts in edges[0].items() for t in ts if RANK[_package(t)] > RANK[_package(m)])
    assert up == [], "a module-level import up the layers (make it go down, or see LAZY_UP): " + ", ".join(up)


def test_function_local_imports_up_the_layers_are_the_listed_ones(edges):
    bad = sorted({f"{m}:{line} -> {t}" for m, line, t in edges[1]
                  if RANK[_package(t)] > RANK[_package(m)]
                  and (_package(m), _package(t)) not in LAZY_UP and (_package(m), "*") not in LAZY_UP})
    assert bad == [], ("a function-local import up the layers: move the shared piece down (a leaf module) "
                       "or, when it must stay lazy, add the package pair to LAZY_UP with the reason: " + ", ".join(bad))


def test_importing_the_ir_loads_no_pass_runtime_codegen_frontend_or_driver_module():
    code = ("import sys, pypto.ir.types, pypto.ir.nodes\n"
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('pypto'))))")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
                         cwd=ROOT).stdout.split()
    assert "pypto.ir.types" in out and "pypto.ir.nodes" in out
    heavy = ("pypto.passes", "pypto.runtime", "pypto.codegen", "pypto.frontend", "pypto.driver", "pypto.ops",
             "pypto.debug", "pypto.backend", "pypto.pypto_core")
    assert [m for m in out if m.startswith(heavy)] == []


def test_the_driver_paths_of_the_reference_still_work():
    import pypto.ir as ir
    import pypto.ir.compile as compile_name  # noqa: F401  (the function: ir.compile is called)
    from pypto.driver import build, compiled, pass_manager

    assert ir.compile is build.compile and callable(ir.compile)
    assert sys.modules["pypto.ir.compile"] is build        # one module object under both names
    assert ir.compiled_program is compiled and ir.compiled_program.CompiledProgram is ir.CompiledProgram
    assert ir.pass_manager is pass_manager and ir.PassManager is pass_manager.PassManager
    from pypto.ir.compile import run_pipeline
    assert run_pipeline is build.run_pipeline
    assert ir.compile is build.compile                     # still the function after the submodule import
