"""The op registry (see :mod:`pypto.ops.registry`) and the op families that populate it.

``ops.build(name, span, **kwargs)`` builds a call by parameter name with its inferred type
(:mod:`pypto.ops.builder`); it is loaded on first use, so importing the registry stays free of the IR.
"""
from pypto.ops.registry import OPS, OpDef, Param, all_ops, dsl_candidates, get_op

__all__ = ["OPS", "OpDef", "Param", "all_ops", "bind", "build", "dsl_candidates", "get_op"]


def __getattr__(name: str):
    # (lazy: the builder imports the IR nodes, and the IR reads the registry while it loads)
    if name in ("build", "bind"):
        from pypto.ops import builder

        return getattr(builder, name)
    raise AttributeError(f"module 'pypto.ops' has no attribute {name!r}")
