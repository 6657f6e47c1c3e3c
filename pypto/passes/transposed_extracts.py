"""AutoTileMatmulL0's last step: a cube operand chunk read from a transposed Mat copy is extracted
transposed from the copy's source instead, and the copy disappears when nothing else reads it.

The reference's ``tile.transpose_view`` of a Mat tile is zero-copy (an NZ tile read as ZN), and
its L0 extracts read the transposed matrix straight from the natural tile. Our tiles are row-major,
so a transposed operand (``pl.matmul(a, b, b_trans=True)``: ``tile.extract(b, ..., transpose=True)``
into Mat, or a ``tile.transpose_view``) is a second full copy in Mat: ``[N, K]`` and ``[K, N]``
both live, which can exceed Mat where the reference fits. After the K / output split, every chunk
``tile.extract(bT, [r, c], [h, w], Left|Right)`` of such a copy ``bT`` of ``b`` is the same
elements as ``tile.extract(b, [c, r], [w, h], Left|Right, transpose=True)``: that form is used, and
``bT`` is dropped once unread. Pure data movement: values are unchanged.
"""
from __future__ import annotations

from pypto.ir.nodes import AssignStmt, Call, ConstInt, Function, MakeTuple, Var
from pypto.ir.types import TileType
from pypto.ir.visit import Mutator, iter_exprs, iter_stmts
from pypto.language.enums import MemorySpace as M

_CUBE_OPERAND = (M.Left, M.Right)


def _full_mat(t) -> bool:
    # (a valid_shape does not matter: the copy holds every element of the source, padding included)
    # (not placed yet: the transposing extract reads it from Mat, where InferTileMemorySpace puts it)
    return isinstance(t, TileType) and len(t.shape) == 2 and t.memory_space in (None, M.Mat) \
        and all(isinstance(d, int) for d in t.shape)


def _transposed_source(s) -> Var | None:
    """``src`` when ``s`` is ``x = tile.transpose_view(src)`` (2-D) or ``x = tile.extract(src, [0, 0],
    src.shape, Mat, transpose=True)`` of a static 2-D Mat tile ``src``."""
    c = s.value if isinstance(s, AssignStmt) else None
    if not isinstance(c, Call) or not c.args or not isinstance(c.args[0], Var) or not _full_mat(c.args[0].type):
        return None
    src = c.args[0]
    if c.op == "tile.transpose_view" and c.args[1] is None:
        return src
    if c.op == "tile.extract" and c.args[4] is True and c.args[3] == M.Mat:
        offs, shp = c.args[1], c.args[2]
        if all(isinstance(e, ConstInt) and e.value == 0 for e in offs.elements) and \
                tuple(e.value if isinstance(e, ConstInt) else None for e in shp.elements) == tuple(src.type.shape):
            return src
    return None


class _Fold(Mutator):
    def __init__(self, sources: dict):
        super().__init__()
        self.sources = sources  # id(transposed copy) -> its source

    def visit_AssignStmt(self, s: AssignStmt):
        c = s.value
        if isinstance(c, Call) and c.op == "tile.extract" and c.args[4] is False and c.args[3] in _CUBE_OPERAND \
                and id(c.args[0]) in self.sources:
            src = self.sources[id(c.args[0])]
            offs, shp = c.args[1].elements, c.args[2].elements
            args = (src, MakeTuple(tuple(reversed(offs))), MakeTuple(tuple(reversed(shp))), c.args[3], True)
            return s.replace(value=c.replace(args=args))
        return self.default_stmt(s)


class _Drop(Mutator):
    def __init__(self, dead: set):
        super().__init__()
        self.dead = dead

    def visit_AssignStmt(self, s: AssignStmt):
        return None if id(s) in self.dead else self.default_stmt(s)


def fold(f: Function) -> Function:
    """``f`` with its cube-operand extracts of transposed Mat copies read from the copies' sources."""
    sources = {}
    for s in iter_stmts(f.body):
        src = _transposed_source(s)
        if src is not None:
            sources[id(s.var)] = src
    if not sources:
        return f
    body = _Fold(sources).stmts(f.body)
    read = {id(e) for e in iter_exprs(body) if isinstance(e, Var)}
    dead = {id(s) for s in iter_stmts(body) if isinstance(s, AssignStmt) and id(s.var) in sources
            and id(s.var) not in read}
    return f.replace(body=_Drop(dead).stmts(body) if dead else body)
