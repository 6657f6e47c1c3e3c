"""Language forms of programs written for the reference PyPTO, and the wrong results found while
trying them. Each kernel runs on both simulators and under torch_codegen (frontend and lowered IR),
and its program prints and parses back at every pipeline stage."""
import re

import kernels_forms as K
import torch
from lang_harness import check_all

from pypto.frontend.specialize import specialize
from pypto.ir import run_pipeline, structural_equal
from pypto.language import parse


def roundtrips(kernel, args, platform="a2a3sim"):
    """parse(print(p)) == p at every stage of the pipeline."""
    result = run_pipeline(specialize(kernel, args, {}).program, {"platform": platform})
    for stage, program in result.stages:
        text = program.as_python()
        assert structural_equal(program, parse(text)), f"after {stage}:\n{text}"


def _dirs(kernel, args):
    """The runtime tags of each task dispatch of the lowered entry, in order."""
    from pypto.ir.nodes import FuncCall
    from pypto.ir.visit import iter_stmts, walk_expr, use_exprs

    prog = kernel.lower(*args)
    out = []
    for s in iter_stmts(prog.entry.body):
        for e in use_exprs(s):
            out += [x.arg_directions for x in walk_expr(e) if isinstance(x, FuncCall)]
    return out


# ---------------------------------------------------------------- statement-form pl.store
def test_statement_store_is_a_write_the_next_scope_waits_for():
    """`pl.store(t, offs, scratch)` without rebinding: the writer task tags scratch as an output and
    the reading task runs after it (it used to be an INPUT of the writer: the reader saw zeros)."""
    a = torch.randn(64, 64)
    args = (a, torch.zeros(64, 64), torch.zeros(64, 64))
    check_all(K.stmt_store_two_scopes, args, {1: 2 * a, 2: 2 * a + 1})
    tags = _dirs(K.stmt_store_two_scopes, args)
    assert tags[0] == ("INPUT", "OUTPUT_EXISTING")
    roundtrips(K.stmt_store_two_scopes, args)


def test_statement_store_in_a_loop_of_tasks():
    a = torch.randn(128, 64)
    args = (a, torch.zeros(128, 64), torch.zeros(128, 64))
    check_all(K.stmt_store_loop, args, {1: 3 * a, 2: 3 * a - 1})


# ---------------------------------------------------------------- valid shapes
def test_annotated_tile_keeps_the_loads_valid_shape():
    """`s: pl.Tile[[32, 64], pl.FP32] = pl.load(..., valid_shape=[20, 47])`: the store writes only
    the 20x47 valid region (the annotation used to drop the valid shape: the whole tile was written)."""
    a = torch.randn(32, 64)
    want = torch.zeros(32, 64)
    want[:20, :47] = a[:20, :47] - 2
    check_all(K.valid_tail_subs, (a, torch.zeros(32, 64)), {1: want})
    roundtrips(K.valid_tail_subs, (a, torch.zeros(32, 64)))


def test_row_expand_add_row_tail_writes_valid_rows_only():
    a, r = torch.randn(32, 64), torch.randn(32, 1)
    out = torch.full((32, 64), 7.0)
    want = out.clone()
    want[:20] = a[:20] + r[:20]
    check_all(K.valid_tail_row_expand_add, (a, r, out), {2: want})


# ---------------------------------------------------------------- FP16 column sums
def _tcolsum_fp16(x):
    """pto-isa TCOLSUM with a tmp tile, written from its description: adjacent rows pairwise, each
    add rounded to FP16, an odd level's last row added onto the first partial sum."""
    rows = [x[i] for i in range(x.shape[0])]
    while len(rows) > 1:
        n = len(rows)
        nxt = [(rows[2 * i] + rows[2 * i + 1]) for i in range(n // 2)]
        if n % 2:
            nxt[0] = nxt[0] + rows[n - 1]
        rows = nxt
    return rows[0].unsqueeze(0)


def test_fp16_col_sum_tree_is_the_devices_adjacent_pair_order():
    """48 of 64 columns used to differ from this order (the tree halved instead of pairing)."""
    torch.manual_seed(3)
    a = torch.randn(32, 64).half()
    want = _tcolsum_fp16(a)
    runs = check_all(K.col_sum_fp16_tree, (a, torch.zeros(1, 64, dtype=torch.float16)), {1: want},
                     atol=0, rtol=0)
    for who, got in runs.items():
        assert torch.equal(got[1].view(torch.int16), want.view(torch.int16)), who
    # FP16 accumulation is observable: an FP32 sum rounded once differs in some column
    assert not torch.equal(a.float().sum(0, keepdim=True).half(), want)


def test_inline_helpers_with_statement_stores_chain_through_a_created_tensor():
    """The reference's dump_tag add/mul program: (a + 1) * 2 through two inline helpers whose
    pl.at scopes store as statements (the second task used to read the created tensor unwritten:
    max difference 10.2)."""
    a = torch.randn(128, 128)
    check_all(K.inline_stmt_stores, (a, torch.zeros(128, 128)), {1: (a + 1) * 2})
    roundtrips(K.inline_stmt_stores, (a, torch.zeros(128, 128)))


# ---------------------------------------------------------------- the reference's op signatures
def test_cast_target_type_and_store_output_tensor_keywords():
    x = torch.randn(32, 64) * 100
    args = (x, torch.zeros(32, 64, dtype=torch.float16))
    check_all(K.sig_cast_store, args, {1: x.half()}, atol=0, rtol=0)
    roundtrips(K.sig_cast_store, args)


def test_sel_and_sels_take_the_scratch_tile_in_the_references_order():
    x, y = torch.randn(32, 64), torch.randn(32, 64)
    args = (x, y, torch.zeros(32, 64), torch.zeros(32, 64))
    check_all(K.sig_sel, args, {2: torch.where(x > y, x, y), 3: torch.where(x > y, x, torch.tensor(0.5))})
    roundtrips(K.sig_sel, args)


def test_load_clamp_cuts_the_region_at_the_tensors_edge():
    x, y = torch.randn(40, 64), torch.randn(40, 64)
    out = torch.full((64, 64), -3.0)
    want = out.clone()
    want[:32] = torch.log((x[8:] / (y[8:] + 10)).abs() + 1)
    check_all(K.sig_clamp_div_log, (x, y, out), {2: want})
    roundtrips(K.sig_clamp_div_log, (x, y, out))


def test_row_expand_add_with_tmp():
    x, v = torch.randn(32, 64), torch.randn(32, 1)
    check_all(K.sig_row_expand_tmp, (x, v, torch.zeros(32, 64)), {2: (x + v) * v})
    roundtrips(K.sig_row_expand_tmp, (x, v, torch.zeros(32, 64)))


def test_create_tensor_layout_and_init_value():
    x = torch.randn(32, 64)
    want = torch.full((32, 64), 1.5)
    want[:16] = x[:16]
    check_all(K.sig_create_tensor_init, (x, torch.zeros(32, 64)), {1: want})
    roundtrips(K.sig_create_tensor_init, (x, torch.zeros(32, 64)))


def test_matmul_acc_init_cond_overwrites_where_it_holds():
    """init_cond=(k == 1): step 1 overwrites what step 0 accumulated, steps 2 and 3 accumulate (the
    statement form updates acc in place, as the reference's does)."""
    a, b = torch.randn(32, 128), torch.randn(128, 48)
    want = a[:, 32:] @ b[32:]
    check_all(K.sig_matmul_acc_init_cond, (a, b, torch.zeros(32, 48)), {2: want}, atol=1e-4, rtol=1e-4)
    roundtrips(K.sig_matmul_acc_init_cond, (a, b, torch.zeros(32, 48)))


def test_extract_takes_row_and_column_indices():
    a, b = torch.randn(64, 64), torch.randn(32, 48)
    check_all(K.sig_extract, (a, b, torch.zeros(32, 48)), {2: a[32:, :32] @ b}, atol=1e-4, rtol=1e-4)


# ---------------------------------------------------------------- parser forms
def test_tuple_return_annotation_and_shapes_given_by_a_name():
    import pypto.runtime as prt

    a = torch.randn(32, 64)
    o1, o2 = torch.zeros(32, 64), torch.zeros(32, 64)
    prt.run(K.TupleReturn)(a, o1, o2)
    assert torch.equal(o1, a) and torch.equal(o2, a + a)
    assert structural_equal(K.TupleReturn, parse(K.TupleReturn.as_python()))


def test_a_value_first_bound_in_a_loop_is_visible_after_it():
    a = torch.randn(32, 64)
    check_all(K.bound_in_loop, (a, torch.zeros(32, 64)), {1: a * 2 + 4})
    roundtrips(K.bound_in_loop, (a, torch.zeros(32, 64)))


def test_a_value_bound_only_in_a_loop_and_never_read_after_stays_local():
    from pypto.errors import ParserError
    import pytest

    from pypto.language.program import parse as parse_text

    src = '''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[32, 64], pl.FP32], o: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        for i in pl.range(2):
            t = pl.load(a, [0, 0], [32, 64])
            o = pl.store(t, [0, 0], o)
        return o
'''
    text = parse_text(src).as_python()
    assert "tile.create" not in text  # no initial value invented when nothing reads it after the loop


def test_pl_at_hints_scope_and_spmd_keywords():
    a = torch.randn(64, 64)
    want = torch.cat([(a[:32] + 1) * 3, (a[32:] + 2) * 3])
    check_all(K.at_hints, (a, torch.zeros(64, 64)), {1: want})
    roundtrips(K.at_hints, (a, torch.zeros(64, 64)))
    names = [f.name for f in K.at_hints.lower(a, torch.zeros(64, 64)).functions]
    assert "first" in names and "second" in names and "blocks" in names


def test_a_python_constant_rebound_in_a_loop_is_carried():
    """`s = 0; for i in ...: s = i * 2` left s == 0 after the loop (a silently wrong value)."""
    a = torch.randn(32, 64)
    check_all(K.const_then_loop, (a, torch.zeros(32, 64)), {1: a * 2.5 + 4})
    roundtrips(K.const_then_loop, (a, torch.zeros(32, 64)))


def test_cast_of_a_scalar_rounds_like_a_tile_cast():
    a = torch.randn(32, 64)
    check_all(K.scalar_casts, (a, 2.5, 3, torch.zeros(32, 64)), {3: a * 3 + 32})
    check_all(K.scalar_casts, (a, -2.5, 3, torch.zeros(32, 64)), {3: a * 3 - 33})
    roundtrips(K.scalar_casts, (a, 2.5, 3, torch.zeros(32, 64)))


# ---------------------------------------------------------------- functions, programs, text
def test_pl_inline_in_a_program_and_functions_as_a_mapping():
    import pypto.runtime as prt

    prog = K.WithInline
    assert list(prog.functions.keys()) == [f.name for f in prog.functions]
    assert "main" in prog.functions and prog.functions["main"] is prog.entry
    assert prog.functions.get("nope") is None and dict(prog.functions.items())["main"].name == "main"
    a = torch.randn(32, 64)
    o = torch.zeros(32, 64)
    prt.run(prog)(a, o)
    assert torch.equal(o, a + a)


def test_standalone_function_parse_parse_program_and_loads_program(tmp_path):
    import pytest

    import pypto.language as pl
    from pypto.errors import ParserSyntaxError
    from pypto.ir.nodes import Function, Program

    f = K.standalone_copy
    assert isinstance(f, Function) and f.name == "standalone_copy"
    text = f.as_python()
    g = pl.parse("import pypto.language as pl\n\n" + text)
    assert isinstance(g, Function) and structural_equal(f, g)
    with pytest.raises(ParserSyntaxError, match="not a @pl.program"):
        pl.parse_program("import pypto.language as pl\n\n" + text)
    path = tmp_path / "prog.py"
    path.write_text("N = 32\n" + K.TupleReturn.as_python().replace("[32, 64]", "[N, 64]"))
    prog = pl.loads_program(path)
    assert isinstance(prog, Program) and structural_equal(prog, K.TupleReturn)
    assert structural_equal(pl.parse_program(K.TupleReturn.as_python()), K.TupleReturn)


def test_a_kernel_function_called_with_other_constants_is_specialised_per_call():
    a = torch.randn(32, 64)
    z = torch.zeros(32, 64)
    check_all(K.two_constants, (a, z, z, z), {1: a * 2, 2: a * 3, 3: a * 2})
    names = sorted(f.name for f in K.two_constants.lower(a, z, z, z).functions)
    assert names == ["scale_by", "scale_by_1", "two_constants"]
    roundtrips(K.two_constants, (a, z, z, z))


def test_a_constant_rebound_in_a_runtime_branch_takes_the_branchs_value():
    """`x = 0.0; if i == 2: x = 5.0` used to leave x == 0.0 whatever ran (a silently wrong value)."""
    a = torch.randn(32, 64)
    check_all(K.const_in_runtime_if, (a, torch.zeros(32, 64)), {1: a + 5})
    roundtrips(K.const_in_runtime_if, (a, torch.zeros(32, 64)))


def test_break_and_continue_in_a_sequential_loop():
    a = torch.randn(32, 64)
    want = a.clone()
    for i in range(10):
        if i == 1:
            continue
        if i > 5:
            break
        want = want + 1
        if i == 3:
            want = want * 2
    check_all(K.loop_exits, (a, torch.zeros(32, 64)), {1: want})
    roundtrips(K.loop_exits, (a, torch.zeros(32, 64)))
    b = torch.randn(128, 64)
    check_all(K.exits_in_orchestration, (b, torch.zeros(128, 64)),
              {1: torch.cat([b[:64] + 1, torch.zeros(32, 64), b[96:] + 1])})


def test_break_in_a_parallel_loop_is_a_located_error(tmp_path):
    import importlib.util

    import pytest

    from pypto.errors import PyptoError

    path = tmp_path / "bad_exit.py"
    path.write_text('''
import pypto.language as pl

@pl.jit
def k(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    for i in pl.parallel(2):
        if i == 1:
            break
        with pl.at(level=pl.Level.CORE_GROUP):
            out = pl.store(pl.load(a, [i * 32, 0], [32, 64]), [i * 32, 0], out)
    return out
''')
    spec = importlib.util.spec_from_file_location("bad_exit", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(PyptoError, match="'break' is not supported in a pl.parallel loop") as e:
        mod.k(torch.zeros(64, 64), torch.zeros(64, 64))
    assert "bad_exit.py:8" in str(e.value) and "^" in str(e.value)


_BAD = {
    "create_tensor_in_scope_loop": ('''
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            w = pl.create_tensor([64, 64], dtype=pl.FP32)
        out = pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], out)
''', "pl.create_tensor inside a loop or branch of a pl.at scope"),
    "layout": ('''
    w = pl.create_tensor([64, 64], dtype=pl.FP32, layout=pl.TensorLayout.NZ)
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], out)
''', "NZ is a tile layout"),
    "high_precision_scalar": ('''
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(pl.div(pl.load(a, [0, 0], [64, 64]), 2.0, high_precision=True), [0, 0], out)
''', "a scalar divisor has no high-precision form"),
    "extern": ('''
    out = ext(a, out)
''', "@pl.jit.extern (a kernel written in C++) is not supported"),
}


def test_forms_the_simulators_do_not_support_are_located_errors(tmp_path):
    import importlib.util

    import pytest

    from pypto.errors import PyptoError

    for name, (body, message) in _BAD.items():
        path = tmp_path / f"bad_{name}.py"
        path.write_text(
            "import pypto.language as pl\n\n@pl.jit.extern\ndef ext(a, out):\n    pass\n\n\n"
            "@pl.jit\ndef k(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):"
            + body + "    return out\n")
        spec = importlib.util.spec_from_file_location(f"bad_{name}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        with pytest.raises(PyptoError, match=re.escape(message)) as e:
            mod.k(torch.zeros(64, 64), torch.zeros(64, 64))
        assert f"bad_{name}.py:" in str(e.value) and "^" in str(e.value), name


def test_jit_host_needs_a_distributed_config():
    import pytest

    import pypto.language as pl
    from pypto.errors import PyptoError

    @pl.jit.host
    def host(a):
        return a

    # issue 17: a host orchestrator runs on several simulated cards, which the config must name
    with pytest.raises(PyptoError, match="distributed_config=DistributedConfig"):
        host(torch.zeros(4))


def test_row_expand_add_with_a_packed_32_byte_row_vector():
    """The device's packed carrier: one 32-byte block per row ([M, 8] FP32) repeats across the
    columns: out[i, j] = src[i, j] + row[i, j % 8] (valid region only)."""
    a, r = torch.randn(32, 64), torch.randn(32, 8)
    want = torch.zeros(32, 64)
    want[:20, :47] = a[:20, :47] + r[:20].repeat(1, 8)[:, :47]
    check_all(K.packed_row_vector, (a, r, torch.zeros(32, 64)), {2: want})
    roundtrips(K.packed_row_vector, (a, r, torch.zeros(32, 64)))


def test_a_store_version_first_bound_in_a_loop_is_returned_after_it():
    import pypto.runtime as prt

    a = torch.randn(256, 64)
    c = torch.full((256, 64), 9.0)
    prt.run(K.StoreVersionAfterLoop)(a, c)
    want = torch.full((256, 64), 9.0)
    want[0:64] = a[0:64] + 1
    want[128:192] = a[128:192] + 1
    assert torch.equal(c, want)
    assert structural_equal(K.StoreVersionAfterLoop, parse(K.StoreVersionAfterLoop.as_python()))


def test_create_tensor_at_the_top_level_of_a_scope_is_a_workspace():
    x = torch.randn(32, 64)
    want = torch.full((32, 64), 6.0)
    want[:16] = x[:16] * 3
    check_all(K.workspace_in_scope, (x, torch.zeros(32, 64)), {1: want})
    roundtrips(K.workspace_in_scope, (x, torch.zeros(32, 64)))


def test_rsqrt_with_tmp_and_recip_high_precision():
    x = torch.randn(32, 64)
    want = 1 / torch.rsqrt(x.abs() + 1)
    check_all(K.rsqrt_tmp_recip_hp, (x, torch.zeros(32, 64)), {1: want})
    roundtrips(K.rsqrt_tmp_recip_hp, (x, torch.zeros(32, 64)))
