"""Torch helpers of the matmul variants (``matmul_bias``, ``gemv*``, ``batch_matmul*``) that both
executors call from generated code (re-exported by :mod:`pypto.ops.support` as ``_pto.<name>``).

Every variant is built on :func:`pypto.ops.support.matmul_ext`, the one cube product (FP32 / INT32
copies of the operands, one BLAS call, ``acc + product`` when accumulating), so that a variant
gives the same bits as the plain ``matmul`` / ``matmul_acc`` chain it stands for:

* ``matmul_bias(a, b, bias)`` is ``matmul_acc(bias broadcast over the rows, a, b)``: the bias is the
  accumulator's initial value (as the cube loads it into L0C), one FP32 add per element;
* ``gemv(a[1, K], b[K, N])`` is the ``[1, N]`` product in row 0 of a ``[16, N]`` result (the cube
  writes a whole 16-row fractal; rows 1..15 are zero, or the accumulator's rows for ``gemv_acc``);
* ``batch_matmul`` is one ``matmul`` per batch (batch dims broadcast), never a batched BLAS call,
  which may block the sums differently from the 2-D product.
"""
from __future__ import annotations

import math

import torch

GEMV_ROWS = 16  # the cube's fractal height: a GEMV result occupies one 16-row block of Acc


def _mm():
    from pypto.ops.support import matmul

    return matmul


def matmul_bias(lhs: torch.Tensor, rhs: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``bias + lhs @ rhs`` (``bias`` ``[1, N]``, the accumulator dtype, added once per element)."""
    return _mm()(lhs, rhs, bias[:1].expand(lhs.shape[0], rhs.shape[1]))


def matmul_bias_into(dst: torch.Tensor, lhs: torch.Tensor, rhs: torch.Tensor, bias: torch.Tensor) -> None:
    """Simulator ``tile.matmul_bias`` into core memory (the bits of :func:`matmul_bias`)."""
    out = _mm()(lhs, rhs)
    torch.add(bias[:1].expand_as(out), out, out=dst)


def gemv(lhs: torch.Tensor, rhs: torch.Tensor, acc: torch.Tensor | None = None,
         bias: torch.Tensor | None = None) -> torch.Tensor:
    """``tile.gemv`` / ``gemv_acc`` / ``gemv_bias``: a ``[16, N]`` tile whose row 0 is
    ``[acc[0] +] [bias +] lhs[0] @ rhs``; rows 1..15 are zero (``acc``'s rows for ``gemv_acc``)."""
    out = torch.zeros(GEMV_ROWS, rhs.shape[1], dtype=torch.int32 if not lhs.dtype.is_floating_point
                      else torch.float32) if acc is None else acc.clone()
    gemv_into(out, lhs, rhs, acc, bias)
    return out


def gemv_into(dst: torch.Tensor, lhs: torch.Tensor, rhs: torch.Tensor, acc: torch.Tensor | None = None,
              bias: torch.Tensor | None = None) -> None:
    """Simulator form of :func:`gemv` (``dst`` may be ``acc``'s buffer)."""
    row = _mm()(lhs[:1], rhs)
    if acc is not None:
        row0 = acc[:1] + row  # one FP32 (INT32) add, as matmul_acc's
        if dst.data_ptr() != acc.data_ptr():
            dst.copy_(acc)
        dst[:1].copy_(row0)
        return
    dst.zero_()
    if bias is None:
        dst[:1].copy_(row)
    else:
        torch.add(bias[:1], row, out=dst[:1])


def _batch_index(lb, rb):
    """Per output batch (row-major over the broadcast batch shape): the lhs and rhs batch index."""
    ob = torch.broadcast_shapes(tuple(lb), tuple(rb))
    li = torch.arange(math.prod(lb)).reshape(tuple(lb)).broadcast_to(ob).reshape(-1).tolist()
    ri = torch.arange(math.prod(rb)).reshape(tuple(rb)).broadcast_to(ob).reshape(-1).tolist()
    return ob, li, ri


def batch_matmul(lhs: torch.Tensor, rhs: torch.Tensor, lhs_batch=None, rhs_batch=None, a_trans=False,
                 b_trans=False, acc: torch.Tensor | None = None) -> torch.Tensor:
    """``tile.batch_matmul[_acc]``: per broadcast batch, ``[acc_b +] lhs_b @ rhs_b`` (an operand
    stored transposed in its last two axes when ``a_trans`` / ``b_trans``).

    Operands are ``[*batch, rows, cols]``, or (after FlattenTileNdTo2D) 2-D ``[prod(batch) * rows,
    cols]`` with ``lhs_batch`` / ``rhs_batch`` naming the batch shapes; the result has the same form:
    ``[*broadcast batch, M, N]`` or ``[prod(broadcast batch) * M, N]``."""
    lb = tuple(lhs.shape[:-2]) if lhs_batch is None else tuple(lhs_batch)
    rb = tuple(rhs.shape[:-2]) if rhs_batch is None else tuple(rhs_batch)
    L = lhs.reshape(math.prod(lb), -1, lhs.shape[-1])
    R = rhs.reshape(math.prod(rb), -1, rhs.shape[-1])
    ob, li, ri = _batch_index(lb, rb)
    mm = _mm()
    flat = lhs_batch is not None
    A = None if acc is None else acc.reshape(len(li), -1, acc.shape[-1])
    outs = []
    for b, (i, j) in enumerate(zip(li, ri)):
        x = L[i].t() if a_trans else L[i]
        y = R[j].t() if b_trans else R[j]
        outs.append(mm(x, y, None if A is None else A[b]))
    out = torch.stack(outs)
    m, n = out.shape[-2:]
    return out.reshape(-1, n) if flat else out.reshape(*ob, m, n)


def batch_matmul_into(dst: torch.Tensor, lhs: torch.Tensor, rhs: torch.Tensor, lhs_batch=None, rhs_batch=None,
                      a_trans=False, b_trans=False, acc: torch.Tensor | None = None) -> None:
    """Simulator form of :func:`batch_matmul` (``dst`` may be ``acc``'s buffer: each batch's
    accumulator is read before that batch is written)."""
    dst.copy_(batch_matmul(lhs, rhs, lhs_batch, rhs_batch, a_trans, b_trans, acc).reshape(dst.shape))


def gang(fn, dst: torch.Tensor, *tiles, **kw) -> None:
    """A lockstep gang (:mod:`pypto.codegen.gang`: every tile view has a leading task axis): ``fn``
    task by task, the very call each task makes alone (``None`` operands stay ``None``)."""
    for k in range(dst.shape[0]):
        fn(dst[k], *(None if t is None else t[k] for t in tiles), **kw)
