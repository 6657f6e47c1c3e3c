"""Tests of the native cast tables and the LegalizeTileCast path search."""
from __future__ import annotations

import pytest

from pypto.backend.cast_table import NATIVE_CASTS, CastPathError, cast_path

# Expected results documented by the reference compiler.
DOCUMENTED = [
    ("a5", "INT32", "FP16", ["FP32", "FP16"]),
    ("a2a3", "INT32", "FP16", ["FP16"]),
    ("a2a3", "BF16", "FP16", ["FP32", "FP16"]),
    ("a2a3", "FP32", "INT8", ["FP16", "INT8"]),
    ("a2a3", "INT64", "FP16", ["FP32", "FP16"]),
    ("a2a3", "BF16", "INT8", ["FP32", "FP16", "INT8"]),
    ("a5", "INT32", "INT8", ["FP32", "FP16", "INT8"]),
    ("a5", "INT32", "FP4", ["FP32", "BF16", "FP4"]),
    ("a5", "FP16", "UINT16", ["INT32", "UINT16"]),
    ("a5", "INT16", "UINT16", ["UINT32", "UINT16"]),
    ("a5", "UINT32", "INT8", ["INT16", "FP16", "INT8"]),
    ("a5", "INT8", "FP4", ["FP16", "FP32", "BF16", "FP4"]),
]

UNREACHABLE = [
    ("a2a3", "INT8", "FP32"),
    ("a5", "INT8", "FP32"),
    ("a2a3", "INT16", "INT32"),
    ("a5", "FP16", "INT64"),
]


@pytest.mark.parametrize("arch,src,dst,path", DOCUMENTED)
def test_documented_paths(arch, src, dst, path):
    assert cast_path(src, dst, arch) == path


@pytest.mark.parametrize("arch,src,dst", UNREACHABLE)
def test_unreachable(arch, src, dst):
    with pytest.raises(CastPathError) as ei:
        cast_path(src, dst, arch)
    assert str(ei.value) == (
        f"LegalizeTileCast: no native cast path from {src} to {dst} for arch {arch}; "
        f"pto.tcvt does not support this conversion")
    assert isinstance(ei.value, ValueError)


def test_tables():
    assert set(NATIVE_CASTS) == {"a2a3", "a5"}
    a2, a5 = NATIVE_CASTS["a2a3"], NATIVE_CASTS["a5"]
    assert a2["FP32"] == frozenset({"FP16", "BF16", "INT16", "INT32", "INT64"})
    assert a5["FP32"] == frozenset({"FP16", "BF16", "INT16", "INT32", "INT64", "FP8E4M3FN", "FP8E5M2", "HF8"})
    assert a2["FP16"] == frozenset({"FP32", "INT32", "INT16", "INT8", "UINT8", "INT4"})
    assert a5["FP16"] == frozenset({"FP32", "INT32", "INT16", "INT8", "UINT8", "HF8"})
    assert a2["BF16"] == frozenset({"FP32", "INT32"})
    assert a5["BF16"] == frozenset({"FP32", "INT32", "FP16", "FP4"})
    assert a2["INT16"] == frozenset({"FP16", "FP32"})
    assert a5["INT16"] == frozenset({"FP16", "FP32", "UINT8", "UINT32", "INT32"})
    assert a2["INT32"] == frozenset({"FP32", "INT16", "INT64", "FP16"})
    assert a5["INT32"] == frozenset({"FP32", "INT16", "INT64", "UINT16", "UINT8"})
    assert a2["INT64"] == a5["INT64"] == frozenset({"FP32", "INT32"})
    assert a2["INT8"] == frozenset({"FP16"})
    assert a5["INT8"] == frozenset({"FP16", "INT16", "INT32"})
    assert a2["UINT8"] == frozenset({"FP16"})
    assert a5["UINT8"] == frozenset({"FP16", "UINT16"})
    assert a2["INT4"] == frozenset({"FP16"}) and "INT4" not in a5
    assert a5["UINT32"] == frozenset({"UINT8", "UINT16", "INT16"}) and "UINT32" not in a2
    for f8 in ("FP8E4M3FN", "FP8E5M2", "HF8"):
        assert a5[f8] == frozenset({"FP32"}) and f8 not in a2
    assert a5["FP4"] == frozenset({"BF16"}) and "FP4" not in a2


@pytest.mark.parametrize("arch", ["a2a3", "a5"])
def test_identity_and_native(arch):
    for src, dsts in NATIVE_CASTS[arch].items():
        assert cast_path(src, src, arch) == []
        for dst in dsts:
            assert cast_path(src, dst, arch) == [dst]


@pytest.mark.parametrize("arch", ["a2a3", "a5"])
def test_every_found_path_is_native_chain(arch):
    names = sorted(set(NATIVE_CASTS[arch]) | {d for ds in NATIVE_CASTS[arch].values() for d in ds})
    for src in names:
        for dst in names:
            try:
                path = cast_path(src, dst, arch)
            except CastPathError:
                continue
            hops = [src] + path
            assert hops[-1] == dst
            assert len(set(hops)) == len(hops)
            for a, b in zip(hops, hops[1:]):
                assert b in NATIVE_CASTS[arch][a]


def test_errors_and_datatype_arguments():
    with pytest.raises(ValueError, match="unknown arch"):
        cast_path("FP32", "FP16", "a9")
    with pytest.raises(CastPathError):
        cast_path("BOOL", "FP32", "a5")

    class _Named:  # stands in for a DataType (only ``.name`` is used)
        def __init__(self, name):
            self.name = name

    assert cast_path(_Named("INT32"), _Named("FP16"), "a5") == ["FP32", "FP16"]
