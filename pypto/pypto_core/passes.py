"""``pypto.pypto_core.passes``: the reference's pass-level API (its native module). The names are
:mod:`pypto.passes.api`'s (also exported by :mod:`pypto.passes`, as in the reference, where
``pypto.passes`` is this module); ``l0_tile_chooser`` is the reference's roofline design-point
chooser (:mod:`pypto.pypto_core.l0_tile_chooser`; our AutoTileMatmulL0 does not realise its tiles
yet). A reference pass with no counterpart here is an ``AttributeError`` naming what covers its work.
"""
from __future__ import annotations

from pypto.passes.api import *  # noqa: F401,F403
from pypto.passes.api import __all__ as _API
from pypto.passes.api import absent, disabled_names  # noqa: F401  (ir.compile's helper)


def __getattr__(name: str):
    if name == "l0_tile_chooser":  # our AutoTileMatmulL0's rule in the reference's vocabulary
        from pypto.pypto_core import l0_tile_chooser as module

        return module
    raise absent(name)


__all__ = [*_API]
