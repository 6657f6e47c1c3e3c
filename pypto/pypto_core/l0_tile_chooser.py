"""``pypto.pypto_core.passes.l0_tile_chooser``: the L0 matmul design point, as **our** AutoTileMatmulL0
chooses it (:mod:`pypto.passes.auto_tile_matmul_l0`), in the reference's vocabulary.

Our rule: the tile is the whole ``M x N`` output (output-stationary, one L0C buffer) when it fits L0C,
else the sub-tile of :func:`pypto.passes.auto_tile_matmul_l0.choose_mn_tile` (fewest sub-tiles);
``k`` is all of K when both operands fit in L0A / L0B, else the largest multiple of 16 dividing K
whose chunks fit in half of L0A / L0B. The reference chooses with a roofline cost model that also
splits M and N, double-buffers L0C and pins A or B; its design points therefore differ from ours for
large problems (docs/compatibility.md). A problem our rule cannot tile is a ``ValueError`` naming
the limit, as the pass's CapacityError does.
"""
from __future__ import annotations

import enum
import math


class Stationarity(enum.Enum):
    """Which operand stays in L0 across the tiling loops (ours: always OutputStationary)."""

    OutputStationary = 0
    AStationary = 1
    BStationary = 2


class L0TileConfig:
    """Inputs of :func:`choose_l0_tile`: problem dims, L0 capacities (bytes) and element sizes.

    The reference's other knobs (alignment, bandwidths, ``allow_*`` gates, ...) are accepted as
    attributes; our rule reads only ``M``, ``N``, ``K``, ``l0a/l0b/l0c_bytes`` and ``bytes_a/b/c``.
    """

    def __init__(self):
        self.M = self.N = self.K = 0
        self.l0a_bytes = self.l0b_bytes = 64 * 1024
        self.l0c_bytes = 128 * 1024
        self.bytes_a = self.bytes_b = 2
        self.bytes_c = 4
        self.min_m = self.min_n = self.min_k = 16
        self.align_m = self.align_n = self.align_k = 16
        self.l0c_align_m = self.box_align_m = self.box_align_n = 16
        self.max_n = self.max_n_pipelined = self.max_n_nested_pipelined = 0
        self.allow_a_stationary = self.allow_b_stationary = self.allow_double_buffer_c = False
        self.allow_padding = self.allow_k_boundary = self.c_read = False
        self.bw_a = self.bw_b = self.bw_drain = 0.0
        self.drain_fixed_cycles = self.drain_row_cycles = self.drain_penalty_cycles = 0.0
        self.drain_c0_bytes = self.mad_head = self.mad_k_fractal_bytes = self.mad_fp32_passes = 0


class L0TileResult:
    """The chosen design point (``m``, ``n``, ``k``) and what it costs."""

    def __init__(self, m, n, k, traffic, cost, volume, perf_hint=""):
        self.m, self.n, self.k = m, n, k
        self.estimated_traffic_bytes = traffic
        self.estimated_cost_cycles = cost
        self.padded_compute_volume = volume
        self.stationarity = Stationarity.OutputStationary
        self.os_holds_a = False
        self.double_buffer_c = False
        self.perf_hint = perf_hint

    def __repr__(self) -> str:
        return f"L0TileResult(m={self.m}, n={self.n}, k={self.k}, stationarity={self.stationarity.name})"


# The simulator's global-memory bandwidth (pypto.backend.platforms.Platform.gm_bytes_per_cycle).
_GM_BYTES_PER_CYCLE = 128


def choose_l0_tile(config: L0TileConfig) -> L0TileResult:
    """The design point AutoTileMatmulL0 uses for ``config`` (see the module docstring)."""
    from pypto.passes.auto_tile_matmul_l0 import _acc_need, _k_fit, choose_k_chunk, choose_mn_tile

    c = config
    m, n, k = int(c.M), int(c.N), int(c.K)
    if min(m, n, k) <= 0:
        raise ValueError(f"choose_l0_tile: M, N, K must be positive, got {m}, {n}, {k}")
    whole = _k_fit(m, k, n, c.bytes_a, c.l0a_bytes, c.l0b_bytes)
    if whole is None or _acc_need(m, n, c.bytes_c, whole < k) > c.l0c_bytes:
        tile = choose_mn_tile(m, k, n, c.bytes_a, c.bytes_c, c.l0a_bytes, c.l0b_bytes, c.l0c_bytes)
        if tile is None:
            raise ValueError(f"choose_l0_tile: no [m, n] sub-tile of [{m}, {k}] @ [{k}, {n}] fits L0C "
                             f"({c.l0c_bytes} B) with K chunks in half of L0A / L0B")
        tm, tn, kc = tile
        tiles = -(-m // tm) * -(-n // tn)
        traffic = tiles * (tm * k * c.bytes_a + k * tn * c.bytes_b) + m * n * c.bytes_c
        return L0TileResult(tm, tn, kc, traffic, math.ceil(traffic / _GM_BYTES_PER_CYCLE), m * n * k)
    if m * k * c.bytes_a <= c.l0a_bytes and k * n * c.bytes_b <= c.l0b_bytes:
        kc = k
    else:
        kc = choose_k_chunk(m, k, n, c.bytes_a, c.l0a_bytes, c.l0b_bytes, rhs_bytes=c.bytes_b) if k % 16 == 0 else None
        if kc is None:
            raise ValueError(f"choose_l0_tile: no K chunk (a multiple of 16 dividing K={k}) of [{m}, {k}] @ [{k}, {n}] "
                             "fits in half of L0A / L0B; AutoTileMatmulL0 does not split M/N")
    traffic = m * k * c.bytes_a + k * n * c.bytes_b + m * n * c.bytes_c  # each operand read once
    return L0TileResult(m, n, kc, traffic, math.ceil(traffic / _GM_BYTES_PER_CYCLE), m * n * k)


__all__ = ["L0TileConfig", "L0TileResult", "Stationarity", "choose_l0_tile"]
