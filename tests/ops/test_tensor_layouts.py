"""DN global tensors (the reference's column-major trailing pair): what a DN parameter reads from
the caller's bytes, what a store into a DN tensor writes there, pl.transpose / pl.tensor.view as
zero-copy views of the same bytes (in orchestration and inside kernels), and the errors for layouts
a tensor cannot have.

Oracle: torch indexing of the caller's flat buffers (``buf.reshape(R, C).T`` is the column-major
reading of a [C, R] buffer), written here from the layout's definition (element ``[i, j]`` of a
[C, R] DN tensor at ``i + j * C``), not from pypto. Both the simulator and the torch reference
executor must equal it bit for bit on both platforms.
"""
from __future__ import annotations

import textwrap

import pytest
import torch

import kernels_tensor_layouts as K
import pypto.runtime as prt
from pypto.debug.torch_codegen import torch_codegen
from pypto.errors import PyptoError
from pypto.ir import compile as ir_compile
from pypto.runtime import RunConfig

R, C = K.R, K.C
PLATFORMS = ["a2a3sim", "a5sim"]


def _run_both(program, args, platform):
    """(simulator, reference executor) results: the argument tensors after the run."""
    sim = [x.clone() for x in args]
    prt.run(program, *sim, config=RunConfig(platform=platform))
    ref = [x.clone() for x in args]
    ns: dict = {}
    exec(compile(torch_codegen(ir_compile(program, platform=platform).lowered), "<ref layouts>", "exec"), ns)
    ns[program.entry.name if hasattr(program, "entry") else "main"](*ref)
    return sim, ref


def _same(actual, expected):
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    assert torch.equal(actual.view(torch.int32) if actual.dtype == torch.float32 else actual,
                       expected.view(torch.int32) if expected.dtype == torch.float32 else expected)


def _dn_read(buf: torch.Tensor) -> torch.Tensor:
    """The logical [rows, cols] tensor a DN parameter of that shape reads from ``buf``'s bytes: element
    [i, j] is flat element i + j * rows."""
    rows, cols = buf.shape
    flat = buf.reshape(-1)
    idx = torch.arange(rows)[:, None] + torch.arange(cols)[None, :] * rows
    return flat[idx]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_dn_parameter_reads_the_callers_bytes_column_major(platform):
    buf = torch.randn(C, R)
    sim, ref = _run_both(K.DnParam, [buf, torch.zeros(C, R)], platform)
    want = _dn_read(buf)
    assert not torch.equal(want, buf)             # the layout is visible: reading it row-major is wrong
    _same(sim[1], want)
    _same(ref[1], want)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_store_into_dn_parameter_writes_column_major(platform):
    x = torch.randn(8, R)
    out = torch.full((C, R), -1.0)
    sim, ref = _run_both(K.DnStore, [x, out], platform)
    logical = _dn_read(out).clone()
    logical[8:16] = x                             # the kernel wrote rows 8..15 of the logical view
    flat = torch.empty(C * R)
    idx = torch.arange(C)[:, None] + torch.arange(R)[None, :] * C
    flat[idx] = logical                           # back to the bytes, column-major
    _same(sim[1], flat.reshape(C, R))
    _same(ref[1], flat.reshape(C, R))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_transpose_view_read_and_written_by_a_kernel(platform):
    x, y = torch.randn(R, C), torch.randn(R, C)
    sim, ref = _run_both(K.TransposeToKernel, [x, y, torch.zeros(4, R)], platform)
    want_y = y.clone()
    want_y[:, 0:4] = x[:, 3:7] * 2.0              # the kernel wrote rows 0..3 of y's DN view
    for got in (sim, ref):
        _same(got[2], x[:, 3:7].T.contiguous())
        _same(got[1], want_y)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_view_layout_flip(platform):
    x = torch.randn(R, C)
    sim, ref = _run_both(K.ViewFlip, [x, torch.zeros(C, R), torch.zeros(C, R)], platform)
    for got in (sim, ref):
        _same(got[1], x.T.contiguous())           # orchestration: a zero-copy view
        _same(got[2], x.T.contiguous())           # in a kernel: on chip


@pytest.mark.parametrize("platform", PLATFORMS)
def test_view_reinterprets_the_packed_bytes(platform):
    x = torch.randn(R, C)
    sim, ref = _run_both(K.ViewReinterpret, [x, torch.zeros(8, 64), torch.zeros(64, 8)], platform)
    flat = x.reshape(-1)
    # x's bytes read as a DN [8, 64]: element [i, j] at i + 8 j
    want = flat[torch.arange(8)[:, None] + torch.arange(64)[None, :] * 8]
    # x's transpose (DN [C, R]) is packed: its bytes are x's, read row-major as [64, 8]
    want2 = flat.reshape(64, 8)
    for got in (sim, ref):
        _same(got[1], want)
        _same(got[2], want2)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_create_tensor_dn(platform):
    x = torch.randn(C, R)
    sim, ref = _run_both(K.CreateDn, [x, torch.zeros(8, 64)], platform)
    want = x.T.contiguous().reshape(8, 64)        # the DN buffer's bytes: x column-major
    _same(sim[1], want)
    _same(ref[1], want)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_returned_created_dn_tensor_is_its_logical_values(platform):
    """A DN tensor the program creates and returns: the reference's device runtime returns only Out
    parameters, its reference executor ``torch.zeros(shape)`` for the create, i.e. a contiguous
    tensor of the logical shape holding the logical values. The simulator returns that (it used to
    return the column-major buffer's strided view: equal values, strides (1, C)); the reference
    executor here holds the same values. A square pl.transpose of an argument is returned as the
    transpose (it used to be taken for the argument: the call returned None, the results were
    lost); the argument itself as the caller's own tensor."""
    x, sq = torch.randn(C, R), torch.randn(R, R)
    compiled = ir_compile(K.ReturnsCreatedDn, platform=platform)
    got = compiled(x, sq, config=RunConfig(platform=platform))
    assert isinstance(got, tuple) and len(got) == 3
    t, sq_t, same = got
    assert t.shape == (C, R) and t.is_contiguous()
    _same(t, x * 2.0)
    assert sq_t.is_contiguous()
    _same(sq_t, sq.T.contiguous())
    assert same is sq
    ns: dict = {}
    exec(compile(torch_codegen(compiled.lowered), "<ref>", "exec"), ns)
    ref = ns["main"](x.clone(), sq.clone())
    _same(ref[0].contiguous(), x * 2.0)
    _same(ref[1].contiguous(), sq.T.contiguous())


@pytest.mark.parametrize("platform", PLATFORMS)
def test_vec_to_vec_extract_of_a_transposed_strip(platform):
    x, scale = torch.randn(16, 64), torch.randn(16, 8)
    sim, ref = _run_both(K.ColumnViaExtract, [x, scale, torch.zeros(16, 64)], platform)
    want = x * scale[:, 2:3]                      # one FP32 multiply per element: exact
    _same(sim[2], want)
    _same(ref[2], want)
    # it stays on the vector core: no Mat hop, no mixed kernel
    text = ir_compile(K.ColumnViaExtract, platform=platform).lowered.as_python()
    assert "pl.Mem.Mat" not in text and "FunctionType.Group" not in text


@pytest.mark.parametrize("platform", PLATFORMS)
def test_matmul_with_a_dn_operand(platform):
    torch.manual_seed(3)
    a = torch.randn(16, 32).to(torch.float16)
    b = torch.randn(16, 32).to(torch.float16)
    sim, ref = _run_both(K.DnMatmul, [a, b, torch.zeros(16, 16)], platform)
    # each FP16 product is exact in FP32, the 32-term sum rounds in FP32 (in the K blocks the L0 tiling
    # chooses): within a few FP32 ulps of the float64 product; sim == reference executor bit for bit below
    want = (a.double() @ b.double().T).float()
    for got in (sim, ref):
        torch.testing.assert_close(got[2], want, rtol=2e-6, atol=1e-5)
    _same(sim[2], ref[2])


def test_dn_prints_as_a_view_and_parses_back():
    from pypto.ir import parse

    for prog in (K.DnParam, K.TileLayouts, K.CreateDn):
        text = prog.as_python()
        assert parse(text).as_python() == text
    assert "pl.TensorView(layout=pl.TensorLayout.DN)" in K.DnParam.as_python()
    assert "transpose=True" in K.TileLayouts.as_python() and "blayout=pl.TileLayout.row_major" in \
        K.TileLayouts.as_python()


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tile_layout_attributes_leave_values_logical(platform):
    torch.manual_seed(4)
    a = torch.randn(16, 32).to(torch.float16)
    b = torch.randn(32, 16).to(torch.float16)
    sim, ref = _run_both(K.TileLayouts, [a, b, torch.zeros(16, 16)], platform)
    # FP32 accumulation of exact FP16 products: a few ulps from float64 (bits: sim == reference below)
    torch.testing.assert_close(sim[2], (a.double() @ b.double()).float(), rtol=2e-6, atol=1e-5)
    _same(sim[2], ref[2])


# ---------------------------------------------------------------- errors

def _module(tmp_path, name, body):
    import importlib.util
    import sys

    path = tmp_path / f"{name}.py"
    path.write_text("import pypto.language as pl\n\n" + textwrap.dedent(body))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod            # inspect finds a class's source through its module
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.modules.pop(name, None)
    return mod


def _kernel(ann: str, body: str = "out = pl.store(pl.load(x, [0, 0], [16, 16]), [0, 0], out)") -> str:
    return f"""
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def kernel(self, x: {ann}, out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            {body}
            return out
    """


@pytest.mark.parametrize("ann,words", [
    ("pl.Tensor[[16, 16], pl.FP32, pl.DN]", ["DN layout-only shorthand", "pl.transpose(x, -2, -1)"]),
    ("pl.Tensor[[16, 16], pl.FP32, pl.NZ]", ["tile layout", "omit the layout"]),
    ("pl.Tensor[[16, 16], pl.FP32, pl.TensorView(layout=pl.TensorLayout.NZ)]", ["a tile layout", "ND or DN"]),
    ("pl.Tensor[[16, 16], pl.FP32, pl.TensorView(stride=[16, 1], layout=pl.TensorLayout.DN)]",
     ["packed DN strides [1, 16]"]),
    ("pl.Tensor[[256], pl.FP32, pl.TensorView(layout=pl.TensorLayout.DN)]", ["needs rank >= 2"]),
])
def test_bad_tensor_layouts_are_located_errors(tmp_path, ann, words):
    with pytest.raises(PyptoError) as e:
        _module(tmp_path, "bad_layout", _kernel(ann))
    msg = str(e.value)
    assert "bad_layout.py:" in msg and "^" in msg, msg     # file:line, the source line and a caret
    for w in words:
        assert w in msg, msg


def _tile_kernel(stmt: str, ann: str = "") -> str:
    decl = f"t: {ann} = " if ann else "t = "
    return f"""
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def kernel(self, x: pl.Tensor[[16, 16], pl.FP16],
                   out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            {decl}pl.load(x, [0, 0], [16, 16], target_memory=pl.Mem.Mat)
            {stmt}
            return out
    """


@pytest.mark.parametrize("stmt,ann,words", [
    ("s = pl.tile.create([16, 16], pl.FP16, target_memory=pl.Mem.Vec, transpose=True)", "",
     ["needs target_memory=pl.Mem.Mat"]),
    ("s = pl.tile.create([16, 16], pl.FP16, target_memory=pl.Mem.Mat, transpose=True, flat_layout=True)", "",
     ["exclude each other"]),
    ("s = pl.move(t, target_memory=pl.Mem.Left, blayout=pl.Mem.Vec)", "", ["must be a pl.TileLayout"]),
    ("s = pl.move(t, target_memory=pl.Mem.LeftScale, blayout=pl.TileLayout.col_major)", "",
     ["hardware-fixed layout"]),
    ("s = t", "pl.Tile[[16, 16], pl.FP16, pl.Mem.Mat, pl.TileView(blayout=1)]", ["must be a pl.TileLayout"]),
    ("s = t", "pl.Tile[[16, 16], pl.FP16, pl.Mem.Mat, pl.TileView(fractal=-2)]", ["fractal must be a positive"]),
    ("s = t", "pl.Tile[[16, 16], pl.FP16, pl.Mem.Mat, pl.TileView(pad=pl.PadValue.max)]", ["pad=", "fillpad"]),
])
def test_bad_tile_layouts_are_located_errors(tmp_path, stmt, ann, words):
    with pytest.raises(PyptoError) as e:
        _module(tmp_path, "bad_tile_layout", _tile_kernel(stmt, ann))
    msg = str(e.value)
    assert "bad_tile_layout.py:" in msg and "^" in msg, msg
    for w in words:
        assert w in msg, msg


def test_explicit_dn_strides_are_accepted(tmp_path):
    mod = _module(tmp_path, "dn_strides", _kernel(
        "pl.Tensor[[16, 16], pl.FP32, pl.TensorView(stride=[1, 16], layout=pl.TensorLayout.DN)]"))
    assert "TensorLayout.DN" in mod.P.as_python()


def test_view_to_nz_is_an_error(tmp_path):
    with pytest.raises(PyptoError) as e:
        _module(tmp_path, "view_nz", _kernel(
            "pl.Tensor[[16, 16], pl.FP32]",
            "v = pl.tensor.view(x, layout=pl.TensorLayout.NZ)\n            out[:] = v"))
    assert "not a tensor layout" in str(e.value) and "view_nz.py:" in str(e.value)


def test_dn_argument_for_an_nd_parameter_reads_logical_elements(tmp_path):
    """A tensor argument carries its strides: an ND-annotated kernel parameter given a pl.transpose
    view reads the view's elements (the reference's dyn_orch_shape pattern), not x's bytes row-major."""
    src = """
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def kernel(self, x: pl.Tensor[[32, 16], pl.FP32],
                   out: pl.Out[pl.Tensor[[32, 16], pl.FP32]]) -> pl.Tensor[[32, 16], pl.FP32]:
            out = pl.store(pl.load(x, [0, 0], [32, 16]), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 32], pl.FP32],
                 out: pl.Out[pl.Tensor[[32, 16], pl.FP32]]) -> pl.Tensor[[32, 16], pl.FP32]:
            out = self.kernel(pl.transpose(x, 0, 1), out)
            return out
    """
    x = torch.randn(16, 32)
    sim, ref = _run_both(_module(tmp_path, "dn_arg", src).P, [x, torch.zeros(32, 16)], "a2a3sim")
    _same(sim[1], x.T.contiguous())
    _same(ref[1], x.T.contiguous())


def test_view_of_a_window_is_a_run_time_error():
    from pypto.errors import SimulationError
    from pypto.ops.support import layout_view

    x = torch.randn(R, C)
    with pytest.raises(SimulationError, match="packed source"):
        layout_view(x[:, :8], [8, 16], False, True)


def test_kernel_writing_a_reshape_copy_is_a_located_error():
    """pl.reshape of a DN view cannot be a view of its bytes (the logical order is not theirs): it is a
    copy, and a kernel writing it would lose the write silently; the runtime refuses it at the call."""
    from pypto.errors import SimulationError

    with pytest.raises(SimulationError) as e:
        prt.run(K.WriteReshapedDn, torch.randn(8, 64), torch.zeros(R, C), config=RunConfig(platform="a2a3sim"))
    msg = str(e.value)
    assert "kernels_tensor_layouts.py:" in msg and "the reshape is a copy" in msg, msg
