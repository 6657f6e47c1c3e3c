"""The op registry (see :mod:`pypto.ops.registry`) and the op families that populate it."""
from pypto.ops.registry import OPS, OpDef, Param, all_ops, dsl_candidates, get_op

__all__ = ["OPS", "OpDef", "Param", "all_ops", "dsl_candidates", "get_op"]
