"""``pypto.pypto_core.l0_tile_chooser``: the reference's module name for the roofline L0 tile
chooser. The chooser itself lives in :mod:`pypto.backend.l0_tile_chooser` (a cost model of the
hardware that the AutoTileMatmulL0 pass uses, below the passes in the import layers); this name is
that very module."""
import sys

from pypto.backend import l0_tile_chooser as _chooser

sys.modules[__name__] = _chooser
