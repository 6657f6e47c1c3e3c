"""Language errors (CONTRIBUTING.md, "Errors") render file:line:col, the source line and a caret; directives."""
import re

import kernels_lang as K
import pytest
import torch
from lang_harness import check_all

import pypto.language as pl
from pypto.errors import ParserError, PyptoError

FILE = K.__file__


def rendered(err, *fragments):
    text = str(err)
    for f in fragments:
        assert f in text, text
    m = re.search(re.escape(FILE) + r":(\d+):(\d+): (error|warning):", text)
    assert m, text
    lines = text.splitlines()
    carets = [i for i, l in enumerate(lines) if l.strip() and set(l.strip()) == {"^"}]
    assert carets, text
    with open(FILE) as fh:
        assert fh.read().splitlines()[int(m.group(1)) - 1].rstrip() == lines[carets[0] - 1][4:].rstrip()
    return text


def z(*s):
    return torch.zeros(*s)


def test_missing_annotation():
    with pytest.raises(PyptoError) as ei:
        K.no_annotation(z(64, 64), z(64, 64))
    rendered(ei.value, "Parameter 'a' missing type annotation")


def test_init_values_needs_tuple_target():
    with pytest.raises(PyptoError) as ei:
        K.bad_init_target(z(64, 64), z(64, 64))
    rendered(ei.value, "For loop target must be a tuple when init_values is provided")


def test_unroll_with_init_values():
    with pytest.raises(PyptoError) as ei:
        K.unroll_init(z(64, 64), z(64, 64))
    rendered(ei.value, "pl.unroll() cannot be combined with init_values")


def test_static_assert_fails_with_message():
    with pytest.raises(ParserError) as ei:
        K.static_assert_fails(z(64, 64), z(64, 64))
    rendered(ei.value, "rows must be 32")


def test_out_param_write_dropped_is_diagnosed(capsys):
    """`out = expr` on an Out param: the PTO-W001 OutParamWriteDropped diagnostic (pypto.passes.diagnostics)
    with the caret under the assignment; `out = pl.store(..., out)` is not flagged."""
    from pypto.runtime import RunConfig

    K.out_rebound._cache.clear()
    compiled = K.out_rebound.compile(z(64, 64), z(64, 64), config=RunConfig(platform="a2a3sim"))
    assert "PTO-W001" in {d.code for d in compiled.diagnostics}
    err = capsys.readouterr().err
    assert "OutParamWriteDropped" in err or "[PTO-W001]" in err
    assert "Use 'out[:] = <expr>'" in err and "kernels_lang.py:" in err and "^" in err
    compiled = K.parallel_rows.compile(z(256, 64), z(256, 64), config=RunConfig(platform="a2a3sim"))
    assert "PTO-W001" not in {d.code for d in compiled.diagnostics}


def test_decorator_arguments():
    with pytest.raises(TypeError, match=r"@pl.jit.incore does not accept an auto_scope= argument"):
        pl.jit.incore(auto_scope=True)
    with pytest.raises(TypeError, match=r"@pl.jit.inline does not accept a level= argument"):
        pl.jit.inline(level=pl.Level.AIV)
    with pytest.raises(TypeError, match=r"@pl.jit does not accept a level= argument"):
        pl.jit(level=pl.Level.AIV)
    assert pl.jit.incore(level=pl.Level.AIV)(K.rows.fn).level == pl.Level.AIV


def test_compile_unknown_keyword():
    with pytest.raises(TypeError) as ei:
        K.parallel_rows.compile(skip_ptoas=True)
    assert str(ei.value).startswith("@pl.jit function 'parallel_rows':")
    assert "got an unexpected keyword argument 'skip_ptoas'" in str(ei.value)


def test_signature_mode_with_bare_tensor():
    with pytest.raises(TypeError, match="cannot specialize from the signature"):
        K.bare_sig.compile()


def test_reassign_and_mix_are_rendered():
    import kernels as KK
    from test_errors import assert_rendered

    with pytest.raises(PyptoError) as ei:
        KK.reassign_dtype(z(64, 128), z(64, 128))
    assert_rendered(ei.value, "Cannot reassign", "with a different type")
    with pytest.raises(PyptoError) as ei:
        KK.mix_tensor_tile(z(64, 128), z(64, 128))
    assert_rendered(ei.value, "cannot mix Tensor and Tile")


def test_directives_run_and_dump(capsys):
    from pypto.runtime.simulator import last_dumps

    a = torch.randn(64, 64)
    check_all(K.directives, (a, z(64, 64)), {1: a + 1})
    out = capsys.readouterr().out
    assert "static_print: a is a: Tensor[[64, 64], FP32] (64, 64)" in out
    dumps = last_dumps()
    assert len(dumps) == 1
    torch.testing.assert_close(dumps[0][1], a + 1)
    lowered = K.directives.lower(a, z(64, 64))
    assert "pl.dump_tag(" in lowered.as_python() or "tensor.dump_tag" in lowered.as_python()
    from pypto.ir.equality import assert_structural_equal
    from pypto.language.program import parse

    assert_structural_equal(lowered, parse(lowered.as_python()))


def test_subscript_slice_read():
    a = torch.randn(64, 128)
    check_all(K.slice_read, (a, z(16, 128)), {1: a[16:32] + a[0:16]})


def test_subscript_region_write():
    a = torch.randn(16, 32)
    base = torch.randn(64, 64)
    want = base.clone()
    want[0:16, 32:64] = a + a
    want[16:32, 32:64] = a + a
    check_all(K.region_write, (a, base), {1: want})


def test_dump_tag_inside_scope_is_rejected():
    with pytest.raises(ParserError) as ei:
        K.dump_in_scope(z(64, 64), z(64, 64))
    rendered(ei.value, "pl.dump_tag(t) marks a tensor of the orchestration")


def test_subscript_scalar_read():
    a = torch.randn(64, 128)
    check_all(K.tile_read, (a, z(64, 128)), {1: a + a[0, 1]})
    text = K.tile_read._specialize((a, z(64, 128)), {}).program.as_python()
    assert "tile.read" in text


def test_a_runtime_slice_extent_hint_uses_the_users_numbers():
    @pl.jit
    def blocks(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
        for i in pl.range(2):
            with pl.at(level=pl.Level.CORE_GROUP):
                out[i * 32:(i + 1) * 32, :] = pl.add(a[i * 32:(i + 1) * 32, :], 1.0)
        return out

    with pytest.raises(PyptoError) as ei:
        blocks.lower(z(64, 128), z(64, 128))
    assert "a slice extent must be static" in str(ei.value)
    assert "'i * 32:i * 32 + 32'" in str(ei.value), str(ei.value)

    @pl.jit
    def ragged(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
        for i in pl.range(2):
            with pl.at(level=pl.Level.CORE_GROUP):
                out[i:2 * i + 16, :] = pl.add(a[i:2 * i + 16, :], 1.0)
        return out

    with pytest.raises(PyptoError) as ei:
        ragged.lower(z(64, 128), z(64, 128))
    assert "'i:i + N'" in str(ei.value), str(ei.value)   # no single extent: no number is invented


def test_subscript_errors():
    import pypto.language as pl

    @pl.jit
    def stepped(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[32, 128], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(a[0:64:2, :], a[0:64:2, :])
        return out

    with pytest.raises(PyptoError, match="slice steps are not supported"):
        stepped.lower(z(64, 128), z(32, 128))


def test_missing_scratch_tile_hint_uses_the_tiles_shape_dtype_and_name():
    @pl.jit
    def no_tmp(a: pl.Tensor[[16, 48], pl.FP16], out: pl.Out[pl.Tensor[[16, 1], pl.FP16]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            scores = pl.load(a, [0, 0], [16, 48])
            out = pl.store(pl.row_max(scores), [0, 0], out)
        return out

    with pytest.raises(PyptoError) as ei:
        no_tmp.lower(z(16, 48).half(), z(16, 1).half())
    text = str(ei.value)
    assert "tmp = pl.create_tile([16, 48], dtype=pl.FP16, target_memory=pl.Mem.Vec); pl.row_max(scores, tmp)" in text, text


def test_a_region_past_the_tensor_names_the_axis_and_marks_runtime_offsets():
    @pl.jit
    def too_wide(a: pl.Tensor[[64, 200], pl.FP32], out: pl.Out[pl.Tensor[[64, 200], pl.FP32]]):
        for i in pl.range(2):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(a, [i * 32, 0], [32, 256], valid_shape=[32, 200])
                out = pl.store(pl.fillpad(t, pl.PadValue.zero), [i * 32, 0], out)
        return out

    with pytest.raises(PyptoError) as ei:
        too_wide.lower(z(64, 200), z(64, 200))
    text = str(ei.value)
    assert "leaves the tensor on axis 1: offset 0 + extent 256 > size 200" in text, text
    assert "region offsets [?, 0]" in text and "None" not in text
