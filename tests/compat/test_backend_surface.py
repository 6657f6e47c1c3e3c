"""pypto.backend: BackendType and the backend setting, as views of our platform descriptions."""
import pytest

from pypto import backend
from pypto.backend import BackendType, get_platform
from pypto.language.enums import MemorySpace


@pytest.fixture(autouse=True)
def _reset():
    backend.reset_for_testing()
    yield
    backend.reset_for_testing()


def test_backend_types_map_to_the_simulators():
    assert BackendType.Ascend910B.platform == "a2a3sim" and BackendType.Ascend950.platform == "a5sim"
    assert BackendType.of("a5") is BackendType.Ascend950 and BackendType.of("a2a3sim") is BackendType.Ascend910B
    assert BackendType.Ascend950 == "Ascend950"  # str enum: the former string spelling still compares equal
    with pytest.raises(ValueError, match="unknown backend type"):
        BackendType.of("Ascend310")


def test_set_get_and_reset():
    assert not backend.is_backend_configured()
    with pytest.raises(ValueError, match="set_backend_type"):
        backend.get_backend_type()
    backend.set_backend_type(BackendType.Ascend950)
    assert backend.get_backend_type() is BackendType.Ascend950 and backend.is_backend_configured()
    assert backend.get_handler().get_pto_target_arch() == "a5"
    backend.reset_for_testing()
    assert not backend.is_backend_configured()


@pytest.mark.parametrize("bt", list(BackendType))
def test_backend_numbers_are_the_platforms(bt):
    plat = get_platform(bt.platform)
    b = backend.get_backend_instance(bt)
    assert isinstance(b, backend.Backend910B if bt is BackendType.Ascend910B else backend.Backend950)
    h = b.get_handler()
    assert h.get_l0a_capacity_bytes() == plat.capacity(MemorySpace.Left)
    assert h.get_l0c_capacity_bytes() == plat.capacity(MemorySpace.Acc)
    assert h.get_mat_capacity_bytes() == plat.capacity(MemorySpace.Mat)
    assert b.get_mem_size(MemorySpace.Vec) == plat.capacity(MemorySpace.Vec)
    soc = b.soc
    assert soc.total_cluster_count() == plat.clusters
    assert soc.total_core_count() == plat.num_aic + plat.num_aiv
    assert b.get_core_count(backend.CoreType.CUBE) == plat.num_aic


def test_compile_sets_the_backend_type():
    from kernels_compat import AddOne
    from pypto import ir

    ir.compile(AddOne, platform="a5sim", dump_passes=False)
    assert backend.get_backend_type() is BackendType.Ascend950
    # the setting is an output of compile, not an input: the default target stays a2a3 (as the reference)
    assert ir.compile(AddOne, dump_passes=False).platform == "a2a3sim"
    assert backend.get_backend_type() is BackendType.Ascend910B
