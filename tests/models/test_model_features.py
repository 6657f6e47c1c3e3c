"""The forms the reference's model programs (examples/models, paged attention) are written in,
each run on the simulators against a torch computation of the same math."""
import pytest
import torch

import kernels_models as K
import pypto.language as pl
from pypto.errors import ParserTypeError, SimulationError, UnsupportedFeatureError
from pypto.ir.types import RtDim
from pypto.language.program import parse
from pypto.runtime import RunConfig, run


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
@pytest.mark.parametrize("flag", [0, 1, 7, -1])
def test_module_level_kernel_called_with_int64_flag(platform, flag):
    a = torch.randn(16, 32)
    out = torch.zeros(16, 32)
    run(K.FlagProgram, a, torch.tensor([flag]), out, config=RunConfig(platform=platform))
    assert torch.equal(out, a + a if flag else a)
    assert "k_scale" in {f.name for f in K.FlagProgram.functions}


@pytest.mark.parametrize("n_valid", [32, 20, 1])
def test_runtime_shaped_create_and_slice(n_valid):
    a = torch.randn(64, 32)
    out = torch.zeros(64, 1)
    run(K.RuntimeShapeProgram, a, torch.tensor([16, n_valid]), out, config=RunConfig(platform="a2a3sim"))
    want = a[:, :n_valid].amax(dim=1, keepdim=True)
    assert torch.equal(out, want)


def test_runtime_extent_types_are_rtdims():
    main = K.RuntimeShapeProgram.get_function("main")
    printed = K.RuntimeShapeProgram.as_python()
    assert "pl.dynamic(\"rows\")" not in printed      # a run-time value is no program parameter
    from pypto.ir.visit import iter_stmts
    from pypto.ir.nodes import AssignStmt
    shapes = [s.var.type.shape for s in iter_stmts(main.body) if isinstance(s, AssignStmt)
              and getattr(s.value, "op", None) == "tensor.create"]
    assert shapes and all(isinstance(sh[0], RtDim) and sh[1] == 32 for sh in shapes)


def test_runtime_region_smaller_than_the_kernel_reads_is_a_located_error():
    a = torch.randn(64, 32)
    out = torch.zeros(64, 1)
    with pytest.raises(SimulationError, match="out of bounds"):
        run(K.RuntimeShapeProgram, a, torch.tensor([8, 32]), out, config=RunConfig(platform="a2a3sim"))


def test_int64_index_annotation_compat_and_refusals():
    src = '''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16], pl.FP32], n: pl.Scalar[pl.INDEX], o: pl.Out[pl.Tensor[[16], pl.FP32]]) -> pl.Tensor[[16], pl.FP32]:
        t = pl.load(a, [0], [16])
        r = pl.store(t, [0], o)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16], pl.FP32], o: pl.Out[pl.Tensor[[16], pl.FP32]]) -> pl.Tensor[[16], pl.FP32]:
        for i in pl.range(2):
            m: pl.Scalar[pl.INT64] = i * 2
            o = self.k(a, m, o)
        return o
'''
    parse(src)
    bad = src.replace("m: pl.Scalar[pl.INT64] = i * 2", "m: pl.Scalar[pl.FP32] = i * 2")
    with pytest.raises(ParserTypeError, match="annotation of 'm'"):
        parse(bad)
    bad2 = src.replace("m: pl.Scalar[pl.INT64] = i * 2", "m = 1.5")
    with pytest.raises(ParserTypeError, match="argument 1"):
        parse(bad2)


def test_tensor_view_annotation():
    src = '''
import pypto.language as pl

@pl.function(type=pl.FunctionType.InCore)
def k(a: pl.Tensor[[16, 32], pl.FP32, pl.TensorView(valid_shape=[16, 20], layout=pl.TensorLayout.ND)],
      o: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
    t = pl.load(a, [0, 0], [16, 32])
    r = pl.store(t, [0, 0], o)
    return r
'''
    f = parse(src)
    assert f.params[0].type.shape == (16, 32)
    # DN is a column-major view (tests/ops/test_tensor_layouts.py); NZ is a tile layout, never a tensor's
    assert parse(src.replace("layout=pl.TensorLayout.ND", "layout=pl.TensorLayout.DN")).params[0].type.layout.name == "DN"
    with pytest.raises(UnsupportedFeatureError, match="tile layout"):
        parse(src.replace("layout=pl.TensorLayout.ND", "layout=pl.TensorLayout.NZ"))
    with pytest.raises(ParserTypeError, match="valid_shape"):
        parse(src.replace("valid_shape=[16, 20]", "valid_shape=[16, 40]"))


def test_int64_carried_scalar_takes_index_values():
    """``mx: pl.Scalar[pl.INT64] = 0`` then ``mx = pl.max(mx, i)`` in a loop (09_paged_attention_spmd):
    one loop-carried INT64 value, used as a loop bound afterwards."""
    src = '''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16], pl.FP32], o: pl.InOut[pl.Tensor[[16], pl.FP32]]) -> pl.Tensor[[16], pl.FP32]:
        t = pl.add(pl.load(a, [0], [16]), pl.load(o, [0], [16]))
        r = pl.store(t, [0], o)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16], pl.FP32], lens: pl.Tensor[[4], pl.INT32],
             o: pl.InOut[pl.Tensor[[16], pl.FP32]]) -> pl.Tensor[[16], pl.FP32]:
        mx: pl.Scalar[pl.INT64] = 0
        for b in pl.range(4):
            n = pl.tensor.read(lens, [b])
            mx = pl.max(mx, n // 2)
        for j in pl.range(mx):
            o = self.k(a, o)
        return o
'''
    import tempfile, pathlib, importlib.util, sys
    d = pathlib.Path(tempfile.mkdtemp())
    (d / "carried_mod.py").write_text(src)
    spec = importlib.util.spec_from_file_location("carried_mod", d / "carried_mod.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["carried_mod"] = mod
    spec.loader.exec_module(mod)
    a, o = torch.randn(16), torch.zeros(16)
    run(mod.P, a, torch.tensor([3, 9, 4, 1], dtype=torch.int32), o, config=RunConfig(platform="a2a3sim"))
    assert torch.equal(o, a * 4)   # max(9 // 2, ...) = 4 accumulations


def test_orchestration_view_past_the_end_is_cut():
    from pypto.ops import support as S

    t = torch.arange(10)
    v = S.view_region(t, [8], [4])
    assert v.tolist() == [8, 9] and v.data_ptr() == t[8:].data_ptr()   # a view, cut at the end
    assert S.view_region(t, [2], [4]).tolist() == [2, 3, 4, 5]
    with pytest.raises(SimulationError, match="out of bounds"):
        S.view_region(t, [10], [1])       # starts outside: an error at once
    with pytest.raises(SimulationError, match="out of bounds"):
        S.region(v, [0], [4])             # a kernel access past the cut: located, never other data


def test_int_literal_for_a_narrow_int_parameter_is_range_checked():
    src = '''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16], pl.FP32], n: pl.Scalar[pl.INT8], o: pl.Out[pl.Tensor[[16], pl.FP32]]) -> pl.Tensor[[16], pl.FP32]:
        t = pl.load(a, [0], [16])
        r = pl.store(t, [0], o)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16], pl.FP32], o: pl.Out[pl.Tensor[[16], pl.FP32]]) -> pl.Tensor[[16], pl.FP32]:
        o = self.k(a, 100, o)
        return o
'''
    parse(src)
    with pytest.raises(ParserTypeError, match="does not fit a INT8"):
        parse(src.replace("self.k(a, 100, o)", "self.k(a, 300, o)"))


def test_runtime_extent_program_round_trips():
    from pypto.ir.equality import structural_equal

    txt = K.RuntimeShapeProgram.as_python()
    again = parse(txt)
    assert again.as_python() == txt and structural_equal(again, K.RuntimeShapeProgram)
    assert "k_scale(blk, False, buf)" in txt      # an int constant for a BOOL parameter folds
