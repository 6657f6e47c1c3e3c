"""Matrix multiply on the cube unit: ``tile.matmul`` / ``tile.matmul_acc`` (Left x Right -> Acc),
``tile.extract`` (a sub-block copy, optionally transposed, e.g. Mat -> Left), and at tensor level
``tensor.matmul`` / ``tensor.matmul_acc`` with a ``lower`` hook (docs/language.md, "Matmul").

Accumulator dtype (fixed by the hardware): FP16/BF16/FP32 x same -> FP32, INT8 x INT8 -> INT32. A
tile-level ``out_dtype`` other than that is an error. The product's valid shape is ``[lhs valid M,
rhs valid N]`` (a store writes that region only). The variants (``matmul_bias``, ``gemv*``,
``batch_matmul*``) live in :mod:`pypto.ops.matmul_ext`; tensor-level operands of rank > 2 are batched
(lowered to ``tile.batch_matmul[_acc]``); ``c_matrix_nz`` is accepted and inert (see its param).

Numerics: FP16/BF16 products are exact in FP32 and accumulate in FP32; both executors compute
``torch.matmul`` of FP32 copies of the operands (INT8: INT32 copies, wrapping like the INT32
accumulator), through ``_pto.matmul``, so reference and simulator agree bit for bit.
``matmul_acc`` is ``acc + lhs @ rhs`` (the product summed in FP32, then one FP32 add). A K split
(AutoTileMatmulL0, or the user's chunk loop) therefore changes the FP32 summation order.

Tensor level (``lower`` hook, used by ConvertTensorToTileOps): each operand is loaded whole into
Mat (an operand that is already a tile is used as is), a transposed operand (``a_trans`` /
``b_trans``) is copied transposed inside Mat (``tile.extract(..., transpose=True)``), then
``tile.matmul`` (InferTileMemorySpace inserts the Mat -> Left/Right moves; AutoTileMatmulL0 splits
K when the operands exceed L0). When ``out_dtype`` differs from the accumulator dtype the result
is ``tile.cast(acc, out_dtype, mode="rint")``, which runs in Vec: the Acc -> Vec move exists on a5
only, so on a2a3 that is a compile error (rule: on a2a3 keep ``out_dtype`` equal to the
accumulator dtype -- FP32 for float operands -- store it, and cast in a vector scope).
"""
from __future__ import annotations

from pypto.errors import Span, UnsupportedFeatureError
from pypto.ir.types import TensorType, TileType, describe
from pypto.language.dtypes import BF16, FP16, FP32, INT8, INT32, DataType
from pypto.language.enums import MemorySpace as M
from pypto.ops.registry import OpArgs, OpDef, Param, register
from pypto.ops.traits import InPlaceSafe, Lockstep, MemorySpaces
from pypto.ops.rules import check_region, const_ints, expect, promote, static_ints
from pypto.ir.nodes import AssignStmt, Call, ConstInt, MakeTuple, Var
from pypto.ops.registry import get_op

_ACC_DTYPE = {FP16: FP32, BF16: FP32, FP32: FP32, INT8: INT32}


def acc_dtype(op: str, lhs: DataType, rhs: DataType, span: Span) -> DataType:
    """The accumulator dtype of ``lhs x rhs``; error for unsupported or mixed operand dtypes."""
    expect(lhs == rhs, op, f"operand dtypes differ: {lhs.name} vs {rhs.name}", span,
           "cast one operand with pl.cast so both have the same dtype")
    expect(lhs in _ACC_DTYPE, op, f"unsupported operand dtype {lhs.name} (supported: FP16, BF16, FP32, INT8)",
           span)
    return _ACC_DTYPE[lhs]


def _mm_shape(op: str, l_shape, r_shape, span: Span, a_trans=False, b_trans=False) -> tuple[int, int, int]:
    expect(len(l_shape) == 2 and len(r_shape) == 2, op,
           f"only 2-D operands are supported, got ranks {len(l_shape)} and {len(r_shape)}", span)
    m, k = (l_shape[1], l_shape[0]) if a_trans else tuple(l_shape)
    k2, n = (r_shape[1], r_shape[0]) if b_trans else tuple(r_shape)
    expect(k == k2, op, f"inner dimensions differ: lhs {list(l_shape)}{' (transposed)' if a_trans else ''} "
                        f"@ rhs {list(r_shape)}{' (transposed)' if b_trans else ''}", span)
    return m, k, n


def _no_tile_trans(op: str, a: OpArgs, span: Span) -> None:
    for flag in ("a_trans", "b_trans"):
        expect(not getattr(a, flag), op, f"'{flag}' is not supported for Tile operands", span,
               "transpose the operand while moving it: pl.tile.extract(t, [0, 0], shape, "
               "target_memory=..., transpose=True), or use tensor-level pl.matmul")


def _tile_mm_infer(a: OpArgs, span: Span) -> TileType:
    _no_tile_trans("tile.matmul", a, span)
    m, _, n = _mm_shape("tile.matmul", a.lhs.type.shape, a.rhs.type.shape, span)
    acc = acc_dtype("tile.matmul", a.lhs.type.dtype, a.rhs.type.dtype, span)
    expect(a.out_dtype in (None, acc), "tile.matmul",
           f"out_dtype {getattr(a.out_dtype, 'name', a.out_dtype)} is not the accumulator dtype {acc.name} "
           f"of {a.lhs.type.dtype.name} operands", span,
           "the cube accumulates in a fixed dtype; cast the result afterwards with pl.cast")
    # the product's valid extent is [lhs valid M, rhs valid N], so a store writes only that region
    # (as the reference's does) instead of the zero padding around it
    lt, rt = a.lhs.type, a.rhs.type
    valid = None if lt.valid_shape is None and rt.valid_shape is None else \
        (lt.effective_valid_shape[0], rt.effective_valid_shape[1])
    return TileType((m, n), acc, None, valid)


def _tile_c_matrix_nz(args: list, kwargs: dict, span: Span):
    """``pl.matmul(tile, tile, c_matrix_nz=...)``: the flag is tensor-only (a tile's layout is part of
    its type); ``False`` is accepted and dropped, ``True`` is an error, as in the reference."""
    if "c_matrix_nz" in kwargs or len(args) > 5:
        flag = kwargs.pop("c_matrix_nz") if "c_matrix_nz" in kwargs else args.pop(5)
        expect(flag is False, "tile.matmul", "c_matrix_nz applies to tensor operands only", span,
               "drop c_matrix_nz=: a tile's layout is part of its type")
    return args, kwargs


def _mm_ref(a: OpArgs) -> str:
    return f"_pto.matmul({a.lhs}, {a.rhs})"


register(OpDef(
    name="tile.matmul",
    params=(Param("lhs", "tile"), Param("rhs", "tile"), Param("out_dtype", "dtype", None),
            Param("a_trans", "bool", False), Param("b_trans", "bool", False)),
    infer=_tile_mm_infer,
    ref=_mm_ref,
    sim=lambda a, dst, gang=False, direct=0: (f"_pto.{'gang_' if gang else ''}matmul_into({dst}, {a.lhs}, {a.rhs}"
                                              + (f", direct={direct})" if direct else ")")),
    traits=(MemorySpaces((("lhs", (M.Left,)), ("rhs", (M.Right,))), M.Acc), Lockstep.GANG),
    dsl="matmul", operand_kinds=("tile", "tile"), dsl_args=_tile_c_matrix_nz,
    doc="lhs @ rhs on the cube: Left x Right -> Acc (FP32 / INT32 accumulator)",
))


def _tile_mm_acc_infer(a: OpArgs, span: Span) -> TileType:
    _no_tile_trans("tile.matmul_acc", a, span)
    m, _, n = _mm_shape("tile.matmul_acc", a.lhs.type.shape, a.rhs.type.shape, span)
    acc = acc_dtype("tile.matmul_acc", a.lhs.type.dtype, a.rhs.type.dtype, span)
    t = a.acc.type
    expect(tuple(t.shape) == (m, n), "tile.matmul_acc",
           f"accumulator shape {list(t.shape)} differs from the product shape {[m, n]}", span)
    expect(t.dtype == acc, "tile.matmul_acc",
           f"accumulator dtype {t.dtype.name} is not {acc.name} (the accumulator dtype of "
           f"{a.lhs.type.dtype.name} operands)", span)
    # the result lives where the accumulator does (Acc once InferTileMemorySpace ran, or as the
    # caller declared it), so that a loop carrying it through matmul_acc keeps one type
    return TileType((m, n), acc, t.memory_space, t.valid_shape)


def _acc_src(a: OpArgs) -> str:
    """The accumulator operand's source: ``acc``, or under ``init_cond`` ``None`` (overwrite) when
    the condition holds at run time."""
    if str(a.init_cond) == "None":
        return str(a.acc)
    return f"_pto.acc_unless({a.acc}, {a.init_cond})"


def _mm_acc_ref(a: OpArgs) -> str:
    return f"_pto.matmul({a.lhs}, {a.rhs}, {_acc_src(a)})"


def _init_cond_args(args: list, kwargs: dict, span: Span):
    """``init_cond=`` (the reference's split-K idiom: overwrite instead of accumulate where it
    holds): a literal ``False`` is the plain accumulate, anything else a scalar condition."""
    if kwargs.get("init_cond") is False:
        kwargs.pop("init_cond")
    return args, kwargs


register(OpDef(
    name="tile.matmul_acc",
    params=(Param("acc", "tile"), Param("lhs", "tile"), Param("rhs", "tile"),
            Param("a_trans", "bool", False), Param("b_trans", "bool", False),
            Param("init_cond", "scalar", None)),
    infer=_tile_mm_acc_infer,
    ref=_mm_acc_ref,
    sim=lambda a, dst, gang=False, direct=0: (
        f"_pto.{'gang_' if gang else ''}matmul_into({dst}, {a.lhs}, {a.rhs}, {_acc_src(a)}"
        + (f", direct={direct})" if direct else ")")),
    dsl_args=_init_cond_args, updates="acc",
    traits=(MemorySpaces((("acc", (M.Acc,)), ("lhs", (M.Left,)), ("rhs", (M.Right,))), M.Acc), InPlaceSafe(),
            Lockstep.GANG),
    dsl="matmul_acc", operand_kinds=("tile", "tile", "tile"),
    # the sim computes lhs @ rhs into a temporary, then dst = acc + product elementwise: dst may be
    # acc's buffer
    doc="acc + lhs @ rhs on the cube (accumulate into Acc)",
))


def _mm_window_infer(a: OpArgs, span: Span) -> TileType:
    op = "tile.matmul_acc_window"
    m, _, n = _mm_shape(op, a.lhs.type.shape, a.rhs.type.shape, span)
    acc = acc_dtype(op, a.lhs.type.dtype, a.rhs.type.dtype, span)
    t = a.acc.type
    expect(len(t.shape) == 2 and t.dtype == acc, op, f"the accumulator {describe(t)} is not a 2-D {acc.name} tile "
           f"(the accumulator dtype of {a.lhs.type.dtype.name} operands)", span)
    offs = const_ints(a.offset)
    # the device accumulates into a window of L0C only where the window is contiguous there: in the
    # NZ layout of an Acc tile a block of whole columns (every row), at a 16-column boundary
    expect(len(offs) == 2 and offs[0] == 0 and m == t.shape[0], op,
           f"the window [{m}, {n}] at {list(offs)} of the accumulator {describe(t)} must span all its rows "
           "(a column window is contiguous in the NZ layout of L0C; a row window is not)", span,
           f"slice whole columns: pl.tile.slice(acc, [{t.shape[0]}, {n}], [0, col])")
    expect(offs[1] is None or (0 <= offs[1] <= t.shape[1] - n and offs[1] % 16 == 0), op,
           f"the column window at column {offs[1]} of width {n} must lie inside the accumulator's {t.shape[1]} "
           "columns, at a multiple of 16 (the NZ fractal's width)", span)
    return TileType(tuple(t.shape), t.dtype, t.memory_space, t.valid_shape)


def _init_src(a: OpArgs) -> str:
    return "False" if str(a.init_cond) == "None" else str(a.init_cond)


register(OpDef(
    name="tile.matmul_acc_window",
    params=(Param("acc", "tile"), Param("lhs", "tile"), Param("rhs", "tile"), Param("offset", "ints"),
            Param("init_cond", "scalar", None)),
    infer=_mm_window_infer,
    ref=lambda a: f"_pto.matmul_window({a.acc}, {a.lhs}, {a.rhs}, {a.offset}, {_init_src(a)})",
    sim=lambda a, dst: f"_pto.matmul_window_into({dst}, {a.acc}, {a.lhs}, {a.rhs}, {a.offset}, {_init_src(a)})",
    updates="acc",
    traits=(MemorySpaces((("acc", (M.Acc,)), ("lhs", (M.Left,)), ("rhs", (M.Right,))), M.Acc), InPlaceSafe()),
    dsl=None, operand_kinds=("tile", "tile", "tile"),
    doc="acc with its column window at offset accumulated by lhs @ rhs: what pl.matmul_acc on a "
        "pl.tile.slice of an Acc tile spanning all its rows does (AccWindows builds it)",
))


def _extract_infer(a: OpArgs, span: Span) -> TileType:
    shape = static_ints("tile.extract", "shapes", a.shapes, span)
    check_region("tile.extract", a.offsets, shape, a.x.type.shape, span)
    out = tuple(reversed(shape)) if a.transpose else shape
    expect(not a.transpose or len(shape) == 2, "tile.extract", "transpose needs a 2-D region", span)
    # a copy of the whole tile keeps its valid region (transposed with it): a transposed operand of
    # a tensor-level matmul (b_trans) of a partial tile keeps its valid N, so the product's store
    # writes the valid columns only (it wrote the zero padding too). A sub-region is all valid.
    valid = None
    src = a.x.type
    if src.valid_shape is not None and tuple(shape) == tuple(src.shape) and \
            all(o == 0 for o in const_ints(a.offsets)):
        valid = tuple(reversed(src.valid_shape)) if a.transpose else tuple(src.valid_shape)
    return TileType(out, a.x.type.dtype, a.target_memory, valid)


def _extract_args(args: list, kwargs: dict, span: Span):
    """The reference's ``extract(src, index_row, index_col, shape, *, target_memory)`` (TEXTRACT):
    two scalar indices instead of an offsets list."""
    if len(args) >= 3 and not isinstance(args[1], (list, tuple)):
        row, col = args[1], args[2]
        args = [args[0], [row, col], *args[3:]]
    elif "index_row" in kwargs or "index_col" in kwargs:
        args = list(args)
        args.insert(1, [kwargs.pop("index_row", 0), kwargs.pop("index_col", 0)])
    return args, kwargs


register(OpDef(
    name="tile.extract",
    params=(Param("x", "tile", aliases=("src",)), Param("offsets", "ints"), Param("shapes", "ints", aliases=("shape",)),
            Param("target_memory", "mem", None), Param("transpose", "bool", False)),
    infer=_extract_infer,
    ref=lambda a: f"_pto.extract({a.x}, {a.offsets}, {a.shapes}, {a.transpose})",
    sim=lambda a, dst: f"{dst}.copy_(_pto.extract({a.x}, {a.offsets}, {a.shapes}, {a.transpose}))",
    dsl="extract", operand_kinds=("tile",), dsl_args=_extract_args,
    # from Mat (to Left / Right / Mat); with target_memory=Vec a vector-core TEXTRACT from Vec
    traits=(MemorySpaces((("x", (M.Mat,)),), M.Mat, by_target=((M.Vec, (("x", (M.Vec,)),)),)),),
    doc="copy a region of a tile (optionally transposed) into a new tile, e.g. Mat -> Left/Right, Vec -> Vec",
))


# ------------------------------------------------------------------ tensor level

def _is_batched(a: OpArgs) -> bool:
    """A tensor-level matmul with an operand of rank > 2: batched (batch dims broadcast), lowered to
    ``tile.batch_matmul[_acc]``."""
    return len(a.lhs.type.shape) > 2 or len(a.rhs.type.shape) > 2


def _tensor_shape(op: str, a: OpArgs, span: Span) -> tuple:
    if _is_batched(a):
        from pypto.ops.matmul_ext import batch_geometry

        return batch_geometry(op, a.lhs.type, a.rhs.type, None, None, a.a_trans, a.b_trans, span)[0]
    m, _, n = _mm_shape(op, a.lhs.type.shape, a.rhs.type.shape, span, a.a_trans, a.b_trans)
    return (m, n)


def _tensor_mm_infer(a: OpArgs, span: Span) -> TensorType:
    shape = _tensor_shape("tensor.matmul", a, span)
    acc_dtype("tensor.matmul", a.lhs.type.dtype, a.rhs.type.dtype, span)
    return TensorType(shape, a.out_dtype or promote(a.lhs.type.dtype, a.rhs.type.dtype))


def _tensor_mm_acc_infer(a: OpArgs, span: Span) -> TensorType:
    shape = _tensor_shape("tensor.matmul_acc", a, span)
    acc = acc_dtype("tensor.matmul_acc", a.lhs.type.dtype, a.rhs.type.dtype, span)
    t = a.acc.type
    expect(tuple(t.shape) == tuple(shape) and t.dtype == acc, "tensor.matmul_acc",
           f"accumulator must be {list(shape)} {acc.name}, got {list(t.shape)} {t.dtype.name}", span)
    expect(a.init_cond is None or not _is_batched(a), "tensor.matmul_acc",
           "init_cond applies to 2-D operands only", span)
    return TensorType(shape, acc)


def _operand(conv, x, trans: bool, name: str, span, stmts: list):
    """The Mat tile (or existing tile) holding tensor operand ``x``, transposed when ``trans``."""
    if isinstance(x, Var) and id(x) in conv.tile_of:
        tile = conv.as_tile(x, span)
    else:
        src = conv.var(x)
        shape = src.type.shape
        zeros = MakeTuple(tuple(ConstInt(0) for _ in shape))
        dims = MakeTuple(tuple(ConstInt(d) for d in shape))
        t = TileType(tuple(shape), src.type.dtype, M.Mat)
        tile = Var(f"{name}_mat", t, span)
        stmts.append(AssignStmt(tile, Call("tile.load", (src, zeros, dims, None, M.Mat), t, span), span))
    if trans:
        shape = tile.type.shape
        zeros = MakeTuple(tuple(ConstInt(0) for _ in shape))
        dims = MakeTuple(tuple(ConstInt(d) for d in shape))
        # (the whole-tile copy keeps the valid region, transposed: tile.extract's rule)
        valid = None if tile.type.valid_shape is None else tuple(reversed(tile.type.valid_shape))
        t = TileType(tuple(reversed(shape)), tile.type.dtype, M.Mat, valid)
        tt = Var(f"{name}_T", t, span)
        stmts.append(AssignStmt(tt, Call("tile.extract", (tile, zeros, dims, M.Mat, True), t, span), span))
        tile = tt
    return tile


def _lower(call, var, conv):
    """tensor.matmul / tensor.matmul_acc -> load (Mat) [-> transpose] -> tile.matmul[_acc] [-> cast]."""
    span = call.span
    op = get_op(call.op)
    a = op.args(call.args)
    stmts: list = []
    # N-D operands: loaded whole (a transposed operand stays transposed in Mat; the batch op reads it so)
    batched = _is_batched(a)
    lhs = _operand(conv, a.lhs, a.a_trans and not batched, f"{var.name}_lhs", span, stmts)
    rhs = _operand(conv, a.rhs, a.b_trans and not batched, f"{var.name}_rhs", span, stmts)
    acc = acc_dtype(call.op, lhs.type.dtype, rhs.type.dtype, span)
    # the product keeps the operands' valid extents ([lhs valid M, rhs valid N], as tile.matmul's
    # rule): a store of it then writes that region only (a Tensor carries no valid shape, so the
    # tensor-level type cannot tell; without this a ragged lhs wrote its padding rows too)
    valid = None
    if not batched and call.op == "tensor.matmul" and (lhs.type.valid_shape is not None
                                                         or rhs.type.valid_shape is not None):
        valid = (lhs.type.effective_valid_shape[0], rhs.type.effective_valid_shape[1])
    t = TileType(tuple(var.type.shape), acc, None, valid)

    def product(acc_tile=None):
        if batched:
            attrs = (None, None, a.a_trans, a.b_trans)
            if acc_tile is None:
                return Call("tile.batch_matmul", (lhs, rhs, *attrs), t, span)
            return Call("tile.batch_matmul_acc", (acc_tile, lhs, rhs, *attrs), t, span)
        if acc_tile is None:
            return Call("tile.matmul", (lhs, rhs, None, False, False), t, span)
        return Call("tile.matmul_acc", (acc_tile, lhs, rhs, False, False, a.init_cond), t, span)

    if call.op == "tensor.matmul":
        mm = Var(f"{var.name}_acc" if var.type.dtype != acc else var.name, t, span)
        stmts.append(AssignStmt(mm, product(), span))
        if var.type.dtype == acc:
            return stmts, mm
        ct = TileType(tuple(var.type.shape), var.type.dtype, None, valid)
        res = Var(var.name, ct, span)
        stmts.append(AssignStmt(res, Call("tile.cast", (mm, var.type.dtype, "rint"), ct, span), span))
        return stmts, res
    # tensor.matmul_acc
    if isinstance(a.acc, Var) and id(a.acc) in conv.tile_of:
        acc_tile = conv.as_tile(a.acc, span)
        res = Var(var.name, t, span)
        stmts.append(AssignStmt(res, product(acc_tile), span))
        return stmts, res
    if a.init_cond is not None:
        raise UnsupportedFeatureError(
            "matmul_acc(..., init_cond=) with a global-tensor accumulator is not supported", span,
            "load the accumulator into a tile (or use pl.matmul when the condition is known)")
    # the accumulator is a global tensor: GM cannot be loaded into Acc, so add in Vec (needs Acc->Vec: a5)

    src = conv.var(a.acc)
    zeros = MakeTuple(tuple(ConstInt(0) for _ in src.type.shape))
    dims = MakeTuple(tuple(ConstInt(d) for d in src.type.shape))
    acc_vec = Var(f"{var.name}_init", TileType(tuple(src.type.shape), src.type.dtype), span)
    stmts.append(AssignStmt(acc_vec, Call("tile.load", (src, zeros, dims, None, None), acc_vec.type, span), span))
    mm = Var(f"{var.name}_prod", t, span)
    stmts.append(AssignStmt(mm, product(), span))
    res = Var(var.name, t, span)
    stmts.append(AssignStmt(res, Call("tile.add", (acc_vec, mm), t, span), span))
    return stmts, res


register(OpDef(
    name="tensor.matmul",
    params=(Param("lhs", "tensor"), Param("rhs", "tensor"), Param("out_dtype", "dtype", None),
            Param("a_trans", "bool", False), Param("b_trans", "bool", False),
            # the reference's "C matrix in NZ layout" flag: it declares the attribute and no pass of
            # it reads it, so it is recorded in the IR and changes nothing (values, layout of GM out)
            Param("c_matrix_nz", "bool", False)),
    infer=_tensor_mm_infer,
    ref=lambda a: f"_pto.tensor_matmul({a.lhs}, {a.rhs}, {a.out_dtype}, {a.a_trans}, {a.b_trans})",
    dsl="matmul", operand_kinds=("tensor", "tensor"),
    lowers_to="tile.matmul", lower=_lower,
    doc="[M,K] @ [K,N] -> [M,N]; default dtype = promoted operand dtype; a_trans/b_trans transpose operands",
))

register(OpDef(
    name="tensor.matmul_acc",
    params=(Param("acc", "tensor"), Param("lhs", "tensor"), Param("rhs", "tensor"),
            Param("a_trans", "bool", False), Param("b_trans", "bool", False),
            Param("init_cond", "scalar", None)),
    infer=_tensor_mm_acc_infer,
    ref=lambda a: f"_pto.tensor_matmul({a.lhs}, {a.rhs}, None, {a.a_trans}, {a.b_trans}, acc={_acc_src(a)})",
    dsl_args=_init_cond_args, updates="acc",
    dsl="matmul_acc", operand_kinds=("tensor", "tensor", "tensor"),
    lowers_to="tile.matmul_acc", lower=_lower,
    doc="acc + a @ b (acc in the accumulator dtype)",
))
