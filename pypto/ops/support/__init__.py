"""Runtime support shared by the reference executor and the simulator's generated kernels.

Both kinds of generated code (``torch_codegen`` output and simulator kernel modules) import this
package as ``_pto``; its functions are the few op semantics that are more than one torch call
(region copies with a valid shape, bounds checks, casts with rounding modes). The package is the
flat namespace generated code sees; the helpers live in modules by concern:

* :mod:`~pypto.ops.support.core`: regions, load/store, cast, reductions, matmul, the access recorder;
* one module per op family of the catalogue (``argreduce``, ``elementwise``, ``index``, ``create``,
  ``sort``, ``views``, ``paged``, ``scalars``, ``gang_access``, ``matmul_ext``, ``debug``, ``while_loops``, ``cross_core``, ``sync``, ``dist``, ``prefetch``), importing only ``core`` and each other;
* :mod:`~pypto.ops.support.geometry`: the device geometry of the reference executor.

Nothing here imports the package itself, so any module may be imported first
(``tests/ops/test_support_package.py``). A new family module is re-exported below.
"""
from pypto.ops.support import core as _core

# every name of core, private helpers included: generated code calls some of them (``_pto._x``)
globals().update({k: v for k, v in vars(_core).items() if not (k.startswith("__") and k.endswith("__"))})
__all__ = list(_core.__all__)

from pypto.numerics.intops import bitwise, bitwise_not, shift  # noqa: E402,F401
from pypto.numerics.intarith import int_div, wrap_binary  # noqa: E402,F401
from pypto.ops.support.argreduce import arg_reduce, arg_reduce_into, reduce_valid, reduce_valid_into  # noqa: E402,F401
from pypto.ops.support.elementwise import add3, fmod, lrelu, part, prelu, rem  # noqa: E402,F401
from pypto.ops.support.index import (  # noqa: E402,F401
    gather, gather_compare, gatherb, mgather, mscatter, scatter, scatter_update,
)
from pypto.ops.support.create import ci, random, tri  # noqa: E402,F401
from pypto.ops.support.sort import gather_mask, mrgsort1, mrgsort2, scatter_mask, sort32  # noqa: E402,F401
from pypto.ops.support.views import host_dn, layout_view, reinterpret, reshape_into, swap_last2, write, write_  # noqa: E402,F401
from pypto.ops.support.paged import gather_row, paged_gather  # noqa: E402,F401
from pypto.ops.support.scalars import f32, sdiv, sfloordiv, smod, sround  # noqa: E402,F401
from pypto.ops.support.gang_access import (  # noqa: E402,F401
    gang_load_at, gang_load_fast, gang_load_one, gang_load_one_at, gang_load_view, gang_load_view_at,
    gang_store_at, gang_store_fast,
)
from pypto.ops.support.matmul_mx import load_mx, load_mx_into, matmul_mx, matmul_mx_into  # noqa: E402,F401
from pypto.ops.support.matmul_ext import (  # noqa: E402,F401
    batch_matmul, batch_matmul_into, gang, gemv, gemv_into, matmul_bias, matmul_bias_into,
)
from pypto.ops.support.debug import DebugPrint, debug_print_ref, valid as debug_valid  # noqa: E402,F401
from pypto.ops.support.geometry import REFERENCE_PLATFORM, available_cores, reference_platform  # noqa: E402,F401
from pypto.ops.support.while_loops import array_get, array_new, array_set, reshape_view, while_limit, while_step  # noqa: E402,F401
from pypto.ops.support.cross_core import (  # noqa: E402,F401  (the reference forms of the pipe ops)
    event_set as cc_event_set, event_wait as cc_event_wait, noop as cc_noop, pop as cc_pop, push as cc_push,
    run_group as cc_run_group, syncall as cc_syncall, unlowered,
)
from pypto.ops.support.sync import CoreFlags, core_flags  # noqa: E402,F401  (pl.system flags, barriers, fence)
from pypto.ops.support import dist  # noqa: E402,F401  (pld.* ops, reached as _pto.dist)
from pypto.ops.support.prefetch import (  # noqa: E402,F401  (pl.prefetch)
    Clock, PrefetchContext, prefetch_stall, prefetch_start, prefetch_wait,
)
