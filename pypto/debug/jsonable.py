"""``jsonable(obj)``: a report (a dataclass, possibly nested) as plain JSON-ready values — the common
body of the reports' ``to_dict()`` (ComparisonReport, RaceReport, UninitReport, ValidationReport,
the cast-check Certificate; the doctor's and fuzz's reports have their own, hand-picked ones).

Tensors become nested lists, torch dtypes and enums their names, paths strings, tuples and sets
lists; the report's boolean properties named in ``extra`` are added (``passed``, ``clean``).
"""
from __future__ import annotations

import dataclasses
import enum
import math
from pathlib import PurePath

import torch


def jsonable(obj, extra: tuple = ()):
    """Plain JSON-ready data for ``obj`` (see the module doc); ``extra``: properties to add."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {f.name: jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        for name in extra:
            out[name] = jsonable(getattr(obj, name))
        return out
    if isinstance(obj, torch.Tensor):
        return jsonable(obj.tolist())
    if isinstance(obj, torch.dtype):
        return str(obj).replace("torch.", "")
    if isinstance(obj, enum.Enum):
        return obj.name
    if isinstance(obj, PurePath):
        return str(obj)
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)       # JSON has no inf / nan
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    return str(obj)
