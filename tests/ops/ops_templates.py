"""The two shapes of an op test kernel, as templates (CONTRIBUTING.md, "Test kernels from templates"):
``tensor_level`` (``out[:] = EXPR`` on whole tensors) and ``tile_level`` (loads of PARTIAL tiles,
``out = pl.store(EXPR, [0, 0], out)``). Each call builds one kernel and files it under its name in
the calling module (``tensor_level("t_log", "pl.log(a)")`` defines ``t_log`` there), so a kernel
module is a list of one-line cases: kernels_ext.py, kernels_bitwise.py, ...
"""
from __future__ import annotations

import sys

from kernel_templates import HEADER, kernels

_T = '''
@pl.jit
def $name($params):
    $orch
    with pl.at(level=pl.Level.CORE_GROUP):
        $pre
        out[:] = $expr
    return out
'''
_P = '''
@pl.jit
def $name($params):
    with pl.at(level=pl.Level.CORE_GROUP):
        $loads
        $pre
        out = pl.store($expr, [0, 0], out)
    return out
'''

PARTIAL = "[16, 64], valid_shape=[13, 37]"   # the partial tile of the tile-level kernels
ROW_V = "[16, 1], valid_shape=[13, 1]"       # a row_expand operand: one value per (valid) row
COL_V = "[1, 64], valid_shape=[1, 37]"       # a col_expand operand: one value per (valid) column


def params(spec: str, out: str = "pl.Out[pl.Tensor]") -> str:
    """``"a b s:FP32"`` -> ``a: pl.Tensor, b: pl.Tensor, s: pl.Scalar[pl.FP32], out: OUT``."""
    ps = [f"{p.split(':')[0]}: pl.Scalar[pl.{p.split(':')[1]}]" if ":" in p else f"{p}: pl.Tensor"
          for p in spec.split()]
    return ", ".join(ps + [f"out: {out}"])


def tensor_level(name: str, expr: str, spec: str = "a", pre: str = "", orch: str = "", header: str = HEADER):
    """Kernel ``name(SPEC..., out)``: ``out[:] = expr`` in a CORE_GROUP scope; ``pre``: statements in the
    scope before it; ``orch``: statements before the scope (orchestration)."""
    return _file(name, _T, header, params=params(spec), expr=expr, pre=pre, orch=orch)


def tile_level(name: str, expr: str, spec: str = "a", loads: dict | None = None, pre: str = "",
               header: str = HEADER):
    """Kernel ``name(SPEC..., out)``: the ``loads`` (``{tile: "TENSOR SHAPE-ARGS"}``; default: ``tX`` =
    tensor X's PARTIAL tile, for each tensor parameter X), ``pre``, then ``out = pl.store(expr, [0, 0], out)``."""
    if loads is None:
        loads = {f"t{x}": f"{x} {PARTIAL}" for x in spec.split() if ":" not in x}
    text = "\n".join(f"{t} = pl.load({src.split(' ', 1)[0]}, [0, 0], {src.split(' ', 1)[1]})"
                     for t, src in loads.items())
    return _file(name, _P, header, params=params(spec), expr=expr, loads=text, pre=pre)


def _file(name, template, header, **values):
    caller = sys._getframe(2).f_globals   # the kernel module that called tensor_level / tile_level
    k = getattr(kernels(name, template, family=caller["__name__"].rpartition(".")[2], header=header, **values), name)
    caller[name] = k
    return k
