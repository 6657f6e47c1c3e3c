"""``pypto.ir.IRBuilder`` (issue 14): programs built with it equal their parsed DSL twins
(tests/kernels_ir_builder.py), print and parse back, compile and run on the simulator bit-exact
against torch; misuse is a located IRBuilderError."""
import kernels_ir_builder as K
import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import InvalidOperationError, IRBuilderError, IRBuilderTypeError, UnsupportedFeatureError
from pypto.ir.nodes import BinOp, ConstInt, ForStmt, IfStmt, ScopeStmt, WhileStmt, YieldStmt
from pypto.ir.types import DynDim, ScalarType, TileType
from pypto.language.program import parse as parse_program
from pypto.runtime import RunConfig, run

T16 = [16, 16]
OUT = ir.ParamDirection.Out


def _tensor(ib, shape=T16, dtype=pl.FP32):
    return ib.tensor_type(shape, dtype)


def _orchestration(ib, p, kernel, n_in):
    """``main(ins..., out)`` calling ``kernel`` with the same arguments."""
    with ib.function("main", type=ir.FunctionType.Orchestration) as f:
        ins = [f.param(n, _tensor(ib)) for n in "ab"[:n_in]]
        out = f.param("out", _tensor(ib), direction=OUT)
        f.return_type(_tensor(ib))
        ib.assign(out, ib.call(p.declare_function(kernel), *ins, out))
        ib.return_stmt(out)
    p.add_function(f.get_result())


def build_add_loop():
    ib = ir.IRBuilder()
    with ib.program("AddLoop") as p:
        with ib.function("kernel", type=ir.FunctionType.InCore) as f:
            a, b = f.param("a", _tensor(ib)), f.param("b", _tensor(ib))
            out = f.param("out", _tensor(ib), direction=OUT)
            f.return_type(_tensor(ib))
            ta = ib.let("ta", ib.call("tile.load", a, [0, 0], T16))
            tb = ib.let("tb", ib.call("tile.load", b, offsets=[0, 0], shapes=T16))
            acc = ib.let("acc", ta)
            i = ib.var("i", ScalarType(pl.INDEX))
            assert not ib.in_loop()
            with ib.for_loop(i, 0, 3, 1):
                assert ib.in_loop() and ib.in_function() and not ib.in_if()
                ib.assign(acc, ib.call("tile.add", acc, tb))
            ib.assign(out, ib.call("tile.store", acc, [0, 0], out))
            ib.return_stmt(out)
        p.add_function(f.get_result())
        _orchestration(ib, p, "kernel", 2)
    return p.get_result()


def build_carried():
    ib = ir.IRBuilder()
    with ib.program("Carried") as p:
        with ib.function("kernel", type=ir.FunctionType.InCore) as f:
            a = f.param("a", _tensor(ib))
            out = f.param("out", _tensor(ib), direction=OUT)
            f.return_type(_tensor(ib))
            ta = ib.let("ta", ib.call("tile.load", a, [0, 0], T16))
            i = ib.var("i", ScalarType(pl.INDEX))
            with ib.for_loop(i, 1, 4, 1) as loop:
                acc = loop.iter_arg("acc", ta)
                loop.return_var("acc_out")
                acc2 = ib.let("acc2", ib.call("tile.mul", acc, ta))
                ib.emit(YieldStmt([acc2]))
            assert isinstance(loop.get_result(), ForStmt) and loop.outputs() == [loop.output(0)]
            ib.assign(out, ib.call("tile.store", loop.output(), [0, 0], out))
            ib.return_stmt(out)
        p.add_function(f.get_result())
        _orchestration(ib, p, "kernel", 1)
    return p.get_result()


def build_scoped():
    ib = ir.IRBuilder()
    with ib.program("Scoped") as p:
        with ib.function("main") as f:
            a, b = f.param("a", _tensor(ib)), f.param("b", _tensor(ib))
            out = f.param("out", _tensor(ib), direction=OUT)
            f.return_type(_tensor(ib))
            with ib.scope(ir.ScopeKind.InCore, name_hint="mul_add") as s:
                ta = ib.let("ta", ib.call("tile.load", a, [0, 0], T16))
                tb = ib.let("tb", ib.call("tile.load", b, [0, 0], T16))
                ib.assign(out, ib.call("tile.store", ib.call("tile.add", ib.call("tile.mul", ta, tb), ta), [0, 0], out))
            assert isinstance(s.get_result(), ScopeStmt)
            ib.return_stmt(out)
        p.add_function(f.get_result())
    return p.get_result()


@pytest.mark.parametrize("build, twin", [(build_add_loop, K.AddLoop), (build_carried, K.Carried),
                                         (build_scoped, K.Scoped)])
def test_a_built_program_equals_its_parsed_twin_and_prints_back(build, twin):
    prog = build()
    ir.assert_structural_equal(prog, twin)
    text = prog.as_python()
    assert text == twin.as_python()
    ir.assert_structural_equal(parse_program(text), prog)


def _data(n=2, seed=14):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(16, 16, generator=g) for _ in range(n)]


def test_built_programs_run_bit_exact_on_the_simulator():
    cfg = RunConfig(platform="a2a3sim")
    a, b = _data()
    out = torch.zeros(16, 16)
    run(build_add_loop(), a, b, out, config=cfg)
    assert torch.equal(out, ((a + b) + b) + b)
    out = torch.zeros(16, 16)
    run(build_carried(), a, out, config=cfg)
    assert torch.equal(out, ((a * a) * a) * a)
    out = torch.zeros(16, 16)
    ir.compile(build_scoped())(a, b, out, config=cfg)
    assert torch.equal(out, a * b + a)


def _branch_program():
    """``out = a + b`` when ``flag > 0``, else ``a - b``: an if with a result (phi) and a while loop
    counting a tile up ``n`` times: ``out += a`` n times (the result then minus n * a is the branch)."""
    ib = ir.IRBuilder()
    with ib.program("Branch") as p:
        with ib.function("kernel", type=ir.FunctionType.InCore) as f:
            a, b = f.param("a", _tensor(ib)), f.param("b", _tensor(ib))
            flag = f.param("flag", ScalarType(pl.INDEX))
            n = f.param("n", ScalarType(pl.INDEX))
            out = f.param("out", _tensor(ib), direction=OUT)
            f.return_type(_tensor(ib))
            ta = ib.let("ta", ib.call("tile.load", a, [0, 0], T16))
            tb = ib.let("tb", ib.call("tile.load", b, [0, 0], T16))
            with ib.if_stmt(BinOp("gt", flag, ConstInt(0), ScalarType(pl.BOOL))) as br:
                assert ib.in_if()
                br.return_var("r", TileType((16, 16), pl.FP32))
                ib.emit(YieldStmt((ib.let("s", ib.call("tile.add", ta, tb)),)))
                br.else_()
                ib.emit(YieldStmt((ib.let("d", ib.call("tile.sub", ta, tb)),)))
            assert isinstance(br.get_result(), IfStmt)
            with ib.while_loop(True) as w:
                k = w.iter_arg("k", 0)
                acc = w.iter_arg("acc", br.output())
                w.set_condition(BinOp("lt", k, n, ScalarType(pl.BOOL)))
                w.return_var("k_out")
                w.return_var("acc_out")
                ib.emit(YieldStmt((ib.let("k2", BinOp("add", k, ConstInt(1), ScalarType(pl.INDEX))),
                                   ib.let("acc2", ib.call("tile.add", acc, ta)))))
            assert isinstance(w.get_result(), WhileStmt)
            ib.assign(out, ib.call("tile.store", w.output(1), [0, 0], out))
            ib.return_stmt(out)
        p.add_function(f.get_result())
        with ib.function("main", type=ir.FunctionType.Orchestration) as f:
            a, b = f.param("a", _tensor(ib)), f.param("b", _tensor(ib))
            flag, n = f.param("flag", ScalarType(pl.INDEX)), f.param("n", ScalarType(pl.INDEX))
            out = f.param("out", _tensor(ib), direction=OUT)
            f.return_type(_tensor(ib))
            ib.assign(out, ib.call("kernel", a, b, flag, n, out))
            ib.return_stmt(out)
        p.add_function(f.get_result())
    return p.get_result()


@pytest.mark.parametrize("flag, n", [(1, 0), (1, 2), (0, 3)])
def test_if_and_while_built_run_bit_exact(flag, n):
    a, b = _data(seed=flag * 10 + n)
    out = torch.zeros(16, 16)
    prog = _branch_program()
    ir.assert_structural_equal(parse_program(prog.as_python()), prog)
    run(prog, a, b, flag, n, out, config=RunConfig(platform="a2a3sim"))
    want = a + b if flag > 0 else a - b
    for _ in range(n):
        want = want + a
    assert torch.equal(out, want)


def test_dynamic_dims_and_a_spmd_scope_run_for_every_extent():
    """A ``[M, 16]`` tensor (``M`` a pl.dynamic dim, given as a DynDim or as the reference's integer
    Var) processed by a 2-block Spmd scope whose blocks take alternate 8-row chunks."""
    ib = ir.IRBuilder()
    m_var = ib.var("M", ScalarType(pl.INDEX))
    with ib.program("Rows") as p:
        with ib.function("main") as f:
            a = f.param("a", ib.tensor_type([DynDim("M"), 16], pl.FP32))
            out = f.param("out", ib.tensor_type([m_var, 16], pl.FP32), direction=OUT)
            f.return_type(out.type)
            with ib.scope(ir.ScopeKind.Spmd, core_num=2):
                blk = ib.let("blk", ib.call("tile.get_block_idx"))
                rows = ib.let("rows", ib.call("tensor.dim", a, 0))
                r = ib.var("r", ScalarType(pl.INDEX))
                with ib.for_loop(r, BinOp("mul", blk, ConstInt(8), ScalarType(pl.INDEX)), rows, 16):
                    t = ib.let("t", ib.call("tile.load", a, [r, 0], [8, 16]))
                    ib.assign(out, ib.call("tile.store", ib.call("tile.mul", t, t), [r, 0], out))
            ib.return_stmt(out)
        p.add_function(f.get_result())
    prog = p.get_result()
    assert prog.functions[0].params[1].type.shape[0] == DynDim("M")
    for rows in (8, 40):
        a = torch.randn(rows, 16)
        out = torch.zeros(rows, 16)
        run(prog, a, out, config=RunConfig(platform="a2a3sim"))
        assert torch.equal(out, a * a)


def test_a_manual_runtime_scope_makes_its_tasks_manual_and_a_cluster_scope_is_in_place():
    ib = ir.IRBuilder()
    with ib.program("M") as p:
        with ib.function("main") as f:
            a = f.param("a", _tensor(ib))
            out = f.param("out", _tensor(ib), direction=OUT)
            f.return_type(_tensor(ib))
            with ib.scope(ir.ScopeKind.Runtime, manual=True) as rt:
                with ib.scope(ir.ScopeKind.Cluster) as cl:
                    with ib.scope(ir.ScopeKind.InCore):
                        ib.assign(out, ib.call("tile.store", ib.call("tile.load", a, [0, 0], T16), [0, 0], out))
            ib.return_stmt(out)
        p.add_function(f.get_result())
    body = p.get_result().functions[0].body
    assert isinstance(body[0], ScopeStmt) and body[0].manual
    assert rt.get_result() == cl.get_result() == (body[0],)
    a = torch.randn(16, 16)
    out = torch.zeros(16, 16)
    run(p.get_result(), a, out, config=RunConfig(platform="a2a3sim"))
    assert torch.equal(out, a)


def test_types_memrefs_views_and_attrs():
    ib = ir.IRBuilder()
    mr = ib.memref(ir.MemorySpace.Vec, 0x100, 1024, 3)
    assert (mr.base, mr.offset, mr.size, mr.addr) == ("mem_vec_3", 0, 1024, 0x100)
    tv = ib.tile_view([16, 8], [1, 16], 0)
    t = ib.tile_type([16, 16], pl.FP32, memref=mr, tile_view=tv, memory_space=ir.MemorySpace.Vec)
    assert t == TileType((16, 16), pl.FP32, ir.MemorySpace.Vec, (16, 8), mr)
    assert ib.tensor_type([4, 8], pl.FP16, tensor_view=ib.tensor_view([8, 1], pl.TensorLayout.ND)).shape == (4, 8)
    with pytest.raises(UnsupportedFeatureError, match="strided tensors"):
        ib.tensor_type([4, 8], pl.FP16, tensor_view=ib.tensor_view([16, 1], pl.TensorLayout.ND))
    with pytest.raises(IRBuilderTypeError, match="needs its memory_space"):
        ib.tile_type([16, 16], pl.FP32, memref=mr)
    with ib.function("k", type=ir.FunctionType.InCore, attrs={"dual_aiv_dispatch": True}) as f:
        ib.add_function_attrs({"split": pl.SplitMode.UP_DOWN})
        with pytest.raises(IRBuilderError, match="duplicate function attribute 'split'"):
            ib.add_function_attrs({"split": pl.SplitMode.NONE})
    assert f.get_result().attrs == (("dual_aiv_dispatch", True), ("split", pl.SplitMode.UP_DOWN))
    i = ib.var("i", ScalarType(pl.INDEX))
    with ib.function("g") as f:
        with ib.for_loop(i, 0, 4, 1, kind=ir.ForKind.Unroll,
                         attrs={"b": 1, "a": True}) as loop:
            pass
    assert loop.get_result().attrs == (("a", True), ("b", 1))
    with ib.function("h") as f:
        with ib.for_loop(i, 0, 8, 1, kind=ir.ForKind.Pipeline, attrs={"pipeline_stages": 2}) as loop:
            pass
    assert loop.get_result().stage == 2 and loop.get_result().attrs == ()


def test_a_construct_left_open_is_reported_where_it_began():
    ib = ir.IRBuilder()
    with pytest.raises(IRBuilderError,
                       match=r"cannot end program 'P' .*: function 'f' \(begun at .*test_ir_builder.py"):
        with ib.program("P"):
            ib.function("f").__enter__()   # never exited
    assert not ib._stack
    with pytest.raises(IRBuilderError, match="cannot begin function 'g': already inside function 'f'"):
        ib.function("f").__enter__()
        ib.function("g")


# ----------------------------------------------------------------------------- misuse


def _here_line(err) -> str:
    return str(err.value).splitlines()[0]


def test_misuse_is_a_located_builder_error():
    ib = ir.IRBuilder()
    i = ib.var("i", ScalarType(pl.INDEX))
    with pytest.raises(IRBuilderError, match="not inside a function") as e:
        ib.assign(i, 0)
    assert "test_ir_builder.py:" in _here_line(e) and "ib.assign(i, 0)" in str(e.value) and "^" in str(e.value)
    with pytest.raises(IRBuilderError, match="cannot begin function 'inner': already inside function 'outer'"):
        with ib.function("outer"):
            with ib.function("inner"):
                pass
    assert not ib.in_function()   # the failed block was dropped: the builder is usable again
    with pytest.raises(IRBuilderError, match="2 iteration arguments but 1 return variables"):
        with ib.function("f"):
            with ib.for_loop(i, 0, 2, 1) as loop:
                loop.iter_arg("x", 0)
                loop.iter_arg("y", 1)
                loop.return_var("x_out")
                ib.emit(YieldStmt((ConstInt(1), ConstInt(2))))
    with pytest.raises(IRBuilderError, match="does not end with a yield"):
        with ib.function("f"):
            with ib.for_loop(i, 0, 2, 1) as loop:
                loop.iter_arg("x", 0)
                loop.return_var("x_out")
    with pytest.raises(IRBuilderError, match="is not complete yet"):
        with ib.function("f") as f:
            f.get_result()
    with pytest.raises(IRBuilderError, match="already in the else branch"):
        with ib.function("f"):
            with ib.if_stmt(True) as b:
                b.else_()
                b.else_()
    with pytest.raises(IRBuilderError, match="has return variables but no else branch"):
        with ib.function("f"):
            with ib.if_stmt(True) as b:
                b.return_var("r", ScalarType(pl.INDEX))
                ib.emit(YieldStmt((ConstInt(1),)))
    with pytest.raises(IRBuilderError, match="param can only be called directly inside a function"):
        with ib.function("f") as f:
            with ib.for_loop(i, 0, 1, 1):
                f.param("x", ScalarType(pl.INDEX))
    with ib.program("P") as p:   # (as the reference: declared and never added, and empty, is allowed)
        assert p.declare_function("helper") is p.get_global_var("helper")
        with pytest.raises(IRBuilderError, match="is declared but not added to the program yet"):
            with ib.function("main"):
                ib.call(p.get_global_var("helper"))
    assert p.get_result().functions == ()
    with pytest.raises(IRBuilderError, match="function 'nonexistent' is not declared"):
        with ib.program("Q") as q:
            q.get_global_var("nonexistent")
    assert not ib._stack


def test_type_errors_and_refused_constructs():
    ib = ir.IRBuilder()
    i = ib.var("i", ScalarType(pl.INDEX))
    with ib.function("f"):
        with pytest.raises(IRBuilderTypeError, match="type mismatch in iter_arg 'x'") as e, \
                ib.for_loop(i, 0, 1, 1) as loop:
            loop.iter_arg("x", 0, type=ScalarType(pl.FP32))
        assert isinstance(e.value, ValueError) and isinstance(e.value, TypeError)
        with pytest.raises(IRBuilderTypeError, match="a condition must be a BOOL scalar"):
            ib.if_stmt(ConstInt(3))
        with pytest.raises(IRBuilderTypeError, match="override for 'y' is incompatible"):
            ib.let("y", 1, type=TileType((16, 16), pl.FP32))
        with pytest.raises(InvalidOperationError, match="no parameter"):
            ib.call("tile.add", ConstInt(1), rhs=ConstInt(2), bogus=3)
        with pytest.raises(IRBuilderError, match="no function of the program"):
            ib.call("kernel_not_there", 1)
        with pytest.raises(UnsupportedFeatureError, match="no loop exits"):
            ib.break_stmt()
        with pytest.raises(UnsupportedFeatureError, match="no loop exits"):
            ib.continue_stmt()
    with pytest.raises(IRBuilderError, match="InCore scope is only allowed in an orchestration"):
        with ib.function("k", type=ir.FunctionType.InCore):
            with ib.scope(ir.ScopeKind.InCore):
                pass
    with pytest.raises(IRBuilderError, match="CommDomain cannot be built"):
        with ib.function("o"):
            with ib.scope(ir.ScopeKind.CommDomain):
                pass


def test_reference_style_scalar_code_builds_the_same_ir():
    """Builder code in the reference's style (``ir.Add(x, y, dtype, span)``, ``ir.ConstInt(v, dtype,
    span)``, ``ir.YieldStmt([v], span)``): a loop summing ``i`` and an if taking the larger of two
    values. The scalar constructors build our BinOps; the function prints and parses back. (Loop
    values are INDEX, as a ``pl.range`` variable parses.)"""
    from pypto.language.dtypes import INDEX

    sp = ir.Span.unknown()
    ib = ir.IRBuilder()
    with ib.function("sum_max") as f:
        n = f.param("n", ir.ScalarType(INDEX))
        y = f.param("y", ir.ScalarType(INDEX))
        f.return_type(ir.ScalarType(INDEX))
        i = ib.var("i", ir.ScalarType(INDEX))
        with ib.for_loop(i, ir.ConstInt(0, INDEX, sp), n, ir.ConstInt(1, INDEX, sp)) as loop:
            acc = loop.iter_arg("acc", ir.ConstInt(0, INDEX, sp))
            loop.return_var("acc_out")
            ib.emit(ir.YieldStmt([ir.Add(acc, i, INDEX, sp)], sp))
        total = loop.output()
        with ib.if_stmt(ir.Gt(total, y, INDEX, sp)) as b:
            b.return_var("m", ir.ScalarType(INDEX))
            ib.emit(ir.YieldStmt([total], sp))
            b.else_()
            ib.emit(ir.YieldStmt([y], sp))
        ib.return_stmt(b.output())
    func = f.get_result()
    assert func.body[0].body[-1].values[0] == BinOp("add", func.body[0].iter_args[0], i, ScalarType(INDEX))
    assert func.body[1].cond.type == ScalarType(pl.BOOL) and func.body[1].cond.op == "gt"
    text = func.as_python()
    assert "acc + i" in text and "if acc_out > y:" in text, text
    with ib.program("P") as p:
        p.add_function(func)
    ir.assert_structural_equal(parse_program(p.get_result().as_python()), p.get_result())


def test_an_explicit_span_is_kept_and_the_reference_span_form_works():
    ib = ir.IRBuilder()
    sp = ir.Span("model.py", 10, 1)   # the reference's three-argument form
    with ib.function("f", span=sp) as f:
        x = f.param("x", ScalarType(pl.INDEX), span=sp)
        f.return_type(ScalarType(pl.INDEX))
        ib.return_stmt(x)
    func = f.get_result()
    assert (func.span.filename, func.span.begin_line, func.span.begin_column) == ("model.py", 10, 1)
    assert func.params[0].span is sp and func.body[0].span.file.endswith("test_ir_builder.py")


def build_split_shard():
    """SplitShard: a SplitAiv scope inside an InCore scope, its lane bound in the reference's form
    (the first statement ``aiv_id = tile.get_subblock_idx()``), the crossing taking the region's mode."""
    from pypto.language.dtypes import INDEX

    sp = ir.Span.unknown()
    ib = ir.IRBuilder()
    with ib.program("SplitShard") as p:
        with ib.function("main") as f:
            a = f.param("a", _tensor(ib, [16, 32]))
            b = f.param("b", _tensor(ib, [32, 16]))
            out = f.param("out", _tensor(ib), direction=OUT)
            f.return_type(_tensor(ib))
            with ib.scope(ir.ScopeKind.InCore, name_hint="shard"):
                acc = ib.let("acc", ib.call("tensor.matmul", a, b))
                with ib.scope(ir.ScopeKind.SplitAiv, split=ir.SplitMode.UP_DOWN) as region:
                    aiv_id = ib.let("aiv_id", ib.call("tile.get_subblock_idx"))
                    h = ib.let("h", ib.call("tensor.relu", ib.call("tensor.adds", ib.call("tensor.aiv_shard", acc),
                                                                    1.0)))
                    ib.assign(out, ib.call("tensor.assemble", out, h, [ir.Mul(aiv_id, 8, INDEX, sp), 0]))
                head = region.get_result()[0]
                assert head.var is aiv_id and head.value.op == "tile.split_aiv_lane"
            ib.return_stmt(out)
        p.add_function(f.get_result())
    return p.get_result()


def build_split_none():
    """SplitNone: a bare SplitAiv scope in an Opaque function (it gets its own CORE_GROUP scope)."""
    from pypto.language.dtypes import INDEX

    sp = ir.Span.unknown()
    ib = ir.IRBuilder()
    with ib.program("SplitNone") as p:
        with ib.function("main") as f:
            a = f.param("a", _tensor(ib))
            out = f.param("out", _tensor(ib), direction=OUT)
            f.return_type(_tensor(ib))
            with ib.scope(ir.ScopeKind.SplitAiv, split=ir.SplitMode.NONE) as region:
                aiv_id = ib.let("aiv_id", ib.call("tile.get_subblock_idx"))
                base = ib.let("base", ir.Mul(aiv_id, 8, INDEX, sp))
                t = ib.let("t", ib.call("tile.load", a, [base, 0], [8, 16]))
                ib.assign(out, ib.call("tile.store", ib.call("tile.add", t, t), [base, 0], out))
            assert isinstance(region.get_result(), ScopeStmt)
            ib.return_stmt(out)
        p.add_function(f.get_result())
    return p.get_result()


@pytest.mark.parametrize("build, twin", [(build_split_shard, K.SplitShard), (build_split_none, K.SplitNone)])
def test_split_aiv_scopes_equal_their_parsed_twins_and_run_bit_exact(build, twin):
    """``ib.scope(ScopeKind.SplitAiv, split=mode)`` (the reference's builder call) is the region
    ``for aiv_id in pl.split_aiv(2, mode=...)`` parses to; the built program runs bit-exact (both
    lanes' halves, on both platforms) against torch."""
    prog = build()
    ir.assert_structural_equal(prog, twin)
    text = prog.as_python()
    assert text == twin.as_python()
    ir.assert_structural_equal(parse_program(text), prog)
    g = torch.Generator().manual_seed(17)
    for platform in ("a2a3sim", "a5sim"):
        cfg = RunConfig(platform=platform)
        if build is build_split_shard:
            a, b = torch.randn(16, 32, generator=g), torch.randn(32, 16, generator=g)
            out = torch.zeros(16, 16)
            ir.compile(prog, platform=platform)(a, b, out, config=cfg)
            want = torch.zeros(16, 16)
            ir.compile(twin, platform=platform)(a, b, want, config=cfg)
            assert torch.equal(out, want)
            torch.testing.assert_close(out, torch.relu((a.double() @ b.double()).float() + 1.0), rtol=1e-5, atol=1e-5)
        else:
            a, out = torch.randn(16, 16, generator=g), torch.zeros(16, 16)
            ir.compile(prog, platform=platform)(a, out, config=cfg)
            assert torch.equal(out, a + a)


def test_split_aiv_scope_misuse_is_a_located_builder_error():
    ib = ir.IRBuilder()
    here = __file__.rsplit("/", 1)[-1]
    with ib.function("o"):
        with pytest.raises(IRBuilderError, match="requires split=") as e:
            ib.scope(ir.ScopeKind.SplitAiv)
        assert f"{here}:" in str(e.value)
        with ib.scope(ir.ScopeKind.SplitAiv, split=ir.SplitMode.UP_DOWN) as region:
            with pytest.raises(IRBuilderError, match="do not nest"):
                ib.scope(ir.ScopeKind.SplitAiv, split=ir.SplitMode.NONE)
            t = ib.let("t", ib.call("tile.create", [16, 16], pl.FP32, target_memory=pl.Mem.Acc))
            with pytest.raises(IRBuilderError, match="split=2 in a SplitAiv scope of mode"):
                ib.call("tile.aiv_shard", t, split=2)
            ib.let("h", ib.call("tile.aiv_shard", t))
        body = region.get_result().body
        # no lane binding in the body: the region's head is a fresh aiv_id; the crossing took mode 1
        assert body[0].var.name == "aiv_id" and body[0].value.op == "tile.split_aiv_lane"
        assert body[0].value.args[0] == 1 and body[-1].value.args[1] == 1
    with pytest.raises(IRBuilderError, match="not directly in"):
        with ib.function("k", type=ir.FunctionType.InCore):
            ib.scope(ir.ScopeKind.SplitAiv, split=ir.SplitMode.NONE)
