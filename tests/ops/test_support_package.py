"""``pypto.ops.support`` is a package whose modules may be imported in any order (issue 12): the old
``support.py`` re-exported helper modules that imported it back, so importing one of those first
failed with a circular-import error. Also: the reference executor's device geometry error."""
import importlib
import pkgutil
import sys

import pytest

import pypto.ops
import pypto.ops.support as support
from pypto.errors import PlatformError, PyptoError

_MODULES = ["pypto.ops.support"] + [f"pypto.ops.support.{m.name}" for m in pkgutil.iter_modules(support.__path__)]
# a helper module added next to the package (the pre-package layout) must import cleanly first too
_MODULES += [f"pypto.ops.{m.name}" for m in pkgutil.iter_modules(pypto.ops.__path__) if m.name.startswith("support_")]


def _fresh_import(name: str):
    """Import ``name`` as the first of the support modules (the others unloaded), then put the
    loaded ones back: generated kernels and the simulator keep using the same module objects."""
    saved = {k: v for k, v in sys.modules.items() if k.startswith("pypto.ops.support")}
    parent_attr = pypto.ops.__dict__.get("support")
    for k in saved:
        del sys.modules[k]
    try:
        mod = importlib.import_module(name)
        return mod, sys.modules["pypto.ops.support"]
    finally:
        for k in [k for k in sys.modules if k.startswith("pypto.ops.support")]:
            del sys.modules[k]
        sys.modules.update(saved)
        pypto.ops.support = parent_attr


@pytest.mark.parametrize("name", _MODULES)
def test_any_support_module_imports_first(name):
    mod, package = _fresh_import(name)
    assert mod.__name__ == name
    # the package is complete whichever module came first: core and family helpers, one namespace
    for helper in ("region", "load_into", "reduce_into", "add3", "gather", "sort32", "batch_matmul", "debug_print_ref",
                   "available_cores", "_RECORDER"):
        assert hasattr(package, helper), helper


def test_the_package_shares_core_state():
    from pypto.ops.support import core

    assert support._RECORDER is core._RECORDER and support.region is core.region


def test_available_cores_without_a_platform_is_a_pypto_error():
    with pytest.raises(PlatformError, match="needs a device") as e:
        support.available_cores("aiv")
    assert isinstance(e.value, PyptoError) and "reference_platform" in str(e.value)
    with support.reference_platform("a2a3sim"):
        from pypto.backend.platforms import get_platform

        assert support.available_cores("aic") == get_platform("a2a3sim").num_aic
    assert support.REFERENCE_PLATFORM.get() is None


def test_no_module_of_the_package_shadows_a_helper():
    """Importing ``support.<m>`` sets the package attribute ``m`` to the module: a module named like a
    helper (``matmul``) would replace ``_pto.matmul`` in every generated kernel."""
    from pypto.ops.support import core

    names = {m.name for m in pkgutil.iter_modules(support.__path__)}
    assert not names & {k for k in vars(core) if not k.startswith("__")}, names
    for k, v in vars(core).items():
        if not k.startswith("__"):
            assert getattr(support, k) is v, k
