"""The parser's task features (a mixin of :class:`pypto.frontend.parser.FunctionParser`): runtime,
cluster and manual scopes and their scheduling hints, ``pl.spmd`` loops and scopes, ``pl.submit``
calls with their ``deps=`` / ``predicate=`` / block counts."""
from __future__ import annotations

import ast

from pypto.errors import (
    ParserError, ParserSyntaxError, ParserTypeError, PyptoError, Span, UnsupportedFeatureError,
)
from pypto.ir.tags import SCALAR, TENSOR_TAGS, RuntimeTag
from pypto.ir.visit import walk_expr
from pypto.ir.nodes import AssignStmt, Call, EvalStmt, Expr, FuncCall, ScopeStmt, Var
from pypto.ir.types import ScalarType, TensorType
from pypto.language.constructs import DslName, DslOp
from pypto.language.dtypes import TASK_ID
from pypto.language.enums import KERNEL_TYPES, FunctionType, Level, ScopeMode, SplitMode
from pypto.frontend.parse_values import (
    _MODE_INT, _UNBOUND, _SelfMethod, _assigned_names, _describe_static, _is_construct_call, _is_task_ids, kind_of,
    to_expr,
)


class TaskParsing:
    """Task scopes, ``pl.spmd`` and ``pl.submit`` (methods moved whole from ``FunctionParser``; they
    use its state and helpers through ``self``)."""

    def _end_task_scope(self, names: list[str], node: ast.With) -> None:
        """After a ``pl.at`` task scope: a tile or scalar first bound inside it lives on the core
        and ends with the task (only tensors flow out, as in the reference). Its name is unbound,
        so that a later ``t = ...`` (another scope's own tile of the same type) makes a new value
        instead of re-assigning the first task's, which made it a value carried from one task into
        another; reading it after the scope is a located error."""
        for n in dict.fromkeys(names):
            v = self.scope.get(n, _UNBOUND)
            if self.scope_depth or not isinstance(v, Var) or isinstance(v.type, TensorType) \
                    or (isinstance(v.type, ScalarType) and v.type.dtype == TASK_ID):
                continue
            del self.scope[n]
            if self.last_bound.get(n) is v:
                del self.last_bound[n]
            self.scope_locals[n] = self.span(node)

    def scheduling_hints(self, kw: dict, what: str):
        """Pop the keywords of ``pl.at`` / ``pl.spmd`` that steer the device's scheduling or code
        generation and cannot change a result, after checking them: ``allow_early_resolve`` and
        ``windowize`` (bools), ``sync_start`` (bool, pl.spmd) and ``optimizations=[pl.split(mode),
        pl.cross_core_slot(slot_num=n)]`` (a list literal, as in the reference). The simulators
        run each task once on one core, so none of them has an effect (docs/language.md), but for
        the split mode, which this returns (None: no split): ``pl.at`` keeps it on its scope and
        the outlined kernel gets it as its ``split`` attr (SplitVectorKernel halves the vector
        member of a mixed kernel between the lanes)."""
        for flag in ("allow_early_resolve", "windowize", "sync_start"):
            if flag in kw:
                v = self.resolve_static(kw[flag])
                if not isinstance(v, bool):
                    raise ParserTypeError(f"{what}: {flag} must be True or False, got {_describe_static(v)}",
                                          self.span(kw[flag]))
                del kw[flag]
        split = None   # the split mode (pl.at keeps it on its scope: the outlined kernel's split attr)
        self.last_slot_num = None   # pl.cross_core_slot(slot_num=n): pl.at keeps it on its scope too
        if "optimizations" in kw:
            node = kw.pop("optimizations")
            if not isinstance(node, (ast.List, ast.Tuple)):
                raise ParserTypeError(f"{what}: optimizations must be a list literal of pl.split(...) / "
                                      "pl.cross_core_slot(...) entries", self.span(node))
            for e in node.elts:
                fn = self.resolve_static(e.func) if isinstance(e, ast.Call) else None
                if not (isinstance(fn, DslName) and fn.name in ("split", "cross_core_slot")):
                    raise ParserTypeError(f"{what}: each optimizations entry must be pl.split(mode) or "
                                          "pl.cross_core_slot(slot_num=n)", self.span(e))
                args = [self.resolve_static(a) for a in e.args]
                kws = {k.arg: self.resolve_static(k.value) for k in e.keywords}
                if fn.name == "split":
                    mode = args[0] if args else kws.pop("mode", None)
                    if not isinstance(mode, SplitMode) or len(args) > 1 or set(kws) - {"slot_num"}:
                        raise ParserTypeError("pl.split takes a pl.SplitMode (and slot_num=n)", self.span(e))
                else:
                    if args or set(kws) != {"slot_num"}:
                        raise ParserTypeError("pl.cross_core_slot takes slot_num=n", self.span(e))
                slot = kws.get("slot_num")
                if slot is not None and (isinstance(slot, bool) or not isinstance(slot, int) or slot < 1):
                    raise ParserTypeError(f"slot_num must be a positive int, got {slot!r}", self.span(e))
                if fn.name == "split" and mode != SplitMode.NONE:
                    split = mode
                if slot is not None:
                    self.last_slot_num = slot
        return split

    def runtime_scope(self, node: ast.With, call: ast.Call) -> None:
        """``with pl.scope(mode=pl.ScopeMode.AUTO):`` — a runtime scope (the device's PTO2_SCOPE: a
        dependency-tracking and ring-memory boundary, never needed for correctness): its body is
        parsed in place. ``mode=pl.ScopeMode.MANUAL`` is ``pl.manual_scope()``."""
        if node.items[0].optional_vars is not None:
            raise ParserSyntaxError("'with pl.scope()' binds nothing", self.span(node.items[0].optional_vars))
        if len(call.args) > 1 or [k.arg for k in call.keywords if k.arg != "mode"]:
            raise ParserTypeError("pl.scope takes one argument: mode=pl.ScopeMode.AUTO|MANUAL", self.span(call))
        mode_node = call.args[0] if call.args else next((k.value for k in call.keywords), None)
        mode = self.resolve_static(mode_node) if mode_node is not None else ScopeMode.AUTO
        if not isinstance(mode, ScopeMode):
            raise ParserTypeError(f"pl.scope: mode must be pl.ScopeMode.AUTO or MANUAL, got {_describe_static(mode)}",
                                  self.span(call))
        if mode == ScopeMode.MANUAL:
            self.manual_scope(node, ast.copy_location(ast.Call(call.func, [], []), call))
            return
        for s in node.body:
            self.stmt(s)

    def cluster_scope(self, node: ast.With, call: ast.Call) -> None:
        """``with pl.cluster(name_hint=""):`` — the reference groups the dispatches inside onto one
        physical cluster (its OutlineClusterScopes makes the body a Group function). Here the body
        is parsed in place: each dispatch is already one task (a mixed kernel's AIC and AIV members
        run on one simulated cluster), so the grouping changes no value and no dependency; the
        printed program shows the body without the ``with`` (docs/compatibility.md)."""
        if node.items[0].optional_vars is not None:
            raise ParserSyntaxError("'with pl.cluster()' binds nothing", self.span(node.items[0].optional_vars))
        if call.args or [k.arg for k in call.keywords if k.arg != "name_hint"]:
            raise ParserTypeError("pl.cluster takes one keyword argument: name_hint=\"...\"", self.span(call))
        for k in call.keywords:
            hint = self.resolve_static(k.value)
            if not isinstance(hint, str) or (hint and not hint.isidentifier()):
                raise ParserTypeError("pl.cluster: name_hint must be an identifier string", self.span(k.value))
        if self.func_type not in (FunctionType.Orchestration, FunctionType.Opaque, FunctionType.Inline):
            raise ParserError("pl.cluster() is only allowed in an orchestration function", self.span(node),
                              "put the pl.cluster() scope around the kernel dispatches in orchestration code")
        for s in node.body:
            self.stmt(s)

    def manual_scope(self, node: ast.With, call: ast.Call) -> None:
        """``with pl.manual_scope():`` — every task dispatched inside skips dependency inference."""
        if node.items[0].optional_vars is not None:
            raise ParserSyntaxError("'with pl.manual_scope()' binds nothing", self.span(node.items[0].optional_vars))
        if call.args or call.keywords:
            raise ParserTypeError("pl.manual_scope() takes no arguments", self.span(call))
        if self.manual_depth:
            raise ParserError("pl.manual_scope() cannot be nested inside another pl.manual_scope()", self.span(call),
                              "a MANUAL scope may not nest in a MANUAL scope; drop the inner 'with'")
        if self.scope_depth or self.func_type in KERNEL_TYPES:
            raise ParserError("pl.manual_scope() is orchestration-only; it cannot be used inside a pl.at scope "
                              "or an InCore function", self.span(call))
        self.manual_depth += 1
        try:
            for s in node.body:   # no new name scope: values defined inside stay visible after it
                self.stmt(s)
        finally:
            self.manual_depth -= 1

    def task_deps(self, node: ast.expr) -> tuple:
        """``deps=[tid, tids, None, ...]``: TaskId scalars or TaskId arrays; ``None`` is dropped."""
        if not isinstance(node, (ast.List, ast.Tuple)):
            raise ParserTypeError("deps= must be a literal list, e.g. deps=[tid]", self.span(node))
        out = []
        for e in node.elts:
            v = self.expr(e)
            if v is None:
                continue
            if isinstance(v, Expr) and _is_task_ids(v.type):
                out.append(v)
                continue
            hint = "use no_dep_args=[t] to opt a tensor out of dependency tracking" \
                if isinstance(v, Expr) and isinstance(v.type, TensorType) else \
                "bind one with 'with pl.at(level=pl.Level.CORE_GROUP) as tid:'"
            raise ParserTypeError(f"deps= takes TaskIds (pl.TASK_ID values or arrays of them), got "
                                  f"{_describe_static(v)}", self.span(e), hint)
        return tuple(out)

    def tensor_list(self, node: ast.expr, what: str) -> tuple:
        if not isinstance(node, (ast.List, ast.Tuple)):
            raise ParserTypeError(f"{what}= must be a literal list of tensors, e.g. {what}=[out]", self.span(node))
        out = []
        for e in node.elts:
            v = self.expr(e)
            if not (isinstance(v, Var) and isinstance(v.type, TensorType)):
                raise ParserTypeError(f"{what}= takes tensors of the orchestration, got {_describe_static(v)}",
                                      self.span(e))
            out.append(v)
        return tuple(out)

    def spmd_head(self, call: ast.Call, span: Span) -> tuple:
        """The arguments of ``pl.spmd(n, name_hint=, deps=, predicate=, sync_start=, optimizations=,
        allow_early_resolve=)``: ``(block count, name_hint, deps, predicate)``."""
        kw = {k.arg: k.value for k in call.keywords}
        count = list(call.args)
        if not count and "core_num" in kw:   # the reference's parameter name: pl.spmd(core_num=4)
            count = [kw.pop("core_num")]
        if len(count) != 1:
            raise ParserTypeError("pl.spmd takes one block count: pl.spmd(n) or pl.spmd(core_num=n)", span)
        self.scheduling_hints(kw, "pl.spmd")
        name_hint = ""
        if "name_hint" in kw:
            name_hint = self.resolve_static(kw.pop("name_hint"))
            if not isinstance(name_hint, str) or (name_hint and not name_hint.isidentifier()):
                raise ParserTypeError("name_hint must be an identifier string", span)
        deps = self.task_deps(kw.pop("deps")) if "deps" in kw else ()
        pred_node = kw.pop("predicate", None)
        predicate = self.task_predicate(pred_node) if pred_node is not None else ()
        if predicate and not deps:
            raise ParserTypeError("pl.spmd(predicate=...) needs deps= naming the task that produces the "
                                  "predicate's tensor", self.span(pred_node),
                                  "with pl.spmd(n, deps=[tid], predicate=(t[0] == 1)) as tid2:")
        if kw:
            raise UnsupportedFeatureError(f"pl.spmd keyword(s) not supported: {', '.join(kw)}", span)
        n = self.block_count(count[0], "pl.spmd block count")
        if self.func_type not in (FunctionType.Orchestration, FunctionType.Opaque, FunctionType.Inline) \
                or self.scope_depth:
            raise ParserError("pl.spmd(n) is only allowed in an orchestration function, outside pl.at", span,
                              "its body is the kernel: each block runs it on one core")
        return n, name_hint, deps, predicate

    def spmd_for(self, node: ast.For, call: ast.Call) -> None:
        """``for i in pl.spmd(n):`` — one task of ``n`` blocks whose kernel is the body, ``i`` its
        block index (``pl.tile.get_block_idx()``): the scope ``with pl.spmd(n):`` with ``i`` bound
        first thing in it (docs/language.md, "SPMD")."""
        span = self.span(node)
        n, hint, deps, predicate = self.spmd_head(call, span)
        name, _ = self._loop_var(node.target)
        idx = self.make_call("tile.get_block_idx", [], {}, self.span(node.target), node.target)
        self._spmd_scope(node, span, n, hint, deps, predicate, None, (name, idx))

    def spmd_with(self, node: ast.With, call: ast.Call) -> None:
        """``with pl.spmd(n, deps=[...], predicate=...) [as tid]:`` — one task of ``n`` blocks.

        A body that is one call of a kernel function (``out = self.k(a, out)``) dispatches that
        kernel as the task; any other body is the kernel itself (outlined as a ``pl.at`` scope is),
        reading its block with ``pl.tile.get_block_idx()``."""
        span = self.span(node)
        item = node.items[0]
        if item.optional_vars is not None and not isinstance(item.optional_vars, ast.Name):
            raise ParserSyntaxError("'with pl.spmd(...) as tid' needs a plain name", self.span(item.optional_vars))
        n, hint, deps, predicate = self.spmd_head(call, self.span(call))
        tid_name = item.optional_vars.id if item.optional_vars is not None else None
        body = node.body
        if len(body) == 1 and isinstance(body[0], (ast.Assign, ast.Expr)) and self._is_kernel_call(body[0].value):
            # (a name_hint names an outlined kernel: a dispatch body outlines nothing, so it has no effect)
            saved, self.block = self.block, []
            try:
                self.stmt(body[0])
                stmts = self.block
            finally:
                self.block = saved
            tid = self.target_var(tid_name, ScalarType(TASK_ID), self.span(item.optional_vars)) \
                if tid_name is not None else None
            done = False
            for st in stmts:
                v = st.value if isinstance(st, AssignStmt) else st.expr if isinstance(st, EvalStmt) else None
                if isinstance(v, FuncCall) and not done:
                    v = v.replace(block_num=n, deps=tuple(v.deps) + tuple(deps), predicate=predicate or v.predicate,
                                  task_id_var=tid, manual=v.manual or self.manual_depth > 0)
                    st = st.replace(value=v) if isinstance(st, AssignStmt) else \
                        AssignStmt(Var("_", v.type, st.span), v, st.span)
                    done = True
                self.emit(st)
            if tid is not None:
                self.bind(tid_name, tid, item.optional_vars)
            return
        self._spmd_scope(node, span, n, hint, deps, predicate, item.optional_vars, None)

    def split_aiv_for(self, node: ast.For, call: ast.Call) -> None:
        """``for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.M):`` — a region whose body runs on
        both vector lanes of the cluster, ``aiv_id`` the lane (0 or 1). The region is transparent
        (its names stay visible after it, as the reference's): the body is parsed in place after
        ``aiv_id = pl.tile.split_aiv_lane(mode=M)``, the region's head, which LowerAutoVectorSplit
        consumes (pypto.ops.aiv_split). ``pl.aiv_shard`` / ``pl.aic_gather`` in the body take the
        region's mode. Outside any ``pl.at`` scope the region is wrapped in one (as the reference
        does), so it becomes a kernel of its own."""
        span = self.span(node)
        if node.orelse:
            raise ParserSyntaxError("a pl.split_aiv region has no 'else'", span)
        n = [self.resolve_static(a) for a in call.args]
        kw = {k.arg: k.value for k in call.keywords}
        mode = self.resolve_static(kw.pop("mode")) if "mode" in kw else None
        if kw or len(n) != 1 or isinstance(n[0], bool) or n[0] != 2:
            raise ParserTypeError("pl.split_aiv takes the lane count 2 and mode=pl.SplitMode.<M>: "
                                  "for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN)", self.span(call))
        if not isinstance(mode, SplitMode):
            raise ParserTypeError(f"pl.split_aiv(mode=...) must be a pl.SplitMode, got {_describe_static(mode)}",
                                  self.span(call), "NONE: both lanes run the whole body; UP_DOWN / LEFT_RIGHT: "
                                  "pl.aiv_shard / pl.aic_gather split rows / columns between the lanes")
        if self.split_aiv_modes:
            raise ParserError("pl.split_aiv regions do not nest", span, "close the outer region first")
        if not self.scope_depth:
            if self.func_type in KERNEL_TYPES:
                raise ParserError("a pl.split_aiv region belongs in a pl.at(level=pl.Level.CORE_GROUP) scope or "
                                  "a plain @pl.function / @pl.jit body, not in a kernel function", span,
                                  "write it in the orchestrating function: it is outlined into a kernel there")
            # a bare region: its own CORE_GROUP scope (outlined into a kernel of its own)
            self.scope_depth += 1
            saved, saved_hoist = self.block, self.hoist_to
            self.block = []
            self.hoist_to = (saved, self.block)
            unbound_before = [x for x in _assigned_names(node.body) if x not in self.scope]
            try:
                self._split_aiv_body(node, mode)
                body = self.block
            finally:
                self.block, self.hoist_to = saved, saved_hoist
                self.scope_depth -= 1
            self._end_task_scope(unbound_before, node)
            self.emit(ScopeStmt(Level.CORE_GROUP, "", tuple(body), span, None, (), (), (), self.manual_depth > 0))
            return
        self._split_aiv_body(node, mode)

    def _split_aiv_body(self, node: ast.For, mode: SplitMode) -> None:
        name, _ = self._loop_var(node.target)
        lane = self.make_call("tile.split_aiv_lane", [], {"mode": _MODE_INT[mode]}, self.span(node.target), node.target)
        self.define(name, lane, node.target)
        self.split_aiv_modes.append(mode)
        try:
            for s in node.body:
                self.stmt(s)
        finally:
            self.split_aiv_modes.pop()

    def _is_kernel_call(self, v: ast.expr) -> bool:
        """Whether ``v`` calls a kernel function (``self.k(...)`` or a ``@pl.jit.incore`` function)."""
        if not isinstance(v, ast.Call):
            return False
        try:
            fn = self.resolve_static(v.func)
        except PyptoError:
            return False
        return isinstance(fn, _SelfMethod) or (self.resolver.call_function is not None
                                               and not isinstance(fn, (DslName, DslOp))
                                               and callable(fn) and hasattr(fn, "fn"))

    def _spmd_scope(self, node, span, n, hint, deps, predicate, tid_node, index) -> None:
        """Emit the ScopeStmt of an inline multi-block body (``index``: ``(name, value)`` bound first)."""
        self.scope_depth += 1
        saved, saved_hoist = self.block, self.hoist_to
        self.block = []
        self.hoist_to = (saved, self.block)
        try:
            if index is not None:
                self.define(index[0], index[1], node)
            for s in node.body:
                self.stmt(s)
            body = self.block
        finally:
            self.block, self.hoist_to = saved, saved_hoist
            self.scope_depth -= 1
        tid = None
        if tid_node is not None:
            tid = self.target_var(tid_node.id, ScalarType(TASK_ID), self.span(tid_node))
        self.emit(ScopeStmt(Level.CORE_GROUP, hint, tuple(body), span, tid, deps, (), (), self.manual_depth > 0,
                            block_num=n, predicate=predicate))
        if tid is not None:
            self.bind(tid_node.id, tid, tid_node)

    def task_predicate(self, node: ast.expr) -> tuple:
        """``predicate=(t[i, j] OP int_literal)`` (docs/language.md, "Task dependencies"; OP one of == != < <= > >=):
        ``(cmp, value, t, i, j)`` for :attr:`FuncCall.predicate`."""
        span = self.span(node)
        hint = "predicate=(flags[0] == 1): one element of a tensor, a comparison, an int literal"
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in self._CMPOPS
                and isinstance(node.left, ast.Subscript)):
            raise ParserTypeError("pl.submit predicate= must be `tensor[index] OP int_literal`", span, hint)
        value = self.expr(node.comparators[0])
        if type(value) is not int:
            raise ParserTypeError(f"the predicate compares with an int literal, got {_describe_static(value)}",
                                  self.span(node.comparators[0]), hint)
        t = self.expr(node.left.value)
        if not (isinstance(t, Var) and isinstance(t.type, TensorType)):
            raise ParserTypeError(f"the predicate reads an element of a tensor, got {_describe_static(t)}",
                                  self.span(node.left.value), hint)
        idx_node = node.left.slice
        elts = idx_node.elts if isinstance(idx_node, ast.Tuple) else [idx_node]
        if any(isinstance(e, ast.Slice) for e in elts) or len(elts) != len(t.type.shape):
            raise ParserTypeError(f"the predicate reads one element: {len(t.type.shape)} indices for "
                                  f"'{t.name}' of shape {list(t.type.shape)}, got {ast.unparse(idx_node)}",
                                  self.span(idx_node), hint)
        index = []
        for e in elts:
            v = self.expr(e)
            if type(v) is int:
                dim = t.type.shape[len(index)]
                if type(dim) is int and not 0 <= v < dim:
                    raise ParserTypeError(f"predicate index {v} is outside dimension {len(index)} of '{t.name}' "
                                          f"(size {dim})", self.span(e))
            elif not (isinstance(v, Expr) and kind_of(v) == "scalar") or any(
                    isinstance(x, (Call, FuncCall)) for x in walk_expr(v)):
                raise ParserTypeError(f"a predicate index must be a scalar variable or expression, got "
                                      f"{_describe_static(v)}", self.span(e),
                                      "bind a value read from a tensor to a name first: i = t[0]")
            index.append(to_expr(v, self.span(e)))
        return (self._CMPOPS[type(node.ops[0])], value, t, *index)

    def call_attrs(self, node: ast.expr, nargs: int) -> dict:
        """``attrs={"arg_directions": ["INPUT", ...], "compiler_dep_edges": {i: [site, ...]}}`` on a
        kernel call: the runtime tags DeriveCallDirections decided (printed in pass dumps after it),
        one per argument, and the producer sites AutoDeriveTaskDependencies recorded per argument.
        Returns the FuncCall fields they set."""
        span = self.span(node)
        try:
            value = ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError):
            value = None
        if not isinstance(value, dict) or set(value) - {"arg_directions", "compiler_dep_edges"}:
            raise ParserTypeError('attrs= must be a literal dict {"arg_directions": [...], '
                                  '"compiler_dep_edges": {...}}', span)
        edges = value.get("compiler_dep_edges", {})
        if not isinstance(edges, dict) or any(
                type(i) is not int or not 0 <= i < nargs or not isinstance(ks, (list, tuple))
                or any(type(k) is not int or k < 0 for k in ks) for i, ks in edges.items()):
            raise ParserTypeError(f"compiler_dep_edges must map argument indices (< {nargs}) to lists of "
                                  f"producer sites (ints >= 0), got {edges!r}", span)
        tags = value.get("arg_directions", [])
        if not isinstance(tags, (list, tuple)) or any(t not in TENSOR_TAGS | {SCALAR} for t in tags):
            raise ParserTypeError(f"arg_directions must be a list of "
                                  f"{', '.join(sorted(TENSOR_TAGS | {SCALAR}))}, got {tags!r}", span)
        if tags and len(tags) != nargs:
            raise ParserTypeError(f"arg_directions has {len(tags)} tags for {nargs} arguments", span)
        return {"arg_directions": tuple(RuntimeTag(t) for t in tags),  # as DeriveCallDirections writes them
                "compiler_dep_edges": tuple((i, tuple(ks)) for i, ks in sorted(edges.items()))}

    def submit_call(self, node: ast.Call) -> FuncCall:
        """``pl.submit(self.k, *args, deps=[...], dumps=[...])`` (``pl.no_dep(t)`` marks an argument)."""
        span = self.span(node)
        if not node.args:
            raise ParserTypeError("pl.submit needs the kernel: pl.submit(self.kernel, *args)", span)
        fn = self.expr(node.args[0])
        callee = None
        if isinstance(fn, _SelfMethod):
            callee = self.resolver.self_function(fn.name, span)
        elif self.resolver.call_function is not None:
            callee = self.resolver.call_function(fn, [self.expr(a) for a in node.args[1:]
                                                      if not _is_construct_call(a, self.resolve_static, "no_dep")],
                                                 span)
        if callee is None:
            raise ParserTypeError(f"pl.submit needs a kernel function, got {_describe_static(fn)}",
                                  self.span(node.args[0]))
        if not _is_construct_call(node, self.resolve_static, "spmd_submit"):
            return self.function_call(callee, node, node.args[1:], node.keywords)
        # pl.spmd_submit(self.k, *args, core_num=n, sync_start=False, deps=..., predicate=...): one
        # task of n blocks
        kw = {k.arg: k.value for k in node.keywords}
        if "core_num" not in kw:
            raise ParserTypeError("pl.spmd_submit needs core_num=n (the block count, by keyword)", span,
                                  "out, tid = pl.spmd_submit(self.kernel, x, out, core_num=4)")
        blocks = self.block_count(kw["core_num"], "pl.spmd_submit core_num")
        hints = {k: kw[k] for k in ("sync_start",) if k in kw}
        self.scheduling_hints(hints, "pl.spmd_submit")
        rest = [k for k in node.keywords if k.arg not in ("core_num", "sync_start")]
        return self.function_call(callee, node, node.args[1:], rest).replace(block_num=blocks)

    def block_count(self, node: ast.expr, what: str) -> Expr:
        """The block count of a multi-block task: a positive int, or an integer scalar known at run time."""
        n = self.expr(node)
        if isinstance(n, bool) or not (isinstance(n, int) or (kind_of(n) == "scalar" and
                                                              not n.type.dtype.is_float())):
            raise ParserTypeError(f"{what} must be an integer, got {_describe_static(n)}", self.span(node))
        if isinstance(n, int) and n < 1:
            raise ParserTypeError(f"{what} must be >= 1, got {n}", self.span(node))
        return to_expr(n, self.span(node))
