"""A call's arguments on their way into the simulated device and its results on the way back.

Before anything runs, each argument is checked against the build's parameters and brought into the
form the device holds (:func:`_plain_scalar`: ctypes scalars; :func:`_device_view`: worker-resident
tensors; :func:`_unpack_fp4`: packed FP4; :func:`_check_writable`, :func:`_check_dynamic_dims`); the
arguments that may serve as global memory in place of a copy are chosen (:func:`_in_place_args`,
:func:`_window_args`); after the run, :func:`_returned_values` is what the call returns.
:func:`pypto.runtime.simulator.execute` runs these steps in order.
"""
from __future__ import annotations

import math
import numbers

import torch

from pypto.numerics.formats import fp4_pack, fp4_unpack
from pypto.ops.support import dist as support_dist
from pypto.ops.support.scalars import sround
from pypto.runtime.device_tensor import DeviceTensor, StackedDeviceTensor


def _returned_values(value, gm: list, full: list, host: list):
    """What the call returns: ``None`` when the program returns only its (written in place)
    arguments; otherwise the returned values, a tensor the program created itself as a copy out of
    the simulated global memory (the reference executor returns it too: issue 13, a result the
    simulator used to drop), an argument as the caller's own tensor.

    ``host[i]`` is the view of argument ``i`` the orchestration received (``_host_layout``: a DN
    parameter's column-major reading of ``gm[i]``). A returned value is argument ``i`` only when it
    *is* that tensor or that view (the same storage pointer, shape and strides): a
    ``pl.transpose`` of a square argument has its shape and pointer but other strides, and was
    once taken for the argument (the call returned ``None`` and the transpose was lost).

    A tensor the program made comes back contiguous in its logical shape with its logical values,
    whatever its layout: a DN ``pl.create_tensor`` is copied out of its column-major buffer. That is
    what the reference executor returns (its ``tensor.create`` is ``torch.zeros(shape)``); the
    reference's device runtime returns only ``Out`` parameters (a created tensor never reaches the
    host there), and a DN ``Out`` parameter, the caller's buffer, keeps the device's column-major
    bytes (docs/language.md, "Layouts")."""
    vals = value if isinstance(value, tuple) else (value,) if value is not None else ()

    def same_view(v, t):   # (a stride of an extent-1 dim is never used: not compared)
        return v is t or (isinstance(v, torch.Tensor) and isinstance(t, torch.Tensor) and v.shape == t.shape
                          and v.data_ptr() == t.data_ptr()
                          and all(n == 1 or a == b for n, a, b in zip(v.shape, v.stride(), t.stride())))

    def own(v):
        for g, h, user in zip(gm, host, full):
            if same_view(v, g) or same_view(v, h):
                return user
        return None

    if all(own(v) is not None for v in vals):
        return None
    def fresh(v):   # a tensor the program made; FP4 leaves in the caller's packed form
        return fp4_pack(v) if v.dtype == torch.float4_e2m1fn_x2 else v.clone(memory_format=torch.contiguous_format)

    out = tuple(own(v) if own(v) is not None else fresh(v) if isinstance(v, torch.Tensor) else v for v in vals)
    return out if isinstance(value, tuple) else out[0]


def _check_dynamic_dims(params, full) -> None:
    """The entry's dynamic dims (``pl.dynamic``): a composite dim (``M * 2``) must evaluate to its
    extent. A bare dim the arguments give different extents is not bound (each parameter keeps its
    tensor's extent, as in the reference; see :func:`pypto.ir.types.bind_extents`): nothing at run
    time reads a dim's value, every extent is read from its tensor. The same build serves every
    extent (the cache key holds the dims, not their values)."""
    from pypto.ir.types import bind_extents, dim_from_text

    shapes = [(p["name"], [dim_from_text(x) if x is not None else d for x, d in zip(p["dims"], p["shape"])],
               list(a.shape))
              for p, a in zip(params, full)
              if p["kind"] == "TensorType" and any(x is not None for x in p.get("dims") or ())]
    if shapes:
        why = bind_extents(shapes)
        if why is not None:
            raise TypeError(why)


class ParamFacts:
    """What the per-call argument checks read from a build's parameter list (``compiled_meta.json``'s
    ``params``, never changed once built), derived once per list instead of on every call: each
    tensor parameter's torch dtype and static shape, and whether any parameter is FP4 or has
    dynamic dims (the checks that only those need are skipped otherwise)."""

    __slots__ = ("params", "tensors", "fp4", "dims")

    def __init__(self, params: list):
        from pypto.language.dtypes import dtype_from_name

        self.params = params
        # (index, param, torch dtype, shape tuple with None for a dynamic dim, all dims static)
        self.tensors = []
        for i, p in enumerate(params):
            if p["kind"] == "TensorType":
                shape = tuple(p["shape"])
                self.tensors.append((i, p, dtype_from_name(p["dtype"]).torch, shape, None not in shape))
        self.fp4 = any(p["kind"] == "TensorType" and p["dtype"] == "FP4" for p in params)
        self.dims = any(p["kind"] == "TensorType" and any(x is not None for x in p.get("dims") or ())
                        for p in params)


def param_facts(compiled, params: list) -> ParamFacts:
    """:class:`ParamFacts` of ``params`` (``compiled.meta["params"]``), remembered on ``compiled``."""
    facts = getattr(compiled, "_param_facts", None)
    if facts is None or facts.params is not params:
        facts = ParamFacts(params)
        try:
            compiled._param_facts = facts
        except AttributeError:   # (an object that takes no attributes: derived on every call)
            pass
    return facts


def _check_tensor_args(facts: ParamFacts, full: list) -> None:
    """Each tensor argument is a ``torch.Tensor`` of the parameter's dtype and shape (a dynamic dim
    takes any extent) that the simulator can read, and write where it is an output
    (:func:`_check_writable`)."""
    Tensor = torch.Tensor
    for i, p, want, shape, static in facts.tensors:
        a = full[i]
        if not isinstance(a, Tensor):
            raise TypeError(f"argument '{p['name']}' must be a torch.Tensor, got {type(a).__name__}")
        if static:
            same = a.shape == shape
        else:
            ash = a.shape
            same = len(ash) == len(shape) and all(d is None or d == n for n, d in zip(ash, shape))
        if not same or a.dtype != want:
            raise TypeError(f"argument '{p['name']}' has shape {list(a.shape)} {a.dtype}, the program was "
                            f"compiled for {p['shape']} {want}")
        _check_writable(p, a)


def _check_writable(p: dict, a: torch.Tensor) -> None:
    """Argument checks made before anything runs (issue 13, item 15): a tensor the simulator cannot
    read, or an output it could not write back after the whole run, is rejected naming the
    parameter — not discovered at write-back (results lost) or, for a meta tensor, never (a run
    that "succeeds" with no data)."""
    d = p["direction"]
    if a.is_cpu and (d != "Out" and d != "InOut" or not a.requires_grad and a.is_contiguous()):
        return   # (the common case, cheaply: a contiguous tensor has no overlapping elements)
    name = p["name"]
    if a.device.type != "cpu":
        raise TypeError(f"argument '{name}' is on device '{a.device}': the simulator reads and writes CPU tensors "
                        f"(a meta tensor holds no data at all); pass a CPU tensor, e.g. {name}.cpu() or "
                        f"torch.zeros(..., device='cpu')")
    if d not in ("Out", "InOut"):
        return
    if a.requires_grad:
        raise TypeError(f"argument '{name}' ({d}) requires grad: results are written into it in place, outside "
                        f"autograd; pass {name}.detach() or a tensor created without requires_grad")
    if a.numel() > 1 and _overlaps(a):
        raise TypeError(f"argument '{name}' ({d}) is a view in which several elements share memory (e.g. an "
                        f"expand()ed tensor, stride {list(a.stride())}): results cannot be written into it; pass "
                        f"a tensor with its own storage, e.g. {name}.contiguous() or torch.empty(...)")


# Above this many elements a strided layout torch cannot classify is not enumerated (8 bytes of
# offsets per element); it is refused as unproven (_overlaps).
_ENUMERATE_AT_MOST = 1 << 24


def _overlaps(a: torch.Tensor) -> bool:
    """Whether two elements of ``a`` share a storage location. torch's own test answers yes, no or
    "too hard" (any non-contiguous layout it does not recognise, e.g. ``wide[:, ::2]``); "too hard"
    is decided here: dims sorted by stride, each stride beyond the span of the smaller ones proves
    the elements distinct; otherwise the offsets are enumerated and compared (exact)."""
    verdict = torch._debug_has_internal_overlap(a)
    if verdict != 2:   # 0: no overlap, 1: overlap
        return verdict == 1
    dims = sorted((st, n) for st, n in zip(a.stride(), a.shape) if n > 1)
    span = 0   # the largest offset the smaller-stride dims reach
    for st, n in dims:
        if st <= span:
            break
        span += st * (n - 1)
    else:
        return False
    if a.numel() > _ENUMERATE_AT_MOST:
        return True   # (not proven distinct: refused, the message names the strides)
    offsets = torch.zeros((), dtype=torch.int64)
    for st, n in dims:
        offsets = (offsets.unsqueeze(-1) + torch.arange(n, dtype=torch.int64) * st).flatten()
    return bool(offsets.unique().numel() != offsets.numel())


def _unpack_fp4(params, full: list) -> dict:
    """Replace each packed FP4 tensor argument (``float4_e2m1fn_x2``, ``[..., n/2]``, the reference's
    call form) in ``full`` by its unpacked copy ``[..., n]`` (the simulator's storage); returns the
    caller's tensors by index, to be packed back into after the run."""
    packed = {}
    for i, (p, a) in enumerate(zip(params, full)):
        if p["kind"] == "TensorType" and p["dtype"] == "FP4" and isinstance(a, torch.Tensor) \
                and a.dtype == torch.float4_e2m1fn_x2:
            want = list(p["shape"])
            if a.dim() != len(want) or (want[-1] is not None and a.shape[-1] * 2 != want[-1]):
                raise TypeError(f"argument '{p['name']}' has shape {list(a.shape)} float4_e2m1fn_x2 (packed, two "
                                f"FP4 codes per byte); the program was compiled for {want} FP4 codes, i.e. a "
                                f"packed last dimension of {want[-1] // 2}")
            packed[i] = a
            full[i] = fp4_unpack(a)
    return packed


def _host_layout(value, param: dict):
    """The program's view of a tensor argument: the caller's buffer (contiguous: a copy, or the
    caller's own tensor used in place) holds its bytes in order; a DN parameter reads them with its
    trailing pair column-major (``[..., i, j]`` at ``i + j * shape[-2]`` of a page), as the device
    reads the bytes the host uploaded. So a caller passes a DN tensor's transpose, row-major
    (``x.mT.contiguous()`` for the logical ``x``); a row-major ``x`` itself is read transposed."""
    if param.get("layout") != "DN" or not isinstance(value, torch.Tensor):
        return value
    return value.reshape(*value.shape[:-2], value.shape[-1], value.shape[-2]).mT


def _device_view(value, param: dict):
    """A worker-resident :class:`DeviceTensor` as the view of device memory the program runs on (its
    results stay there); a multi-rank ``StackedDeviceTensor`` is refused; anything else unchanged."""
    if isinstance(value, DeviceTensor):
        return value.device_view()
    if isinstance(value, StackedDeviceTensor):
        raise TypeError(f"argument '{param['name']}': a StackedDeviceTensor feeds a multi-rank (L3) program, "
                        "which this package does not simulate; pass a DeviceTensor or a torch.Tensor")
    return value


def _plain_scalar(value, param: dict):
    """A ``ctypes`` scalar (``c_int64(5)``, ``c_float(0.5)``: the reference's scalar arguments) as the
    Python number it holds; anything else unchanged. A ctypes value for a tensor parameter, or a
    float ctypes value for an integer parameter, is a ``TypeError`` (never a silent truncation)."""
    import ctypes

    if not isinstance(value, ctypes._SimpleCData):
        return _float_param(value, param)
    if param["kind"] == "TensorType":
        raise TypeError(f"argument '{param['name']}' must be a torch.Tensor, got {type(value).__name__}")
    v = value.value
    if isinstance(v, bytes):  # c_char
        v = v[0] if v else 0
    dt = param.get("dtype") or ""
    if isinstance(v, float) and not dt.startswith(("FP", "BF")):
        raise TypeError(f"argument '{param['name']}' is {dt}, got the floating-point {type(value).__name__}({v})")
    return _float_param(v, param)


# a floating-point scalar parameter's dtype -> its torch dtype (the ones scalar arithmetic rounds to)
_FLOAT_PARAMS = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16}
# an integer scalar parameter's dtype -> the range of values it holds
_INT_PARAMS = {f"{u}INT{b}": ((0, (1 << b) - 1) if u else (-(1 << (b - 1)), (1 << (b - 1)) - 1))
               for b in (8, 16, 32, 64) for u in ("", "U")}
_INT_PARAMS["INDEX"] = _INT_PARAMS["INT64"]


def _float_param(value, param: dict):
    """A number given for a scalar parameter, as the value the device receives: for FP32 / FP16 / BF16
    the value of that dtype nearest it (a Python ``0.1`` is float64; the kernel's FP32 scalar is
    the FP32 number nearest it, and scalar arithmetic starts from that:
    :mod:`pypto.ops.support.scalars`). A finite number past the dtype's range, or an integer outside
    an integer parameter's, is a ``ValueError`` naming the parameter: the device would hold an
    infinity or a wrapped integer instead. Anything else unchanged."""
    if param.get("kind") != "ScalarType" or isinstance(value, (bool, torch.Tensor)) \
            or not isinstance(value, numbers.Real):
        return value
    name = param.get("dtype")
    dt = _FLOAT_PARAMS.get(name)
    if dt is not None:
        r = sround(float(value), dt)
        if math.isinf(r) and math.isfinite(float(value)):
            raise ValueError(f"argument '{param['name']}' is {name}, and {value!r} is past its largest finite "
                             f"value {torch.finfo(dt).max:.6g}: the kernel would get an infinity "
                             "(pass float('inf') if an infinity is meant)")
        return r
    lim = _INT_PARAMS.get(name)
    if lim is not None and isinstance(value, numbers.Integral) and not lim[0] <= int(value) <= lim[1]:
        raise ValueError(f"argument '{param['name']}' is {name}, which holds [{lim[0]}, {lim[1]}]; "
                         f"{value} does not fit (the device would get a wrapped value)")
    return value


def _in_place_args(params, full) -> set:
    """Indices of the tensor arguments the simulated device may use as its global memory in place
    instead of a copy. Copying a large tensor costs page faults on fresh memory (~4 ms per 16 MB
    here, the largest single cost of a softmax run), and the copy is unobservable when:

    * the parameter is ``In`` (never written: checked after submission by :func:`_writes_into`,
      which falls back to copies) or ``Out`` (the results land there anyway; on an error the
      tensor may hold part of them — InOut parameters are in place only with an undo log,
      :func:`_in_place_inout`, so a failing run leaves them as they were);
    * the tensor is contiguous and owns its whole storage at offset 0 (so the runtime sees the same
      buffer bounds and offsets as for a copy: deps.json and the tensormap are unchanged), and no
      other tensor argument shares that storage (an aliased pair must stay two buffers)."""
    return _plain_in_place(params, full)[0]


def _in_place_inout(params, full) -> set:
    """Indices of the ``InOut`` tensor arguments used in place, under the conditions of
    :func:`_in_place_args` otherwise (a plain contiguous tensor owning its storage, shared with no
    other argument): a failed run puts them back from its undo log (:mod:`pypto.runtime.undo`)
    instead of leaving a copy behind, so they stay as they were on failure, as copies did."""
    return _plain_in_place(params, full)[1]


def _plain_in_place(params, full) -> tuple[set, set]:
    """``(_in_place_args, _in_place_inout)`` in one pass over the arguments (one storage object
    per tensor: execute() needs both on every call)."""
    tensors = []
    counts: dict[int, int] = {}
    Tensor = torch.Tensor
    for i, a in enumerate(full):
        if isinstance(a, Tensor):
            st = a.untyped_storage()
            ptr = st.data_ptr()
            counts[ptr] = counts.get(ptr, 0) + 1
            tensors.append((i, a, st, ptr))
    direct, inout = set(), set()
    for i, a, st, ptr in tensors:
        d = params[i]["direction"]
        if d == "In" or d == "Out":
            into = direct
        elif d == "InOut":
            into = inout
        else:
            continue
        if (counts[ptr] == 1 and a.is_contiguous() and a.storage_offset() == 0
                and st.nbytes() == a.numel() * a.element_size() and not a.requires_grad and a.is_cpu):
            into.add(i)
    return direct, inout


def _window_args(full) -> set:
    """Indices of the arguments that are window buffers of a multi-rank run (issue 17): other ranks
    read and write them while this rank runs, so they are this rank's global memory in place, never
    a copy (a copy would hide every remote write)."""
    return {i for i, a in enumerate(full) if isinstance(a, torch.Tensor) and support_dist.is_window(a)}
