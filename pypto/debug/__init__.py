"""Precision-debugging tools: :func:`torch_codegen` (run the IR's meaning on the host) and
:func:`validate_pass_ir_codegen_results` (which pass changed the result; also
``CompiledProgram.validate_ir``)."""
from pypto.debug.torch_codegen import torch_codegen
from pypto.debug.validate_ir import ValidationReport, validate_pass_ir_codegen_results

__all__ = ["torch_codegen", "validate_pass_ir_codegen_results", "ValidationReport"]
