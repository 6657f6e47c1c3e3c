"""The per-call argument steps of ``execute`` on their fast paths (pypto.runtime.arguments:
ParamFacts derived once per build, the in-place choice in one pass, the cheap writability check):
every result and every error is what the step-by-step form gives."""
import pytest
import torch

from pypto.runtime import RunConfig
from pypto.runtime import arguments as A
from pypto.runtime import simulator as S

import kernels_fast as K

CFG = RunConfig(sim_seed=0)


def _plain_in_place_reference(params, full):
    """The two in-place sets by their definition (docs of _in_place_args / _in_place_inout),
    written out independently of the one-pass helper."""
    tensors = [(i, a) for i, a in enumerate(full) if isinstance(a, torch.Tensor)]
    ptrs = [a.untyped_storage().data_ptr() for _, a in tensors]

    def plain(i, a):
        st = a.untyped_storage()
        return (ptrs.count(st.data_ptr()) == 1 and a.is_contiguous() and a.storage_offset() == 0
                and st.nbytes() == a.numel() * a.element_size() and not a.requires_grad
                and a.device.type == "cpu")

    direct = {i for i, a in tensors if params[i]["direction"] in ("In", "Out") and plain(i, a)}
    inout = {i for i, a in tensors if params[i]["direction"] == "InOut" and plain(i, a)}
    return direct, inout


def test_in_place_sets_in_one_pass_match_their_definition():
    buf = torch.zeros(16, 64)
    big = torch.randn(16, 128)
    grad = torch.zeros(4, requires_grad=True)
    cases = [
        (["In", "Out"], [big[:, ::2], torch.zeros(16, 64)]),            # strided view: a copy
        (["In", "Out"], [buf, buf]),                                      # aliased pair: copies
        (["InOut", "In", "Out"], [torch.zeros(8), torch.ones(8), torch.zeros(8)]),
        (["InOut", "InOut"], [buf, buf]),
        (["In", "Scalar", "Out"], [big[1:], 3, torch.zeros(3)]),         # offset view, a scalar
        (["In", "InOut"], [grad, torch.zeros(2, 2).t()]),                 # requires grad; a transpose
        (["In"], [torch.zeros(0)]),
    ]
    for dirs, full in cases:
        params = [{"direction": d} for d in dirs]
        assert A._plain_in_place(params, full) == _plain_in_place_reference(params, full), dirs
        assert S._in_place_args(params, full) == _plain_in_place_reference(params, full)[0]
        assert S._in_place_inout(params, full) == _plain_in_place_reference(params, full)[1]


def test_param_facts_are_derived_once_per_build_and_follow_a_replaced_list():
    c = K.add_one.compile(torch.zeros(16, 64), torch.zeros(16, 64))
    params = c.meta["params"]
    f = A.param_facts(c, params)
    assert A.param_facts(c, params) is f
    assert [(i, dt, shape, static) for i, _, dt, shape, static in f.tensors] == \
        [(0, torch.float32, (16, 64), True), (1, torch.float32, (16, 64), True)]
    assert not f.fp4 and not f.dims
    other = [dict(p) for p in params]
    g = A.param_facts(c, other)
    assert g is not f and g.params is other

    class NoAttrs:
        __slots__ = ()
    assert A.param_facts(NoAttrs(), params).params is params    # (nowhere to remember it: derived)


@pytest.mark.parametrize("what, make, needle", [
    ("wrong shape", lambda: torch.zeros(16, 32), "has shape [16, 32] torch.float32"),
    ("wrong rank", lambda: torch.zeros(16, 64, 1), "has shape [16, 64, 1]"),
    ("wrong dtype", lambda: torch.zeros(16, 64, dtype=torch.float16), "torch.float16"),
    ("not a tensor", lambda: [[0.0] * 64] * 16, "must be a torch.Tensor, got list"),
])
def test_argument_errors_on_the_fast_path_name_the_parameter(what, make, needle):
    c = K.add_one.compile(torch.zeros(16, 64), torch.zeros(16, 64))   # (a compiled program checks at run time)
    with pytest.raises(TypeError) as e:
        c(make(), torch.zeros(16, 64), config=CFG)
    assert needle in str(e.value) and "'a'" in str(e.value), what


def test_the_cheap_writability_check_leaves_non_contiguous_outputs_to_the_full_check():
    """The early return is only for contiguous CPU tensors; any other output still goes through
    the full overlap check: a strided view whose elements are distinct (``wide[:, ::2]``, which
    torch's own test cannot classify) is written, one whose elements share memory is refused before
    anything runs, and a contiguous output and a Tensor subclass as input are accepted."""
    a = torch.randn(16, 64)
    wide = torch.zeros(16, 128)
    K.add_one(a, wide[:, ::2], config=CFG)
    assert torch.equal(wide[:, ::2], a + 1) and torch.equal(wide[:, 1::2], torch.zeros(16, 64))
    shared = torch.zeros(16 + 64).as_strided((16, 64), (1, 1))   # row i starts one element after row i - 1
    with pytest.raises(TypeError, match="'out' .* share memory"):
        K.add_one(a, shared, config=CFG)
    sub = torch.nn.Parameter(torch.randn(16, 64), requires_grad=False)   # a Tensor subclass as input
    o2 = torch.zeros(16, 64)
    K.add_one(sub, o2, config=CFG)
    assert torch.equal(o2, sub.detach() + 1)


def test_a_finished_call_gives_core_memory_back_once_and_drops_every_core_view_cache():
    """_release_cores: the cores' shared CoreMemory is released once (its arrays back in the pool),
    and a core that cached tile views (a task-by-task run) has them dropped, as Core.release did."""
    a = torch.randn(16, 64)
    for lock in (False, True):
        out = torch.zeros(16, 64)
        K.six_tasks(a, out, config=RunConfig(sim_seed=0, sim_lockstep=lock))
        rt = S._LAST_RUNTIME[0]
        assert rt.memory.arrays == {} and rt.memory.views == {}
        assert all(c.views == {} for c in rt.cores)
        assert all(c.memory is rt.memory for c in rt.cores)
    used = []
    real = S.Core.release
    try:   # a task-by-task run caches views on the cores it used: those are released
        S.Core.release = lambda self: used.append(self.index) or real(self)
        K.six_tasks(a, torch.zeros(16, 64), config=RunConfig(sim_seed=0, sim_lockstep=False))
    finally:
        S.Core.release = real
    assert used and len(used) < 48
