"""One ``pl.dynamic`` dim given different extents by different parameters (issue 14: the
reference's ``test_dyn_orch_reshape_add`` / ``transpose_add`` forms): each parameter keeps its own
extent, results are bit exact against torch on both simulators and under torch_codegen, one build
serves every extent, a dim used as a value is a located error, and agreeing dims bind as before."""
import importlib.util
import sys

import kernels_dyn_disagree as K
import pytest
import torch

from pypto.debug.torch_codegen import torch_codegen
from pypto.errors import ParserTypeError
from pypto.ir import compile as ir_compile
from pypto.ir.equality import assert_structural_equal
from pypto.runtime import RunConfig, run

import pypto.language as pl

PLATFORMS = ("a2a3sim", "a5sim")


def _ref(prog, *args):
    """Run ``prog`` under the torch reference executor (pypto.debug.torch_codegen), as written and
    as lowered by the pass pipeline; returns the two runs' copies of ``args``."""
    runs = []
    for p in (prog, ir_compile(prog).lowered):
        a = [x.clone() for x in args]
        ns: dict = {}
        exec(compile(torch_codegen(p), f"<ref {p.name}>", "exec"), ns)
        ns[p.entry.name](*a)
        runs.append(a)
    return runs


@pytest.mark.parametrize("platform", PLATFORMS)
def test_flat_inputs_with_a_2d_output_run_bit_exact(platform):
    """``a_flat: [M]`` of 768 elements next to ``c: [M, N]`` of 24 rows (the reshape form)."""
    g = torch.Generator().manual_seed(14)
    a, b = torch.randn(K.FLAT_ROWS * K.COLS, generator=g), torch.randn(K.FLAT_ROWS * K.COLS, generator=g)
    c = torch.full((K.FLAT_ROWS, K.COLS), float("nan"))
    run(K.FlatToRows, a, b, c, config=RunConfig(platform=platform))
    want = (a * b + a).reshape(K.FLAT_ROWS, K.COLS)   # FP32 mul then add, as the kernel: one rounding each
    assert torch.equal(c, want)
    for run_ in _ref(K.FlatToRows, a, b, torch.zeros_like(c)):
        assert torch.equal(run_[2], want)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_transposed_inputs_meet_the_callees_dims_crosswise(platform):
    """The callee's ``M`` is the caller's ``N`` from ``at`` and the caller's ``M`` from ``c``."""
    g = torch.Generator().manual_seed(15)
    a, b = torch.randn(K.ROWS, K.COLS, generator=g), torch.randn(K.ROWS, K.COLS, generator=g)
    c = torch.full((K.COLS, K.ROWS), float("nan"))
    run(K.SwapAxes, a, b, c, config=RunConfig(platform=platform))
    assert torch.equal(c, (a - b).T.contiguous())
    for run_ in _ref(K.SwapAxes, a, b, torch.zeros_like(c)):
        assert torch.equal(run_[2], (a - b).T.contiguous())
    # the call's result keeps the callee's symbolic dims: no caller extent is picked for them
    assert "c: pl.Tensor[[M, N], pl.FP32] = self.sub(at, bt, c)" in K.SwapAxes.functions["main"].as_python()


@pytest.mark.parametrize("platform", PLATFORMS)
def test_one_build_serves_every_pair_of_extents(platform):
    keys = set()
    for rows in (8, 24, 40):
        a = torch.randn(2 * rows, K.COLS)
        c = torch.full((rows, K.COLS), float("nan"))
        run(K.FoldHalves, a, c, config=RunConfig(platform=platform))
        assert torch.equal(c, a[:rows] - a[rows:])
        for run_ in _ref(K.FoldHalves, a, torch.zeros_like(c)):
            assert torch.equal(run_[1], a[:rows] - a[rows:])
        keys.add(ir_compile(K.FoldHalves).cache_key)
    assert len(keys) == 1


def test_a_static_caller_keeps_each_extent_and_types_the_result_symbolically():
    a, c = torch.randn(16, 64), torch.full((8, 64), float("nan"))
    run(K.StaticDisagree, a, c)
    assert torch.equal(c, a[:8])
    text = K.StaticDisagree.functions["main"].as_python()
    # M is 16 from `a` and 8 from `c`: neither types the result (a pl.tensor.dim of it reads the tensor)
    assert "pl.Tensor[[M, 64], pl.FP32] = self.head(a, c)" in text
    assert_structural_equal(K.StaticDisagree, pl.parse(K.StaticDisagree.as_python()))
    assert_structural_equal(K.SwapAxes, pl.parse(K.SwapAxes.as_python()))


def test_agreeing_extents_bind_as_before():
    a, c = torch.randn(16, 64), torch.full((16, 64), float("nan"))
    run(K.StaticAgree, a, c)
    assert torch.equal(c, a)
    assert "c: pl.Tensor[[16, 64], pl.FP32] = self.head(a, c)" in K.StaticAgree.functions["main"].as_python()


def test_a_composite_dim_is_still_checked_where_its_dim_agrees():
    """``M`` agrees (or is bound by one parameter only): ``M * 2`` must still evaluate to its extent."""
    from pypto.ir.types import DynDim, bind_extents

    M = DynDim("M")
    assert bind_extents([("a", [M * 2], [12]), ("c", [M], [6])]) is None
    assert "cannot be with M = 5" in bind_extents([("a", [M * 2], [12]), ("c", [M], [5])])
    # M disagrees between the bare occurrences: no value, the composite is not checked
    assert bind_extents([("a", [M * 2], [12]), ("b", [M], [5]), ("c", [M], [7])]) is None


def _load(tmp_path, name, src):
    path = tmp_path / f"{name}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.modules.pop(name, None)
    return mod


_HEAD = '''import pypto.language as pl

M = pl.dynamic("M")
N = pl.dynamic("N")


@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[M], pl.FP32], c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        t = pl.load(c, [0, 0], [8, 8])
'''


@pytest.mark.parametrize("line", [
    "        for i in pl.range(M):\n            t = pl.add(t, t)\n",
    "        n = pl.tensor.dim(a, 0) + M\n        t = pl.add(t, pl.cast(n, pl.FP32))\n",
])
def test_a_carried_dim_used_as_a_value_reads_its_first_carrier(tmp_path, line):
    # (docs/language.md, "Dynamic shapes"): M is the extent of 'a' (the first parameter carrying
    # it), also where the arguments give 'c' another one
    from pypto.ir.printer import print_program

    src = _HEAD + line + "        return pl.store(t, [0, 0], c)\n"
    text = print_program(_load(tmp_path, "dyn_value_ok", src).P)
    assert "pl.tensor.dim(a, 0)" in text and "pl.tensor.dim(c, 0)" not in text, text


@pytest.mark.parametrize("line, col, text", [
    ("        t = pl.add(t, pl.full([8, 8], M * 1.0))\n", 39, "M * 1.0"),
])
def test_a_dim_used_as_a_value_is_a_located_error(tmp_path, line, col, text):
    src = _HEAD + line + "        return pl.store(t, [0, 0], c)\n"
    with pytest.raises(ParserTypeError) as e:
        _load(tmp_path, "dyn_value", src)
    msg = str(e.value)
    assert f"dyn_value.py:12:{col}" in msg and text in msg and "^" in msg, msg
    assert "the dynamic dimension 'M' is used as a value" in msg
    assert "dimension 0 of 'a' and dimension 0 of 'c' may be given different extents" in msg
    assert "hint: read the extent of the tensor you mean: pl.tensor.dim(a, 0)" in msg


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_extent_of_a_calls_result_is_read_from_the_tensor(platform):
    """Regression: a static argument used to bind ``M`` for the result type, so ``pl.tensor.dim`` of
    the result folded to 16 for a 32-row ``c`` (a silently wrong number)."""
    a, c, rows = torch.randn(256), torch.full((32, 16), float("nan")), torch.zeros(1, dtype=torch.int64)
    run(K.DimAfterCall, a, c, rows, config=RunConfig(platform=platform))
    assert rows.tolist() == [32]
    assert torch.equal(c[:16], a.reshape(16, 16)) and c[16:].isnan().all()
    assert "pl.tensor.dim(c, 0)" in K.DimAfterCall.functions["main"].as_python()
    for run_ in _ref(K.DimAfterCall, a, c.clone(), rows.clone()):
        assert run_[2].tolist() == [32]



@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("rows_x, rows_y, rows_w", [(8, 4, 4), (8, 6, 2), (10, 3, 7)])
def test_a_dim_value_is_read_from_the_carrier_the_reference_reads(platform, rows_x, rows_y, rows_w):
    """The reference defines a dim used as a value once per function: a kernel recovers it from the
    first parameter whose extent it can invert (``a: [M * 2]`` -> ``rows(a) // 2``), an orchestration
    from the first *bare* carrier (``z: [M]``, after the composite ``x``). Before, both read the first
    bare carrier, so the kernel gave ``rows(b)`` where the arguments disagree (the last two cases)."""
    x, y, w = torch.zeros(rows_x, 4), torch.zeros(rows_y, 4), torch.zeros(rows_w, 4)
    z = torch.zeros(rows_x // 2, 4)
    out = torch.full((2,), -1, dtype=torch.int64)
    run(K.DimValueRule, x, y, w, z, out, config=RunConfig(platform=platform))
    assert out.tolist() == [rows_x // 2, rows_x // 2]
    count, main = K.DimValueRule.functions["count"].as_python(), K.DimValueRule.functions["main"].as_python()
    assert "pl.tensor.dim(a, 0) // 2" in count, count
    assert "pl.tensor.dim(z, 0)" in main and "pl.tensor.dim(x, 0)" not in main, main


def test_a_composite_dim_value_is_computed_from_its_parts(tmp_path):
    """``M * 2`` as a value is ``M``'s value times 2 (the reference prints ``M * 2`` over its one
    definition of ``M``), not the extent of a parameter that happens to be ``[M * 2]``."""
    src = _HEAD.replace("a: pl.Tensor[[M], pl.FP32]", "a: pl.Tensor[[M * 2], pl.FP32], b: pl.Tensor[[M], pl.FP32]") \
        + "        for i in pl.range(M * 2):\n            t = pl.add(t, t)\n" \
        + "        return pl.store(t, [0, 0], c)\n"
    from pypto.ir.printer import print_program

    text = print_program(_load(tmp_path, "dyn_value_composite", src).P)
    assert "pl.range((pl.tensor.dim(a, 0) // 2) * 2)" in text, text


def test_an_orchestration_dim_read_of_a_parameters_dim_is_the_dims_value():
    """As the reference: in an Orchestration function ``pl.tensor.dim(c, 0)`` of ``c: [M, N]`` is ``M``,
    the extent of ``M``'s first bare carrier ``a`` (256 elements; ``c`` has 16 rows). An Opaque function
    keeps ``c``'s own read (the reference folds in Orchestration functions only)."""
    rows = torch.zeros(1, dtype=torch.int64)
    run(K.DimFoldOrch, torch.randn(256), torch.randn(16, 8), rows, config=RunConfig(platform="a2a3sim"))
    assert rows.tolist() == [256]
    assert "pl.tensor.dim(a, 0)" in K.DimFoldOrch.as_python()
    assert "pl.tensor.dim(c, 0)" in K.DimFoldOpaque.as_python()


def test_an_entry_that_is_no_orchestration_is_a_clear_error():
    """Regression: an Opaque entry with no pl.at scope has no orchestration module; running it was an
    AttributeError deep in the simulator."""
    from pypto.errors import CodegenError

    with pytest.raises(CodegenError, match="has no orchestration to run: its entry function 'main'"):
        run(K.DimFoldOpaque, torch.randn(256), torch.randn(16, 8), torch.zeros(1, dtype=torch.int64))


def test_inside_a_scope_the_dim_read_stays_on_the_tensor_named(tmp_path):
    src = '''import pypto.language as pl

M = pl.dynamic("M")
N = pl.dynamic("N")


@pl.program
class P:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M], pl.FP32], c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        n = pl.tensor.dim(c, 0)
        with pl.at(level=pl.Level.CORE_GROUP):
            r = pl.tensor.dim(c, 0)
            t = pl.load(c, [0, 0], [8, 8])
            c = pl.store(pl.adds(t, pl.cast(r + n, pl.FP32)), [0, 0], c)
        return c
'''
    from pypto.ir.printer import print_program

    text = print_program(_load(tmp_path, "dim_in_scope", src).P)
    assert "n: pl.Scalar[pl.INDEX] = pl.tensor.dim(a, 0)" in text and "r: pl.Scalar[pl.INDEX] = pl.tensor.dim(c, 0)" \
        in text, text
