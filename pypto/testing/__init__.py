"""Testing helpers for kernel authors: :func:`assert_close` with a report that says where and why a
result differs from its golden (see :mod:`pypto.testing.compare`)."""
from pypto.testing.compare import ComparisonReport, assert_close, compare, ulp_distance

__all__ = ["ComparisonReport", "assert_close", "compare", "ulp_distance"]
