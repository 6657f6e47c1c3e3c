"""Data types of the PyPTO language (``pl.FP32``, ``pl.INT32``, ...) and their torch mapping.

A :class:`DataType` is a small frozen value; the module-level constants are the only instances
users normally touch. ``DataType.torch`` is the torch dtype used to hold values of that type in
global memory, in the simulator's core buffers and in the reference executor.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = [
    "ALL_DTYPES",
    "BF16",
    "BOOL",
    "FP4",
    "FP8E4M3FN",
    "FP8E5M2",
    "FP8E8M0",
    "FP16",
    "FP32",
    "HF4",
    "HF8",
    "INDEX",
    "INT4",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "TASK_ID",
    "UINT4",
    "UINT8",
    "UINT16",
    "UINT32",
    "UINT64",
    "LOW_PRECISION",
    "DataType",
    "dtype_from_name",
    "dtype_from_torch",
]


@dataclass(frozen=True)
class DataType:
    """A scalar element type.

    ``name`` is the DSL spelling (``FP32``), ``bits`` the storage width, ``kind`` one of
    ``bool``/``int``/``uint``/``float``/``index``/``opaque``, ``torch`` the torch dtype holding it
    (``None`` for opaque handles such as ``TASK_ID``).
    """

    name: str
    bits: int
    kind: str
    torch: torch.dtype | None

    def __repr__(self) -> str:
        return f"pl.{self.name}"

    __str__ = __repr__

    def get_bit(self) -> int:
        """Width in bits."""
        return self.bits

    def get_byte(self) -> int:
        """Storage width in bytes (``ceil(bits / 8)``)."""
        return (self.bits + 7) // 8

    @property
    def itemsize(self) -> int:
        """Alias of :meth:`get_byte`, the bytes one element occupies in a buffer."""
        return self.get_byte()

    def is_float(self) -> bool:
        """True for floating-point types."""
        return self.kind == "float"

    def is_int(self) -> bool:
        """True for integer types (signed, unsigned and ``INDEX``)."""
        return self.kind in ("int", "uint", "index")

    def is_signed_int(self) -> bool:
        """True for signed integers, ``INDEX`` included."""
        return self.kind in ("int", "index")

    def is_unsigned_int(self) -> bool:
        """True for unsigned integers."""
        return self.kind == "uint"

    def is_bool(self) -> bool:
        """True for ``BOOL``."""
        return self.kind == "bool"


BOOL = DataType("BOOL", 8, "bool", torch.bool)
INT8 = DataType("INT8", 8, "int", torch.int8)
INT16 = DataType("INT16", 16, "int", torch.int16)
INT32 = DataType("INT32", 32, "int", torch.int32)
INT64 = DataType("INT64", 64, "int", torch.int64)
UINT8 = DataType("UINT8", 8, "uint", torch.uint8)
# torch has uint16/32/64 dtypes with a limited op set; they are storage types here.
UINT16 = DataType("UINT16", 16, "uint", torch.uint16)
UINT32 = DataType("UINT32", 32, "uint", torch.uint32)
UINT64 = DataType("UINT64", 64, "uint", torch.uint64)
FP16 = DataType("FP16", 16, "float", torch.float16)
BF16 = DataType("BF16", 16, "float", torch.bfloat16)
FP32 = DataType("FP32", 32, "float", torch.float32)
# INDEX is the type of loop variables, dims and bare int literals: 64-bit, distinct from INT64.
INDEX = DataType("INDEX", 64, "index", torch.int64)
TASK_ID = DataType("TASK_ID", 64, "opaque", None)
# Low-precision types (issue 15), as the reference defines them (include/pypto/core/dtype.h). Their
# values live in pypto/numerics/formats.py. Storage (``torch``):
# * FP8E4M3FN / FP8E5M2 / FP8E8M0: torch's float8_e4m3fn / float8_e5m2 / float8_e8m0fnu, bit for
#   bit; user tensors of those torch dtypes specialise to them (as in the reference's JIT).
# * FP4 (E2M1): inside the simulator one code per byte, in a float4_e2m1fn_x2 tensor used unpacked
#   (high nibble zero). User tensors take the reference's packed form (float4_e2m1fn_x2, two codes
#   per byte, last dimension halved): @pl.jit specialises them with the last dimension doubled and
#   the simulator unpacks / packs at the call (pypto.numerics.formats.fp4_unpack / fp4_pack).
# * HF8 (HiFloat8): codes carried in a float8_e5m2fnuz tensor (an opaque carrier, never read as
#   e5m2fnuz values); no user tensor maps to it (the reference maps none either).
# * INT4 / UINT4 / HF4: no storage (None). The reference refuses every 4-bit type but FP4 in kernel
#   code on a5 and every 4-bit type on a2a3; here they are IR types and numerics-model formats
#   (INT4 / UINT4) only, and a program that would store one is a compile error.
FP8E4M3FN = DataType("FP8E4M3FN", 8, "float", torch.float8_e4m3fn)
FP8E5M2 = DataType("FP8E5M2", 8, "float", torch.float8_e5m2)
FP8E8M0 = DataType("FP8E8M0", 8, "float", torch.float8_e8m0fnu)
FP4 = DataType("FP4", 4, "float", torch.float4_e2m1fn_x2)
HF8 = DataType("HF8", 8, "float", torch.float8_e5m2fnuz)
HF4 = DataType("HF4", 4, "float", None)
INT4 = DataType("INT4", 4, "int", None)
UINT4 = DataType("UINT4", 4, "uint", None)

ALL_DTYPES: tuple[DataType, ...] = (
    BOOL, INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64, FP16, BF16, FP32, INDEX, TASK_ID,
    FP8E4M3FN, FP8E5M2, FP8E8M0, FP4, HF8, HF4, INT4, UINT4,
)
#: the low-precision types: storage / cast / matmul_mx operands only, no vector arithmetic
LOW_PRECISION: frozenset[str] = frozenset({"FP8E4M3FN", "FP8E5M2", "FP8E8M0", "FP4", "HF8", "HF4", "INT4", "UINT4"})
_BY_NAME = {d.name: d for d in ALL_DTYPES}
# The torch -> DataType map used to specialise on user tensors; INDEX never comes from a tensor.
# FP4 and HF8 are absent: their torch dtypes are internal carriers (see above), not user formats.
_BY_TORCH = {d.torch: d for d in ALL_DTYPES if d.torch is not None and d not in (INDEX, FP4, HF8)}


def dtype_from_name(name: str) -> DataType:
    """Look up a DataType by its DSL name (``"FP32"``); raises ``KeyError`` for unknown names."""
    return _BY_NAME[name]


def dtype_from_torch(dt: torch.dtype) -> DataType:
    """Map a torch dtype to the DataType of a tensor holding it.

    Raises ``TypeError("Unsupported torch dtype ...")`` for dtypes the language has no type for.
    """
    try:
        return _BY_TORCH[dt]
    except KeyError:
        if dt == torch.float4_e2m1fn_x2:
            raise TypeError("torch.float4_e2m1fn_x2 holds packed FP4 (two codes per byte): its DataType is FP4 "
                            "with the last dimension doubled, which only a @pl.jit call's specialisation applies "
                            "(docs/compatibility.md, low-precision types)") from None
        supported = ", ".join(str(t) for t in _BY_TORCH)
        raise TypeError(f"Unsupported torch dtype {dt}; supported: {supported}") from None


def _attach_members() -> None:
    """``DataType.FP32`` etc., as the reference's enum-like ``DataType`` spells them (the constants
    above are the only instances; these are the same objects)."""
    for d in ALL_DTYPES:
        setattr(DataType, d.name, d)


_attach_members()
