"""Programs for tests/compiler/test_scope_accumulator.py: a ``pl.create_tensor`` accumulator made in
a ``pl.at`` scope, carried through a K loop whose first iteration ``pl.matmul`` s and whose others
``pl.matmul_acc``, and assembled into the output *after* the scope (the shape of the reference's
pipelined batch-matmul regression program)."""
import pypto.language as pl

T, K, N, KC = 16, 256, 32, 64
B = 3


@pl.jit
def batch1_pipeline(x: pl.Tensor[[1, T, K], pl.INT8], w: pl.Tensor[[1, N, K], pl.INT8],
                    out: pl.Out[pl.Tensor[[1, T, N], pl.INT32]]):
    """3-D operands with a batch of 1, transposed weight, ``pl.pipeline`` K loop."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="mm3"):
        acc = pl.create_tensor([1, T, N], dtype=pl.INT32)
        for kb in pl.pipeline(0, K // KC, stage=2):
            k0 = kb * KC
            xk = x[:, :, k0:k0 + KC]
            wk = w[:, :, k0:k0 + KC]
            if kb == 0:
                acc = pl.matmul(xk, wk, b_trans=True, out_dtype=pl.INT32)
            else:
                acc = pl.matmul_acc(acc, xk, wk, b_trans=True)
    out[:, :, :] = acc
    return out


@pl.jit
def plain_2d_range(x: pl.Tensor[[T, K], pl.INT8], w: pl.Tensor[[K, N], pl.INT8],
                   out: pl.Out[pl.Tensor[[T, N], pl.INT32]]):
    """The 2-D form with a ``pl.range`` K loop and an explicit ``pl.assemble``."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="mm2"):
        acc = pl.create_tensor([T, N], dtype=pl.INT32)
        for kb in pl.range(K // KC):
            xk = x[:, kb * KC:kb * KC + KC]
            wk = w[kb * KC:kb * KC + KC, :]
            if kb == 0:
                acc = pl.matmul(xk, wk, out_dtype=pl.INT32)
            else:
                acc = pl.matmul_acc(acc, xk, wk)
    out = pl.assemble(out, acc, [0, 0])
    return out


@pl.jit
def rows_per_step(x: pl.Tensor[[B * T, K], pl.INT8], w: pl.Tensor[[N, K], pl.INT8],
                  out: pl.Out[pl.Tensor[[B * T, N], pl.INT32]]):
    """One scope per step of an orchestration loop, each accumulator assembled at a row offset."""
    for b in pl.range(B):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
            acc = pl.create_tensor([T, N], dtype=pl.INT32)
            for kb in pl.pipeline(0, K // KC, stage=2):
                xk = x[b * T:b * T + T, kb * KC:kb * KC + KC]
                wk = w[:, kb * KC:kb * KC + KC]
                if kb == 0:
                    acc = pl.matmul(xk, wk, b_trans=True, out_dtype=pl.INT32)
                else:
                    acc = pl.matmul_acc(acc, xk, wk, b_trans=True)
        out[b * T:b * T + T, :] = acc
    return out


@pl.jit
def assembled_twice(x: pl.Tensor[[T, K], pl.INT8], w: pl.Tensor[[K, N], pl.INT8],
                    out: pl.Out[pl.Tensor[[T, N], pl.INT32]]):
    """Refused: the scope's tensor is assembled twice after it (no single region to write in place)."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="twice"):
        acc = pl.create_tensor([T, N], dtype=pl.INT32)
        acc = pl.matmul(x, w, out_dtype=pl.INT32)
    out[:, :] = acc
    out[:, :] = acc
    return out


@pl.jit
def out_rebound_to_accumulator(x: pl.Tensor[[T, K], pl.INT8], w: pl.Tensor[[K, N], pl.INT8],
                               out: pl.Out[pl.Tensor[[T, N], pl.INT32]]):
    """``out = acc`` rebinds the name only: the caller's ``out`` is never written (PTO-W001)."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="rebound"):
        acc = pl.create_tensor([T, N], dtype=pl.INT32)
        for kb in pl.range(K // KC):
            xk = x[:, kb * KC:kb * KC + KC]
            wk = w[kb * KC:kb * KC + KC, :]
            if kb == 0:
                acc = pl.matmul(xk, wk, out_dtype=pl.INT32)
            else:
                acc = pl.matmul_acc(acc, xk, wk)
        out = acc
    return out
