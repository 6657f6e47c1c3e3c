"""Model programs for benchmarks/models.py, written for this benchmark (module level in a real file:
the DSL reads source with inspect).

* :func:`paged_attention`: decode attention over a paged BF16 KV cache, one query tile of 16 heads
  per request, online softmax over the request's pages (the page table picks each page). Five
  kernels: ``pa_init`` (running max -1e30, sum 0, output 0), then per page ``pa_qk`` (cube: S = Q K^T),
  ``pa_softmax`` (vector: scale, row max, exp, BF16 rounding of P, row sum), ``pa_pv`` (cube: P V),
  ``pa_update`` (vector: the online-softmax rescale, the same for every page since the initial
  state is neutral: exp(-1e30 - m) is exactly 0), and ``pa_finish`` (O / l).
* The flash-attention prefill is the same pipeline over a contiguous K / V (no page table) with a
  64-row query tile: :func:`paged_attention` with ``paged=False``.
* :func:`decode_layer`: a Qwen3-style decode layer in BF16 (RMSNorm, Q/K/V projections, paged
  attention over the cache, O projection + residual, RMSNorm, SwiGLU MLP + residual).

Each builder returns a ``@pl.program`` class for the given sizes.
"""
from __future__ import annotations

import pypto.language as pl

NEG = -1.0e30  # the running max before the first page: exp(NEG - m) == 0 exactly for any real m


def attention_kernels(q_rows: int, block: int, dim: int):
    """The five InCore kernels of one attention step for ``q_rows`` query rows, ``block`` keys per
    page and head dimension ``dim``."""
    R, B, D = q_rows, block, dim

    @pl.function(type=pl.FunctionType.InCore)
    def pa_init(m_out: pl.Out[pl.Tensor[[1, R], pl.FP32]], l_out: pl.Out[pl.Tensor[[1, R], pl.FP32]],
                o_out: pl.Out[pl.Tensor[[R, D], pl.FP32]]
                ) -> tuple[pl.Tensor[[1, R], pl.FP32], pl.Tensor[[1, R], pl.FP32], pl.Tensor[[R, D], pl.FP32]]:
        m0 = pl.tile.full([1, R], dtype=pl.FP32, value=NEG)
        l0 = pl.tile.full([1, R], dtype=pl.FP32, value=0.0)
        o0 = pl.tile.full([R, D], dtype=pl.FP32, value=0.0)
        m_out = pl.store(m0, [0, 0], m_out)
        l_out = pl.store(l0, [0, 0], l_out)
        o_out = pl.store(o0, [0, 0], o_out)
        return m_out, l_out, o_out

    @pl.function(type=pl.FunctionType.InCore)
    def pa_qk(q: pl.Tensor[[R, D], pl.BF16], k: pl.Tensor[[B, D], pl.BF16],
              s_out: pl.Out[pl.Tensor[[R, B], pl.FP32]]) -> pl.Tensor[[R, B], pl.FP32]:
        q_mat = pl.load(q, [0, 0], [R, D], target_memory=pl.MemorySpace.Mat)
        k_mat = pl.load(k, [0, 0], [B, D], target_memory=pl.MemorySpace.Mat)
        s = pl.matmul(pl.move(q_mat, target_memory=pl.MemorySpace.Left),
                      pl.move(pl.tile.transpose_view(k_mat), target_memory=pl.MemorySpace.Right))
        s_out = pl.store(s, [0, 0], s_out)
        return s_out

    @pl.function(type=pl.FunctionType.InCore)
    def pa_softmax(s: pl.Tensor[[R, B], pl.FP32], scale: pl.Scalar[pl.FP32],
                   p_out: pl.Out[pl.Tensor[[R, B], pl.BF16]], m_out: pl.Out[pl.Tensor[[R, 1], pl.FP32]],
                   l_out: pl.Out[pl.Tensor[[R, 1], pl.FP32]]
                   ) -> tuple[pl.Tensor[[R, B], pl.BF16], pl.Tensor[[R, 1], pl.FP32], pl.Tensor[[R, 1], pl.FP32]]:
        x = pl.mul(pl.load(s, [0, 0], [R, B], target_memory=pl.MemorySpace.Vec), scale)
        scratch = pl.create_tile([R, B], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)
        m = pl.row_max(x, scratch)
        p16 = pl.cast(pl.exp(pl.row_expand_sub(x, m)), target_type=pl.BF16)
        l = pl.row_sum(pl.cast(p16, target_type=pl.FP32), scratch)   # the sum of what P V multiplies
        p_out = pl.store(p16, [0, 0], p_out)
        m_out = pl.store(m, [0, 0], m_out)
        l_out = pl.store(l, [0, 0], l_out)
        return p_out, m_out, l_out

    @pl.function(type=pl.FunctionType.InCore)
    def pa_pv(p: pl.Tensor[[R, B], pl.BF16], v: pl.Tensor[[B, D], pl.BF16],
              o_out: pl.Out[pl.Tensor[[R, D], pl.FP32]]) -> pl.Tensor[[R, D], pl.FP32]:
        p_mat = pl.load(p, [0, 0], [R, B], target_memory=pl.MemorySpace.Mat)
        v_mat = pl.load(v, [0, 0], [B, D], target_memory=pl.MemorySpace.Mat)
        o = pl.matmul(pl.move(p_mat, target_memory=pl.MemorySpace.Left),
                      pl.move(v_mat, target_memory=pl.MemorySpace.Right))
        o_out = pl.store(o, [0, 0], o_out)
        return o_out

    @pl.function(type=pl.FunctionType.InCore)
    def pa_update(m_blk: pl.Tensor[[R, 1], pl.FP32], l_blk: pl.Tensor[[R, 1], pl.FP32],
                  o_blk: pl.Tensor[[R, D], pl.FP32], m_run: pl.InOut[pl.Tensor[[1, R], pl.FP32]],
                  l_run: pl.InOut[pl.Tensor[[1, R], pl.FP32]], o_run: pl.InOut[pl.Tensor[[R, D], pl.FP32]]
                  ) -> tuple[pl.Tensor[[1, R], pl.FP32], pl.Tensor[[1, R], pl.FP32], pl.Tensor[[R, D], pl.FP32]]:
        # the [R, 1] column statistics are handled as [1, R] rows (the vector unit's row layout)
        mb = pl.reshape(pl.load(m_blk, [0, 0], [R, 1], target_memory=pl.MemorySpace.Vec), [1, R])
        lb = pl.reshape(pl.load(l_blk, [0, 0], [R, 1], target_memory=pl.MemorySpace.Vec), [1, R])
        mr = pl.load(m_run, [0, 0], [1, R], target_memory=pl.MemorySpace.Vec)
        lr = pl.load(l_run, [0, 0], [1, R], target_memory=pl.MemorySpace.Vec)
        m_new = pl.maximum(mr, mb)
        alpha = pl.exp(pl.sub(mr, m_new))
        beta = pl.exp(pl.sub(mb, m_new))
        l_new = pl.add(pl.mul(alpha, lr), pl.mul(beta, lb))
        ob = pl.load(o_blk, [0, 0], [R, D], target_memory=pl.MemorySpace.Vec)
        orun = pl.load(o_run, [0, 0], [R, D], target_memory=pl.MemorySpace.Vec)
        o_new = pl.add(pl.row_expand_mul(orun, pl.reshape(alpha, [R, 1])),
                       pl.row_expand_mul(ob, pl.reshape(beta, [R, 1])))
        m_run = pl.store(m_new, [0, 0], m_run)
        l_run = pl.store(l_new, [0, 0], l_run)
        o_run = pl.store(o_new, [0, 0], o_run)
        return m_run, l_run, o_run

    @pl.function(type=pl.FunctionType.InCore)
    def pa_finish(l_run: pl.Tensor[[1, R], pl.FP32], o_run: pl.Tensor[[R, D], pl.FP32],
                  out: pl.Out[pl.Tensor[[R, D], pl.FP32]]) -> pl.Tensor[[R, D], pl.FP32]:
        lr = pl.reshape(pl.load(l_run, [0, 0], [1, R], target_memory=pl.MemorySpace.Vec), [R, 1])
        o = pl.row_expand_div(pl.load(o_run, [0, 0], [R, D], target_memory=pl.MemorySpace.Vec), lr)
        out = pl.store(o, [0, 0], out)
        return out

    return pa_init, pa_qk, pa_softmax, pa_pv, pa_update, pa_finish


def paged_attention(batch: int, heads: int, dim: int, block: int, max_blocks: int, q_rows: int = 16):
    """Decode attention: ``query [batch * heads, dim]`` BF16, ``key / value [pages * block, dim]``
    BF16 (``pages = batch * max_blocks``), ``table [batch * max_blocks]`` INT32 (page of each
    request's n-th block), ``lens [batch]`` INT32 (context length, a multiple of ``block``),
    ``out [batch * heads, dim]`` FP32; ``scale`` a scalar."""
    pa_init, pa_qk, pa_softmax, pa_pv, pa_update, pa_finish = attention_kernels(q_rows, block, dim)
    QR, KR, R, B, D = batch * heads, batch * max_blocks * block, q_rows, block, dim
    groups = heads // q_rows

    @pl.program
    class PagedAttention:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, query: pl.Tensor[[QR, D], pl.BF16], key: pl.Tensor[[KR, D], pl.BF16],
                 value: pl.Tensor[[KR, D], pl.BF16], table: pl.Tensor[[batch * max_blocks], pl.INT32],
                 lens: pl.Tensor[[batch], pl.INT32], scale: pl.Scalar[pl.FP32],
                 out: pl.Out[pl.Tensor[[QR, D], pl.FP32]]) -> pl.Tensor[[QR, D], pl.FP32]:
            for b in pl.range(batch):
                pages = pl.tensor.read(lens, [b]) // B
                for g in pl.range(groups):
                    row = b * heads + g * R
                    m_run = pl.create_tensor([1, R], dtype=pl.FP32)
                    l_run = pl.create_tensor([1, R], dtype=pl.FP32)
                    o_run = pl.create_tensor([R, D], dtype=pl.FP32)
                    m_run, l_run, o_run = pa_init(m_run, l_run, o_run)
                    q = pl.slice(query, [R, D], [row, 0])
                    for j in pl.range(pages):
                        page = pl.tensor.read(table, [b * max_blocks + j])
                        k = pl.slice(key, [B, D], [page * B, 0])
                        v = pl.slice(value, [B, D], [page * B, 0])
                        s = pa_qk(q, k, pl.create_tensor([R, B], dtype=pl.FP32))
                        p, m_blk, l_blk = pa_softmax(s, scale, pl.create_tensor([R, B], dtype=pl.BF16),
                                                     pl.create_tensor([R, 1], dtype=pl.FP32),
                                                     pl.create_tensor([R, 1], dtype=pl.FP32))
                        o_blk = pa_pv(p, v, pl.create_tensor([R, D], dtype=pl.FP32))
                        m_run, l_run, o_run = pa_update(m_blk, l_blk, o_blk, m_run, l_run, o_run)
                    dst = pl.slice(out, [R, D], [row, 0])
                    pa_finish(l_run, o_run, dst)
            return out

    return PagedAttention


def torch_paged_attention(query, key, value, table, lens, scale, out, *, batch, heads, dim, block, max_blocks,
                          q_rows=16):
    """The same math in torch eager, batched over requests and heads: per page step the same
    operations in the same dtypes as the kernels (FP32 products of BF16 operands, BF16-rounded P,
    the online rescale from the same neutral start). Assumes every request has the same length."""
    import torch

    q = query.float().view(batch, heads, dim)
    kc = key.view(-1, block, dim)
    vc = value.view(-1, block, dim)
    tab = table.view(batch, max_blocks).long()
    m = torch.full((batch, heads, 1), NEG)
    l = torch.zeros(batch, heads, 1)
    o = torch.zeros(batch, heads, dim)
    for j in range(int(lens[0]) // block):
        pages = tab[:, j]
        k = kc.index_select(0, pages).float()
        v = vc.index_select(0, pages).float()
        s = torch.bmm(q, k.transpose(1, 2)) * scale
        mb = s.amax(dim=-1, keepdim=True)
        p = torch.exp(s - mb).to(torch.bfloat16).float()
        lb = p.sum(dim=-1, keepdim=True)
        ob = torch.bmm(p, v)
        m_new = torch.maximum(m, mb)
        alpha, beta = torch.exp(m - m_new), torch.exp(mb - m_new)
        l = alpha * l + beta * lb
        o = alpha * o + beta * ob
        m = m_new
    out.copy_((o / l).view(batch * heads, dim))
    return out
