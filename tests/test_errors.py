"""User errors render file:line:col, the source line and a caret under the span."""
import re

import pytest
import torch

import kernels as K
from pypto.errors import PlatformError, PyptoError
from pypto.runtime import RunConfig

KERNELS_FILE = K.__file__


def assert_rendered(err: BaseException, *fragments: str, source: str | None = None):
    text = str(err)
    for frag in fragments:
        assert frag in text, text
    assert re.search(re.escape(KERNELS_FILE) + r":\d+:\d+: error:", text), text
    lines = text.splitlines()
    carets = [i for i, line in enumerate(lines) if line.strip() and set(line.strip()) == {"^"}]
    assert carets, text
    i = carets[0]
    src_line, caret_line = lines[i - 1], lines[i]
    if source is not None:
        assert source in src_line, text
        # the caret sits under the span it names
        start = caret_line.index("^")
        assert src_line[start:start + len(caret_line.strip())].startswith(source[:1]) or \
            source in src_line[start:], text
    m = re.search(r":(\d+):(\d+): error:", text)
    line_no = int(m.group(1))
    with open(KERNELS_FILE) as f:
        assert f.read().splitlines()[line_no - 1].rstrip() == src_line[4:].rstrip(), text


def _t(*shape, dtype=torch.float32):
    return torch.zeros(*shape, dtype=dtype)


def test_misplaced_tensor_op_fails_at_call_but_lowers():
    a, b, out = _t(64, 128), _t(64, 128), _t(64, 128)
    lowered = K.misplaced.lower(a, b, out)
    assert lowered.entry is not None
    with pytest.raises(PyptoError) as ei:
        K.misplaced(a, b, out)
    assert_rendered(ei.value, "Misplaced tensor op", "(should be inside InCore block)", source="pl.add(a, b)")
    with pytest.raises(PyptoError) as ei:
        K.misplaced.compile(a, b, out, config=RunConfig(platform="a5sim"))
    assert "Misplaced tensor op" in str(ei.value)


def test_alias_annotation_is_missing_annotation():
    with pytest.raises(PyptoError) as ei:
        K.alias_annot(_t(128, 128), _t(128, 128))
    assert_rendered(ei.value, "Parameter 'a' missing type annotation", source="T128")


@pytest.mark.parametrize("device,sim", [("a2a3", "a2a3sim"), ("a5", "a5sim")])
def test_real_device_platform_is_an_error_in_strict_mode(device, sim, monkeypatch):
    # without a device a real platform runs on its simulator (tests/compat/test_platform_fallback.py);
    # PYPTO_STRICT_PLATFORM=1 refuses it, naming the simulator to use
    monkeypatch.setenv("PYPTO_STRICT_PLATFORM", "1")
    with pytest.raises(PlatformError) as ei:
        RunConfig(platform=device)
    assert f"'{sim}'" in str(ei.value) and "PYPTO_STRICT_PLATFORM" in str(ei.value)
    assert isinstance(ei.value, ValueError)


def test_unknown_platform():
    with pytest.raises(ValueError):
        RunConfig(platform="tpu")


def test_mixing_tensor_and_tile():
    with pytest.raises(PyptoError) as ei:
        K.mix_tensor_tile(_t(64, 128), _t(64, 128))
    assert_rendered(ei.value, "cannot mix Tensor and Tile", source="pl.add(a, t)")


def test_an_op_given_the_wrong_operand_kind_names_the_kinds_it_takes():
    # it used to say "expected Tensor or Tile operands, got (Tensor...)" for pl.store of a tensor
    with pytest.raises(PyptoError) as ei:
        K.store_a_tensor(_t(64, 128), _t(64, 128))
    assert_rendered(ei.value, "pl.store takes (Tile, ...), got (Tensor[[64, 128], FP32])", "pl.load(",
                    source="pl.store(a, [0, 0], out)")


def test_loop_rebinding_to_other_dtype():
    with pytest.raises(PyptoError) as ei:
        K.reassign_dtype(_t(64, 128), _t(64, 128))
    assert_rendered(ei.value, "Cannot reassign", "'t'", "FP16", source="for i in pl.range(2):")


def test_wrong_shape_against_annotated_signature():
    with pytest.raises(PyptoError) as ei:
        K.add(_t(64, 128), _t(64, 128), _t(64, 128))
    assert_rendered(ei.value, "Parameter 'a'", "[128, 128]", "[64, 128]")


def test_wrong_dtype_against_annotated_signature():
    with pytest.raises(PyptoError) as ei:
        K.add(_t(128, 128, dtype=torch.float16), _t(128, 128), _t(128, 128))
    assert "Parameter 'a'" in str(ei.value) and "FP16" in str(ei.value)


def test_unknown_keyword_names_parameters():
    with pytest.raises(PyptoError) as ei:
        K.bad_keyword(_t(64, 128), _t(64, 128))
    assert_rendered(ei.value, "bogus", "lhs", "rhs", source="pl.add(a, a, bogus=1)")
