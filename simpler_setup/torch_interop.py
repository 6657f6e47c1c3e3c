"""``simpler_setup.torch_interop``: how a host ``torch.Tensor`` argument of a multi-rank launch
becomes the argument a card receives.

:func:`make_tensor_arg` is called by the dispatch for every host tensor a per-rank launch takes
(not for window views or tensors resident on a card), through this module's attribute, so a caller
may wrap it (e.g. to record which host tensors were dispatched, as the reference's tests do).
"""
from __future__ import annotations

import torch


def make_tensor_arg(worker, tensor):
    """The launch argument for host tensor ``tensor`` on card ``worker``: the tensor itself. The
    simulated card reads and writes host memory in place, as the device does through the host
    tensor's descriptor (its storage, shape and strides), so the caller's tensor — a view such as
    ``x[r]`` included — sees the launch's writes. A non-tensor or a tensor not in host (CPU) memory
    is refused."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"make_tensor_arg takes a torch.Tensor, got {type(tensor).__name__}")
    if tensor.device.type != "cpu":
        raise ValueError(f"make_tensor_arg: a host tensor lives in CPU memory, got one on {tensor.device}")
    return tensor
