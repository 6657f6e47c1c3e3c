"""The box-overlap test of task dependencies, shared by the runtime's tensormap lookup
(:mod:`pypto.runtime.deps`, on the views of real tensors) and the compiler's proof of the same
lookup (:mod:`pypto.passes.auto_derive_task_dependencies`, on constant regions). One definition, so
the compiler's model of the runtime cannot drift from the runtime.
"""
from __future__ import annotations

__all__ = ["NO_OVERLAP", "COVERED", "OTHER", "OVERLAP_NAME", "box_overlap"]

NO_OVERLAP, COVERED, OTHER = 0, 1, 2
OVERLAP_NAME = {COVERED: "covered", OTHER: "other"}


def box_overlap(c_start, c_shape, p_start, p_shape) -> int:
    """Overlap of two boxes given by per-dimension start indices and extents: NO_OVERLAP when some
    dimension is disjoint, COVERED when the consumer box lies inside the producer's, else OTHER."""
    covered = True
    for ci, cs, pi, ps in zip(c_start, c_shape, p_start, p_shape):
        if ci >= pi + ps or pi >= ci + cs:
            return NO_OVERLAP
        if ci > pi or ci + cs < pi + ps:
            covered = False
    return COVERED if covered else OTHER
