"""Precision-debugging tools: :func:`torch_codegen` (run the IR's meaning on the host)."""
from pypto.debug.torch_codegen import torch_codegen

__all__ = ["torch_codegen"]
