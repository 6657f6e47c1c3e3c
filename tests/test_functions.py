"""@pl.jit.inline (InlineFunctions), @pl.jit.opaque, automatic discovery of called kernels."""
import kernels_lang as K
import pytest
import torch
from lang_harness import check_all

import pypto.language as pl
from pypto.ir.nodes import FuncCall
from pypto.ir.visit import iter_exprs
from pypto.language import FunctionType
from pypto.language.program import parse


def _spec(kernel, *args):
    return kernel._specialize(args, {}).program


def test_inline_is_spliced_and_leaves_no_function():
    a = torch.randn(64, 64)
    check_all(K.use_inline, (a, torch.zeros(64, 64)), {1: a * 8})
    front = _spec(K.use_inline, a, torch.zeros(64, 64))
    assert {f.name: f.func_type for f in front.functions}["double"] == FunctionType.Inline
    assert "quad" in {f.name for f in front.functions}
    lowered = K.use_inline.lower(a, torch.zeros(64, 64))
    assert not any(f.func_type == FunctionType.Inline for f in lowered.functions)
    names = {f.name for f in lowered.functions}
    assert "double" not in names and "quad" not in names
    assert not any(isinstance(e, FuncCall) and e.func in ("double", "quad")
                   for f in lowered.functions for e in iter_exprs(f.body))


def test_inline_program_roundtrips():
    front = _spec(K.use_inline, torch.zeros(64, 64), torch.zeros(64, 64))
    again = parse(front.as_python())
    assert {f.name: f.func_type for f in again.functions}["double"] == FunctionType.Inline


def test_diamond_discovers_each_kernel_once():
    a = torch.randn(64, 64)
    z = lambda: torch.zeros(64, 64)
    check_all(K.diamond, (a, z(), z(), z()), {1: a * 3, 2: a * 3, 3: a * 6})
    front = _spec(K.diamond, a, z(), z(), z())
    names = [f.name for f in front.functions]
    assert names.count("k_scale") == 1 and "k_add" in names
    assert names.index("k_scale") < names.index("diamond") and names[-1] == "diamond"


def test_transitive_dependencies_are_discovered():
    a = torch.randn(64, 64)
    check_all(K.transitive, (a, torch.zeros(64, 64)), {1: a * 3})
    names = [f.name for f in _spec(K.transitive, a, torch.zeros(64, 64)).functions]
    assert names == ["k_scale", "k_left", "transitive"]


def test_opaque_kind():
    @pl.jit.opaque
    def helper(x: pl.Tensor):
        return x

    assert helper.func_type == FunctionType.Opaque and helper.kind == "opaque"
    assert pl.jit.opaque()(helper.fn).kind == "opaque"
    assert pl.jit.inline()(helper.fn).func_type == FunctionType.Inline
    with pytest.raises(TypeError, match="does not accept an auto_scope= argument"):
        pl.jit.opaque(auto_scope=True)
    with pytest.raises(TypeError, match=r"@pl.jit.opaque does not accept a level= argument"):
        pl.jit.opaque(level=pl.Level.AIV)


def test_sub_kernels_cannot_be_called_directly():
    with pytest.raises(TypeError, match="call it from a @pl.jit kernel"):
        K.k_scale(torch.zeros(64, 64), torch.zeros(64, 64))


def test_opaque_function_holds_orchestration_loops_and_scopes():
    a = torch.randn(128, 64)
    z = lambda: torch.zeros(128, 64)
    check_all(K.use_opaque, (a, z(), z()), {1: a * 2, 2: a * 4})
    front = _spec(K.use_opaque, a, z(), z())
    assert {f.name: f.func_type for f in front.functions}["bands"] == FunctionType.Opaque
    lowered = K.use_opaque.lower(a, z(), z())
    assert lowered.entry.name == "use_opaque"
    assert "bands" not in {f.name for f in lowered.functions}
    assert sum(f.func_type == FunctionType.InCore for f in lowered.functions) == 2
