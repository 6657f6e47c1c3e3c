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

import dataclasses

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


# ---------------------------------------------------------------------------------------------------
# Qwen3-style decode layer (BF16 weights and activations, FP32 accumulation and vector math)
# ---------------------------------------------------------------------------------------------------

KC = 256  # K chunk of a projection: a [256, 128] BF16 weight chunk is the 64 KB Right buffer
NC = 128  # output columns per projection task


def layer_kernels(rows: int, hidden: int):
    """The two RMSNorm kernels of :func:`decode_layer` for ``rows`` tokens (one decode token per
    request) of model width ``hidden``: the input norm, and the residual add + post-attention norm."""
    T, H = rows, hidden
    inv_h = 1.0 / hidden

    @pl.function(type=pl.FunctionType.InCore)
    def rms_in(x: pl.Tensor[[T, H], pl.BF16], w: pl.Tensor[[1, H], pl.BF16], eps: pl.Scalar[pl.FP32],
               out: pl.Out[pl.Tensor[[T, H], pl.BF16]]) -> pl.Tensor[[T, H], pl.BF16]:
        xf = pl.cast(pl.load(x, [0, 0], [T, H], target_memory=pl.MemorySpace.Vec), target_type=pl.FP32)
        scratch = pl.create_tile([T, H], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)
        ss = pl.row_sum(pl.mul(xf, xf), scratch)
        r = pl.rsqrt(pl.add(pl.mul(ss, inv_h), eps))
        wf = pl.cast(pl.load(w, [0, 0], [1, H], target_memory=pl.MemorySpace.Vec), target_type=pl.FP32)
        y = pl.col_expand_mul(pl.row_expand_mul(xf, r), wf)
        out = pl.store(pl.cast(y, target_type=pl.BF16), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.InCore)
    def residual_rms(x: pl.Tensor[[T, H], pl.BF16], a: pl.Tensor[[T, H], pl.FP32],
                     w: pl.Tensor[[1, H], pl.BF16], eps: pl.Scalar[pl.FP32],
                     h_out: pl.Out[pl.Tensor[[T, H], pl.FP32]], n_out: pl.Out[pl.Tensor[[T, H], pl.BF16]]
                     ) -> tuple[pl.Tensor[[T, H], pl.FP32], pl.Tensor[[T, H], pl.BF16]]:
        # h = x + attention projection (the residual stream, kept in FP32), then RMSNorm(h) in BF16
        h = pl.add(pl.cast(pl.load(x, [0, 0], [T, H], target_memory=pl.MemorySpace.Vec), target_type=pl.FP32),
                   pl.load(a, [0, 0], [T, H], target_memory=pl.MemorySpace.Vec))
        scratch = pl.create_tile([T, H], dtype=pl.FP32, target_memory=pl.MemorySpace.Vec)
        ss = pl.row_sum(pl.mul(h, h), scratch)
        r = pl.rsqrt(pl.add(pl.mul(ss, inv_h), eps))
        wf = pl.cast(pl.load(w, [0, 0], [1, H], target_memory=pl.MemorySpace.Vec), target_type=pl.FP32)
        y = pl.col_expand_mul(pl.row_expand_mul(h, r), wf)
        h_out = pl.store(h, [0, 0], h_out)
        n_out = pl.store(pl.cast(y, target_type=pl.BF16), [0, 0], n_out)
        return h_out, n_out

    return rms_in, residual_rms


def proj_kernel(tokens: int, k: int):
    """Cube kernel: ``[T, k] BF16 @ [k, 128] BF16 -> [T, 128] FP32``, K in chunks of 256 accumulated
    in the Acc buffer (the first chunk by ``matmul``, the rest by ``matmul_acc``)."""
    T, K = tokens, k
    steps = k // KC

    @pl.function(type=pl.FunctionType.InCore)
    def proj(x: pl.Tensor[[T, K], pl.BF16], w: pl.Tensor[[K, NC], pl.BF16],
             out: pl.Out[pl.Tensor[[T, NC], pl.FP32]]) -> pl.Tensor[[T, NC], pl.FP32]:
        x0 = pl.load(x, [0, 0], [T, KC], target_memory=pl.MemorySpace.Mat)
        w0 = pl.load(w, [0, 0], [KC, NC], target_memory=pl.MemorySpace.Mat)
        acc = pl.matmul(pl.move(x0, target_memory=pl.MemorySpace.Left),
                        pl.move(w0, target_memory=pl.MemorySpace.Right))
        for c in pl.range(1, steps):
            xc = pl.load(x, [0, c * KC], [T, KC], target_memory=pl.MemorySpace.Mat)
            wc = pl.load(w, [c * KC, 0], [KC, NC], target_memory=pl.MemorySpace.Mat)
            acc = pl.matmul_acc(acc, pl.move(xc, target_memory=pl.MemorySpace.Left),
                                pl.move(wc, target_memory=pl.MemorySpace.Right))
        out = pl.store(acc, [0, 0], out)
        return out

    # one program holds projections over two K (hidden, intermediate): the kernels need distinct names
    return dataclasses.replace(proj, name=f"proj_k{k}")


def rope_kernels(tokens: int, heads: int, dim: int):
    """RoPE (rotate-half form, Qwen3 / Llama) of all query heads, of one key head row, and the BF16
    cast of one value row. ``cos`` / ``sin`` are ``[rows, dim / 2]`` FP32 (the token's position)."""
    T, NH, D, D2 = tokens, heads, dim, dim // 2

    @pl.function(type=pl.FunctionType.InCore)
    def rope_q(q: pl.Tensor[[T, NH * D], pl.FP32], cos: pl.Tensor[[T, D2], pl.FP32],
               sin: pl.Tensor[[T, D2], pl.FP32], out: pl.Out[pl.Tensor[[T, NH * D], pl.BF16]]
               ) -> pl.Tensor[[T, NH * D], pl.BF16]:
        c = pl.load(cos, [0, 0], [T, D2], target_memory=pl.MemorySpace.Vec)
        s = pl.load(sin, [0, 0], [T, D2], target_memory=pl.MemorySpace.Vec)
        for h in pl.range(NH):
            a = pl.load(q, [0, h * D], [T, D2], target_memory=pl.MemorySpace.Vec)
            b = pl.load(q, [0, h * D + D2], [T, D2], target_memory=pl.MemorySpace.Vec)
            lo = pl.sub(pl.mul(a, c), pl.mul(b, s))
            hi = pl.add(pl.mul(b, c), pl.mul(a, s))
            out = pl.store(pl.cast(lo, target_type=pl.BF16), [0, h * D], out)
            out = pl.store(pl.cast(hi, target_type=pl.BF16), [0, h * D + D2], out)
        return out

    @pl.function(type=pl.FunctionType.InCore)
    def rope_k(k: pl.Tensor[[1, D], pl.FP32], cos: pl.Tensor[[1, D2], pl.FP32], sin: pl.Tensor[[1, D2], pl.FP32],
               out: pl.Out[pl.Tensor[[1, D], pl.BF16]]) -> pl.Tensor[[1, D], pl.BF16]:
        c = pl.load(cos, [0, 0], [1, D2], target_memory=pl.MemorySpace.Vec)
        s = pl.load(sin, [0, 0], [1, D2], target_memory=pl.MemorySpace.Vec)
        a = pl.load(k, [0, 0], [1, D2], target_memory=pl.MemorySpace.Vec)
        b = pl.load(k, [0, D2], [1, D2], target_memory=pl.MemorySpace.Vec)
        out = pl.store(pl.cast(pl.sub(pl.mul(a, c), pl.mul(b, s)), target_type=pl.BF16), [0, 0], out)
        out = pl.store(pl.cast(pl.add(pl.mul(b, c), pl.mul(a, s)), target_type=pl.BF16), [0, D2], out)
        return out

    @pl.function(type=pl.FunctionType.InCore)
    def cast_v(v: pl.Tensor[[1, D], pl.FP32], out: pl.Out[pl.Tensor[[1, D], pl.BF16]]) -> pl.Tensor[[1, D], pl.BF16]:
        out = pl.store(pl.cast(pl.load(v, [0, 0], [1, D], target_memory=pl.MemorySpace.Vec), target_type=pl.BF16),
                       [0, 0], out)
        return out

    return rope_q, rope_k, cast_v


def mlp_kernels(tokens: int, rows: int, hidden: int, chunk: int):
    """SwiGLU of a ``[tokens, chunk]`` block (``silu(g) * u`` in FP32, BF16 result) and the final
    residual add of ``[rows, hidden]`` FP32 rows."""
    T, RB, H, C = tokens, rows, hidden, chunk

    @pl.function(type=pl.FunctionType.InCore)
    def swiglu(g: pl.Tensor[[T, C], pl.FP32], u: pl.Tensor[[T, C], pl.FP32],
               out: pl.Out[pl.Tensor[[T, C], pl.BF16]]) -> pl.Tensor[[T, C], pl.BF16]:
        gt = pl.load(g, [0, 0], [T, C], target_memory=pl.MemorySpace.Vec)
        ut = pl.load(u, [0, 0], [T, C], target_memory=pl.MemorySpace.Vec)
        silu = pl.div(gt, pl.add(pl.exp(pl.neg(gt)), 1.0))   # g * sigmoid(g) = g / (1 + exp(-g))
        out = pl.store(pl.cast(pl.mul(silu, ut), target_type=pl.BF16), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.InCore)
    def residual_out(h: pl.Tensor[[RB, H], pl.FP32], d: pl.Tensor[[RB, H], pl.FP32],
                     out: pl.Out[pl.Tensor[[RB, H], pl.FP32]]) -> pl.Tensor[[RB, H], pl.FP32]:
        out = pl.store(pl.add(pl.load(h, [0, 0], [RB, H], target_memory=pl.MemorySpace.Vec),
                              pl.load(d, [0, 0], [RB, H], target_memory=pl.MemorySpace.Vec)), [0, 0], out)
        return out

    return swiglu, residual_out


def finish_bf16(q_rows: int, dim: int):
    """The attention's last step with a BF16 result (the O projection's operand): ``O / l``."""
    R, D = q_rows, dim

    @pl.function(type=pl.FunctionType.InCore)
    def pa_finish16(l_run: pl.Tensor[[1, R], pl.FP32], o_run: pl.Tensor[[R, D], pl.FP32],
                    out: pl.Out[pl.Tensor[[R, D], pl.BF16]]) -> pl.Tensor[[R, D], pl.BF16]:
        lr = pl.reshape(pl.load(l_run, [0, 0], [1, R], target_memory=pl.MemorySpace.Vec), [R, 1])
        o = pl.row_expand_div(pl.load(o_run, [0, 0], [R, D], target_memory=pl.MemorySpace.Vec), lr)
        out = pl.store(pl.cast(o, target_type=pl.BF16), [0, 0], out)
        return out

    return pa_finish16


def decode_layer(tokens: int, heads: int, kv_heads: int, dim: int, inter: int, block: int, max_blocks: int,
                 swiglu_chunk: int = 512):
    """One Qwen3-style decode step of ``tokens`` requests (one new token each), grouped-query attention
    with ``heads`` query heads over ``kv_heads`` key / value heads of ``dim``; hidden = heads * dim.

    ``x [T, H]`` BF16 hidden states; ``w_in / w_post [1, H]`` BF16 RMSNorm weights; ``wq [H, NH*D]``,
    ``wk / wv [H, NKV*D]``, ``wo [NH*D, H]``, ``wg / wu [H, I]``, ``wd [I, H]`` BF16 (the ``x @ W``
    layout); ``cos / sin [T, D/2]`` FP32 at each token's position; ``k_cache / v_cache`` BF16, kv head
    ``g``'s page ``p`` at rows ``(g * T * max_blocks + p) * block`` (InOut: the new token's K / V are
    written in place); ``table [T * max_blocks]`` INT32 page of each request's n-th block;
    ``lens [T]`` INT32 context length including the new token (a multiple of ``block``: the new
    token is the last row of its last page); ``out [T, H]`` FP32 (the residual stream)."""
    T, NH, NKV, D, I, B = tokens, heads, kv_heads, dim, inter, block
    H, KVH, D2, QPK, C = heads * dim, kv_heads * dim, dim // 2, heads // kv_heads, swiglu_chunk
    pool = tokens * max_blocks
    RB = 8   # rows per RMSNorm / residual task: [8, H] FP32 tiles (three of them at H = 2048 fill Vec)
    assert T % RB == 0, f"tokens ({T}) must be a multiple of {RB}"
    rms_in, residual_rms = layer_kernels(RB, H)
    proj_h = proj_kernel(T, H)
    proj_i = proj_h if I == H else proj_kernel(T, I)   # one kernel per K (kernels are named by it)
    rope_q, rope_k, cast_v = rope_kernels(T, NH, D)
    swiglu, residual_out = mlp_kernels(T, RB, H, C)
    pa_init, pa_qk, pa_softmax, pa_pv, pa_update, _ = attention_kernels(QPK, B, D)
    pa_finish16 = finish_bf16(QPK, D)

    @pl.program
    class Qwen3DecodeLayer:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[T, H], pl.BF16], w_in: pl.Tensor[[1, H], pl.BF16],
                 wq: pl.Tensor[[H, H], pl.BF16], wk: pl.Tensor[[H, KVH], pl.BF16],
                 wv: pl.Tensor[[H, KVH], pl.BF16], cos: pl.Tensor[[T, D2], pl.FP32],
                 sin: pl.Tensor[[T, D2], pl.FP32], k_cache: pl.InOut[pl.Tensor[[NKV * pool * B, D], pl.BF16]],
                 v_cache: pl.InOut[pl.Tensor[[NKV * pool * B, D], pl.BF16]], table: pl.Tensor[[pool], pl.INT32],
                 lens: pl.Tensor[[T], pl.INT32], wo: pl.Tensor[[H, H], pl.BF16], w_post: pl.Tensor[[1, H], pl.BF16],
                 wg: pl.Tensor[[H, I], pl.BF16], wu: pl.Tensor[[H, I], pl.BF16], wd: pl.Tensor[[I, H], pl.BF16],
                 eps: pl.Scalar[pl.FP32], scale: pl.Scalar[pl.FP32],
                 out: pl.Out[pl.Tensor[[T, H], pl.FP32]]) -> pl.Tensor[[T, H], pl.FP32]:
            # input RMSNorm and the Q / K / V projections
            xn = pl.create_tensor([T, H], dtype=pl.BF16)
            for r in pl.range(T // RB):
                rms_in(pl.slice(x, [RB, H], [r * RB, 0]), w_in, eps, pl.slice(xn, [RB, H], [r * RB, 0]))
            q = pl.create_tensor([T, H], dtype=pl.FP32)
            k = pl.create_tensor([T, KVH], dtype=pl.FP32)
            v = pl.create_tensor([T, KVH], dtype=pl.FP32)
            for n in pl.range(H // NC):
                proj_h(xn, pl.slice(wq, [H, NC], [0, n * NC]), pl.slice(q, [T, NC], [0, n * NC]))
            for n in pl.range(KVH // NC):
                proj_h(xn, pl.slice(wk, [H, NC], [0, n * NC]), pl.slice(k, [T, NC], [0, n * NC]))
                proj_h(xn, pl.slice(wv, [H, NC], [0, n * NC]), pl.slice(v, [T, NC], [0, n * NC]))
            # RoPE; the new token's K / V go to the last row of each request's last page
            qr = rope_q(q, cos, sin, pl.create_tensor([T, H], dtype=pl.BF16))
            for b in pl.range(T):
                pos = pl.tensor.read(lens, [b]) - 1
                blk = pos // B
                page = pl.tensor.read(table, [b * max_blocks + blk])
                for g in pl.range(NKV):
                    row = (g * pool + page) * B + pos - blk * B
                    rope_k(pl.slice(k, [1, D], [b, g * D]), pl.slice(cos, [1, D2], [b, 0]),
                           pl.slice(sin, [1, D2], [b, 0]), pl.slice(k_cache, [1, D], [row, 0]))
                    cast_v(pl.slice(v, [1, D], [b, g * D]), pl.slice(v_cache, [1, D], [row, 0]))
            # attention: per request and kv head, its QPK query heads over the request's pages
            query = pl.reshape(qr, [T * NH, D])
            attn = pl.create_tensor([T * NH, D], dtype=pl.BF16)
            for b in pl.range(T):
                pages = pl.tensor.read(lens, [b]) // B
                for g in pl.range(NKV):
                    qrow = b * NH + g * QPK
                    m_run = pl.create_tensor([1, QPK], dtype=pl.FP32)
                    l_run = pl.create_tensor([1, QPK], dtype=pl.FP32)
                    o_run = pl.create_tensor([QPK, D], dtype=pl.FP32)
                    m_run, l_run, o_run = pa_init(m_run, l_run, o_run)
                    qt = pl.slice(query, [QPK, D], [qrow, 0])
                    for j in pl.range(pages):
                        krow = (g * pool + pl.tensor.read(table, [b * max_blocks + j])) * B
                        s = pa_qk(qt, pl.slice(k_cache, [B, D], [krow, 0]), pl.create_tensor([QPK, B], dtype=pl.FP32))
                        p, m_blk, l_blk = pa_softmax(s, scale, pl.create_tensor([QPK, B], dtype=pl.BF16),
                                                     pl.create_tensor([QPK, 1], dtype=pl.FP32),
                                                     pl.create_tensor([QPK, 1], dtype=pl.FP32))
                        o_blk = pa_pv(p, pl.slice(v_cache, [B, D], [krow, 0]),
                                      pl.create_tensor([QPK, D], dtype=pl.FP32))
                        m_run, l_run, o_run = pa_update(m_blk, l_blk, o_blk, m_run, l_run, o_run)
                    pa_finish16(l_run, o_run, pl.slice(attn, [QPK, D], [qrow, 0]))
            # O projection, residual, post-attention RMSNorm
            a2 = pl.reshape(attn, [T, H])
            ao = pl.create_tensor([T, H], dtype=pl.FP32)
            for n in pl.range(H // NC):
                proj_h(a2, pl.slice(wo, [H, NC], [0, n * NC]), pl.slice(ao, [T, NC], [0, n * NC]))
            h1 = pl.create_tensor([T, H], dtype=pl.FP32)
            xn2 = pl.create_tensor([T, H], dtype=pl.BF16)
            for r in pl.range(T // RB):
                residual_rms(pl.slice(x, [RB, H], [r * RB, 0]), pl.slice(ao, [RB, H], [r * RB, 0]), w_post, eps,
                             pl.slice(h1, [RB, H], [r * RB, 0]), pl.slice(xn2, [RB, H], [r * RB, 0]))
            # SwiGLU MLP and the second residual
            gate = pl.create_tensor([T, I], dtype=pl.FP32)
            up = pl.create_tensor([T, I], dtype=pl.FP32)
            for n in pl.range(I // NC):
                proj_h(xn2, pl.slice(wg, [H, NC], [0, n * NC]), pl.slice(gate, [T, NC], [0, n * NC]))
                proj_h(xn2, pl.slice(wu, [H, NC], [0, n * NC]), pl.slice(up, [T, NC], [0, n * NC]))
            act = pl.create_tensor([T, I], dtype=pl.BF16)
            for c in pl.range(I // C):
                swiglu(pl.slice(gate, [T, C], [0, c * C]), pl.slice(up, [T, C], [0, c * C]),
                       pl.slice(act, [T, C], [0, c * C]))
            dn = pl.create_tensor([T, H], dtype=pl.FP32)
            for n in pl.range(H // NC):
                proj_i(act, pl.slice(wd, [I, NC], [0, n * NC]), pl.slice(dn, [T, NC], [0, n * NC]))
            for r in pl.range(T // RB):
                residual_out(pl.slice(h1, [RB, H], [r * RB, 0]), pl.slice(dn, [RB, H], [r * RB, 0]),
                             pl.slice(out, [RB, H], [r * RB, 0]))
            return out

    return Qwen3DecodeLayer


def torch_decode_layer(x, w_in, wq, wk, wv, cos, sin, k_cache, v_cache, table, lens, wo, w_post, wg, wu, wd,
                       eps, scale, out, *, tokens, heads, kv_heads, dim, inter, block, max_blocks):
    """:func:`decode_layer`'s math in torch eager, batched over requests and heads, the same dtypes at
    every step (BF16 operands and activations, FP32 accumulation in K chunks of 256, FP32 vector
    math, the new K / V written into the caches in place). Assumes every request has the same length."""
    import torch

    T, NH, NKV, D, B = tokens, heads, kv_heads, dim, block
    H, QPK, D2, pool = heads * dim, heads // kv_heads, dim // 2, tokens * max_blocks

    def rms(h, w):
        r = torch.rsqrt((h * h).sum(-1, keepdim=True) * (1.0 / H) + eps)
        return (h * r * w.float()).to(torch.bfloat16)

    def proj(a, w):
        a, w = a.float(), w.float()
        acc = a[:, :KC] @ w[:KC]
        for c in range(KC, a.shape[1], KC):
            acc = acc + a[:, c:c + KC] @ w[c:c + KC]
        return acc

    def rope(t, c, s):   # t [..., D] FP32, c / s broadcast to [..., D/2]
        a, b = t[..., :D2], t[..., D2:]
        return torch.cat([a * c - b * s, b * c + a * s], -1).to(torch.bfloat16)

    xn = rms(x.float(), w_in)
    q, k, v = proj(xn, wq), proj(xn, wk), proj(xn, wv)
    qr = rope(q.view(T, NH, D), cos[:, None], sin[:, None])
    kr = rope(k.view(T, NKV, D), cos[:, None], sin[:, None])
    ctx = int(lens[0])
    tab = table.view(T, max_blocks).long()
    pos = ctx - 1
    rows = (torch.arange(NKV)[None, :] * pool + tab[:, pos // B][:, None]) * B + pos % B   # [T, NKV]
    k_cache[rows.flatten()] = kr.reshape(T * NKV, D)
    v_cache[rows.flatten()] = v.view(T * NKV, D).to(torch.bfloat16)
    # attention, batched over (request, kv head): [T * NKV, QPK, D] queries
    qg = qr.float().view(T * NKV, QPK, D)
    kc, vc = k_cache.view(-1, B, D), v_cache.view(-1, B, D)
    m = torch.full((T * NKV, QPK, 1), NEG)
    l = torch.zeros(T * NKV, QPK, 1)
    o = torch.zeros(T * NKV, QPK, D)
    base = (torch.arange(NKV)[None, :] * pool)
    for j in range(ctx // B):
        pages = (base + tab[:, j][:, None]).flatten()
        kb, vb = kc.index_select(0, pages).float(), vc.index_select(0, pages).float()
        s = torch.bmm(qg, kb.transpose(1, 2)) * scale
        mb = s.amax(dim=-1, keepdim=True)
        p = torch.exp(s - mb).to(torch.bfloat16).float()
        lb = p.sum(dim=-1, keepdim=True)
        ob = torch.bmm(p, vb)
        m_new = torch.maximum(m, mb)
        alpha, beta = torch.exp(m - m_new), torch.exp(mb - m_new)
        l = alpha * l + beta * lb
        o = alpha * o + beta * ob
        m = m_new
    attn = (o / l).to(torch.bfloat16).view(T, H)
    h1 = x.float() + proj(attn, wo)
    xn2 = rms(h1, w_post)
    g, u = proj(xn2, wg), proj(xn2, wu)
    act = (g / (torch.exp(-g) + 1.0) * u).to(torch.bfloat16)
    out.copy_(h1 + proj(act, wd))
    return out
