"""The inline form of a chip program inside a HOST orchestrator:

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host_orch(self, a: pl.Tensor[[128, 128], pl.FP32], f: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
        with pl.at(level=pl.Level.CHIP, role=pl.Role.Orchestrator):
            with pl.at(level=pl.Level.CORE_GROUP):
                out = pl.assemble(f, pl.add(a, a), [0, 0])
        return out

Each top-level ``with pl.at(level=pl.Level.CHIP, ...)`` block becomes an Orchestration function of
the program (``<host>_chip<k>``) whose parameters are the host parameters the block reads, with
their host annotations (so an ``Out`` stays an ``Out``); the block is replaced by a launch of it.
A name the block assigns and the host reads afterwards is returned: it must be a version of one of
its Out / InOut parameters (``pl.assemble(f, ...)`` / ``pl.store(..., f)``), whose type it has.

Which chip runs block ``k``: ``k % world size`` (block 0 on chip 0, block 1 on chip 1, ...), as the
reference spreads inline chip blocks over the program's devices; ``device=`` is not written in
this form. A block reading a host variable that is not a parameter is a located error: only the
host's tensors can be handed to a chip program.
"""
from __future__ import annotations

import ast

from pypto.errors import UnsupportedFeatureError
from pypto.language.enums import Level

INLINE_KW = "_pypto_inline_chip"   # the launch's block index (HostInterpreter.launch picks the chip)
_WRITES = {"assemble": 0, "store": 2}


def _is_chip_block(s: ast.stmt, static) -> bool:
    if not (isinstance(s, ast.With) and len(s.items) == 1 and isinstance(s.items[0].context_expr, ast.Call)):
        return False
    call = s.items[0].context_expr
    kw = {k.arg: k.value for k in call.keywords}
    try:
        fn = static(call.func)
        return getattr(fn, "name", None) == "at" and "level" in kw and static(kw["level"]) == Level.CHIP
    except Exception:  # noqa: BLE001 - not a pl.at(...) call
        return False


def _names(nodes, ctx) -> list[str]:
    out = []
    for n in nodes:
        for x in ast.walk(n):
            if isinstance(x, ast.Name) and isinstance(x.ctx, ctx) and x.id not in out:
                out.append(x.id)
    return out


def _written_param(block: list, name: str, params: set) -> str | None:
    """The parameter a block's assignment of ``name`` is a version of (``pl.assemble(p, ...)``,
    ``pl.store(t, offs, p)``), or None."""
    for x in ast.walk(ast.Module(body=block, type_ignores=[])):
        if isinstance(x, ast.Assign) and len(x.targets) == 1 and isinstance(x.targets[0], ast.Name) \
                and x.targets[0].id == name and isinstance(x.value, ast.Call) \
                and isinstance(x.value.func, ast.Attribute) and x.value.func.attr in _WRITES:
            i = _WRITES[x.value.func.attr]
            if i < len(x.value.args) and isinstance(x.value.args[i], ast.Name) and x.value.args[i].id in params:
                return x.value.args[i].id
    return None


def _inner(ann: ast.expr) -> ast.expr:
    """``X`` of ``pl.Out[X]`` / ``pl.InOut[X]`` (else ``ann``)."""
    if isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Attribute) and ann.value.attr in ("Out", "InOut"):
        return ann.slice
    return ann


def outline(m: ast.FunctionDef, params: tuple, anns: tuple, static, src):
    """``(host def with the blocks replaced by launches, [(synthesised FunctionDef, return annotation)])``."""
    blocks = [i for i, s in enumerate(m.body) if _is_chip_block(s, static)]
    if not blocks:
        return m, []
    ann_of = dict(zip(params, anns))
    assigned_outside = set(_names([s for i, s in enumerate(m.body) if i not in blocks], ast.Store))
    body, funcs = [], []
    for i, s in enumerate(m.body):
        if i not in blocks:
            body.append(s)
            continue
        k = len(funcs)
        block = s.body
        reads = _names(block, ast.Load)
        local = [n for n in reads if n in assigned_outside and n not in params]
        if local:
            raise UnsupportedFeatureError(
                f"an inline pl.at(level=pl.Level.CHIP) block reads the host variable '{local[0]}': a chip program "
                "takes the host's parameters only", src.span(s),
                "move the computation of that value into the block, or write the chip program as a method")
        used = [p for p in params if p in reads]
        # read afterwards: by the host, or by a later block that does not assign it first itself
        later = set()
        for j in range(i + 1, len(m.body)):
            loads = set(_names([m.body[j]], ast.Load))
            later |= loads - set(_names(m.body[j].body, ast.Store)) if j in blocks else loads
        outs = [n for n in _names(block, ast.Store) if n in later]
        rets = []
        for n in outs:
            p = _written_param(block, n, set(used))
            if p is None:
                raise UnsupportedFeatureError(
                    f"the host reads '{n}' after an inline pl.at(level=pl.Level.CHIP) block, but it is not a "
                    "version of one of the block's output tensors", src.span(s),
                    "assign it from pl.assemble(out, ...) / pl.store(tile, offsets, out) of a pl.Out parameter")
            rets.append(_inner(ann_of[p]))
        name = f"{m.name}_chip{k}"
        args = ast.arguments(posonlyargs=[], args=[ast.arg("self")] + [ast.arg(p, ann_of[p]) for p in used],
                             vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
        fbody = list(block)
        if outs:
            value = ast.Name(outs[0], ast.Load()) if len(outs) == 1 else \
                ast.Tuple([ast.Name(n, ast.Load()) for n in outs], ast.Load())
            fbody.append(ast.copy_location(ast.Return(value), block[-1]))
        fdef = ast.copy_location(ast.FunctionDef(name, args, fbody, [], None, None), s)
        ast.fix_missing_locations(fdef)
        ret = rets[0] if len(rets) == 1 else (ast.Subscript(ast.Name("tuple", ast.Load()), ast.Tuple(rets, ast.Load()),
                                                            ast.Load()) if rets else None)
        funcs.append((fdef, ret))
        call = ast.Call(ast.Attribute(ast.Name("self", ast.Load()), name, ast.Load()),
                        [ast.Name(p, ast.Load()) for p in used], [ast.keyword(INLINE_KW, ast.Constant(k))])
        if outs:
            target = ast.Name(outs[0], ast.Store()) if len(outs) == 1 else \
                ast.Tuple([ast.Name(n, ast.Store()) for n in outs], ast.Store())
            new = ast.Assign([target], call)
        else:
            new = ast.Expr(call)
        body.append(ast.fix_missing_locations(ast.copy_location(new, s)))
    host = ast.FunctionDef(m.name, m.args, body, m.decorator_list, m.returns, m.type_comment)
    return ast.fix_missing_locations(ast.copy_location(host, m)), funcs
