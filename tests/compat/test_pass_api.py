"""``pypto.passes`` is also the reference's pass-binding module: PassContext, instruments, factories,
verification levels, next to our pipeline (one module per pass, PIPELINE)."""
import pytest
import torch

from kernels_compat import AddOne, ScaleRows
from pypto import ir, passes
from pypto.errors import VerificationError
from pypto.ir.pass_manager import PassManager
from pypto.passes.manager import PassInfo
from pypto.pypto_core import passes as core_passes

# claims SSA without producing it: returns the frontend's program, where ``out`` is assigned twice
CLAIMS_SSA = PassInfo("ClaimsSSA", lambda program, ctx: program, (), ("SSA",))


def test_our_pipeline_is_intact_and_its_modules_are_the_factories():
    from pypto.passes import convert_to_ssa, scratch_reads  # noqa: F401  (a submodule still imports)

    assert passes.PIPELINE[3] is convert_to_ssa and convert_to_ssa.NAME == "ConvertToSSA"   # after AccWindows
    p = passes.convert_to_ssa()
    assert isinstance(p, passes.Pass) and p.get_name() == "ConvertToSSA"
    assert p.get_produced_properties() == list(convert_to_ssa.PRODUCES)
    # the same objects under both module names
    assert passes.PassContext is core_passes.PassContext and passes.VerificationLevel is core_passes.VerificationLevel
    assert passes.fuse_create_assemble_to_slice().get_name() == "FuseCreateAssembleToView"
    with pytest.raises(TypeError, match="takes no arguments"):
        passes.simplify(True)
    assert passes.auto_derive_task_dependencies(analyze_auto_scopes=True).get_name() == "AutoDeriveTaskDependencies"


def test_factory_runs_our_pass():
    from pypto.passes.context import PassContext as Ctx

    ssa = passes.convert_to_ssa()(passes.unroll_loops()(passes.inline_functions()(ScaleRows)))
    ctx = Ctx()
    want = passes.convert_to_ssa.run(passes.unroll_loops.run(passes.inline_functions.run(ScaleRows, ctx), ctx), ctx)
    ir.assert_structural_equal(ssa, want)
    with pytest.raises(AssertionError):
        ir.assert_structural_equal(ssa, ScaleRows)  # the pass did change the program


def test_verification_instrument_verifies_and_the_level_governs_the_pipeline():
    pipe = passes.PassPipeline()
    pipe.add_pass(CLAIMS_SSA)
    with passes.PassContext([], passes.VerificationLevel.NONE):
        assert pipe.run(ScaleRows) is ScaleRows          # nothing checks the claim
    with passes.PassContext([passes.VerificationInstrument(passes.VerificationMode.AFTER)],
                            passes.VerificationLevel.NONE):
        with pytest.raises(VerificationError, match="ClaimsSSA.*SSA.*'out' is defined more than once"):
            pipe.run(ScaleRows)
        with pytest.raises(VerificationError, match="ClaimsSSA"):
            passes.Pass(CLAIMS_SSA)(ScaleRows)           # a directly called pass runs the instruments too
    with pytest.raises(VerificationError, match="ClaimsSSA"):
        pipe.run(ScaleRows)                              # no context: the default level (BASIC) verifies
    before = passes.VerificationInstrument(passes.VerificationMode.BEFORE)
    with passes.PassContext([before], passes.VerificationLevel.NONE):
        assert pipe.run(ScaleRows) is ScaleRows          # BEFORE checks what the pass requires: nothing


def test_instruments_run_around_every_pass_of_compile_and_pass_manager(tmp_path):
    seen = []
    cb = passes.CallbackInstrument(before_pass=lambda p, prog: seen.append(("before", p.get_name())),
                                   after_pass=lambda p, prog: seen.append(("after", p.get_name())))
    names = PassManager.get_strategy().get_pass_names()
    want = [(w, n) for n in names for w in ("before", "after")]
    with passes.PassContext([cb]):
        c = ir.compile(AddOne, dump_passes=False, platform="a2a3sim")
        assert seen == want
        seen.clear()
        ir.compile(AddOne, dump_passes=False, platform="a2a3sim")   # not served from the build cache
        assert seen == want
        seen.clear()
        PassManager.get_strategy().run_passes(AddOne)
        assert seen == want
    a, b, out = torch.randn(64, 128), torch.randn(64, 128), torch.zeros(64, 128)
    c(a, b, out)
    assert torch.equal(out, a + b)


def test_verification_instrument_inside_compile_catches_a_lying_pass(tmp_path):
    pipeline = [CLAIMS_SSA, *passes.PIPELINE]
    with passes.PassContext([passes.VerificationInstrument(passes.VerificationMode.AFTER)],
                            passes.VerificationLevel.NONE):
        with pytest.raises(VerificationError, match="ClaimsSSA"):
            ir.compile(ScaleRows, tmp_path, dump_passes=False, passes=pipeline)


def test_passes_that_hold_by_construction_and_absent_ones():
    ssa = passes.convert_to_ssa()(ScaleRows)
    for name in ("ctrl_flow_transform", "normalize_stmt_structure", "outline_hierarchy_scopes",
                 "outline_cluster_scopes"):
        p = getattr(passes, name)()
        assert p(ssa) is ssa and p.get_name() == "".join(w.capitalize() for w in name.split("_"))
    # the invariant outline_hierarchy_scopes relies on is checked, not assumed
    from pypto.errors import UnsupportedFeatureError
    from pypto.ir.nodes import ForStmt, ScopeStmt
    from pypto.language.enums import Level

    main = ssa.functions[0]
    loop = next(s for s in main.body if isinstance(s, ForStmt))
    scope = next(s for s in loop.body if isinstance(s, ScopeStmt))
    host = ssa.replace(functions=(main.replace(body=tuple(
        s.replace(body=tuple(x.replace(level=Level.HOST) if x is scope else x for x in s.body)) if s is loop else s
        for s in main.body)),))
    with pytest.raises(UnsupportedFeatureError, match="hierarchy scopes"):
        passes.outline_hierarchy_scopes()(host)
    with pytest.raises(AttributeError, match="canonicalize_tile_slice.*no counterpart"):
        passes.canonicalize_tile_slice  # noqa: B018
    with pytest.raises(AttributeError, match="stamp_tfree_split.*no counterpart"):
        core_passes.stamp_tfree_split  # noqa: B018
    # the mixed-kernel passes of the pipeline answer to their reference factories
    for factory, name in (("lower_auto_vector_split", "LowerAutoVectorSplit"),
                          ("inject_gm_pipe_buffer", "InjectGMPipeBuffer"), ("split_vector_kernel", "SplitVectorKernel")):
        assert getattr(passes, factory)().info.name == name
    with pytest.raises(AttributeError, match="no attribute 'not_a_pass'"):
        passes.not_a_pass  # noqa: B018
