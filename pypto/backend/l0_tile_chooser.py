"""``pypto.pypto_core.passes.l0_tile_chooser``: the reference's L0 matmul design-point chooser, a
roofline cost model searched exhaustively.

:func:`choose_l0_tile` scores every legal aligned ``(m, n, k)`` tile (L0A/L0B/L0C capacities, the
moving operands double-buffered, the physical L0C row alignment ``l0c_align_m``) by its roofline wall
in cycles::

    compute = max(L1->L0 load cycles (A and B serialised, each over its port bandwidth),
                  cube MAD cycles (per-TMATMUL head + fractal passes over the K blocks run))
    drain   = FIXPIPE cycles per output tile (fixed + per-row max(floor, bytes/bandwidth)
              + a penalty for a non-power-of-two N-fractal count)
    wall    = compute + drain                                   (one L0C buffer)
            = max(compute, drain) + min(compute, drain) / tiles (L0C double-buffered, dbC = 2)

ties broken by padded volume, fewer K blocks, lower load cycles, larger area, larger k. The
output-stationary single-buffered regime is always scored; when it tiles the output, A-stationary /
B-stationary (operand pinned across a full-K pass) and dbC = 2 (full K, at least two full tiles on
the moving inner axis) regimes are scored too where allowed, and adopted only on a strictly lower
wall. The model constants default to the reference's (measured on its device); they are fields of
:class:`L0TileConfig`.

This is the reference's chooser as a function, the design points its tests pin. Our
AutoTileMatmulL0 realises its double-buffered-C full-K designs when dbC is enabled
(:func:`pypto.passes.auto_tile_matmul_l0.choose_dbc_design`); otherwise it tiles with
:func:`pypto.passes.auto_tile_matmul_l0.choose_mn_tile` / ``choose_k_chunk`` (output-stationary,
one L0C buffer, K chunks that divide K), so those tiles can differ from this answer
(docs/compatibility.md); every tiling it emits accumulates each output element correctly.
"""
from __future__ import annotations

import enum
import math


class Stationarity(enum.Enum):
    """Which operand stays in L0 across the tiling loops."""

    OutputStationary = 0
    AStationary = 1
    BStationary = 2


class L0TileConfig:
    """Inputs of :func:`choose_l0_tile`: problem dims, L0 capacities (bytes), element sizes,
    alignment/capacity gates and the roofline constants (the reference's defaults)."""

    def __init__(self):
        self.M = self.N = self.K = 0
        self.l0a_bytes = self.l0b_bytes = 64 * 1024
        self.l0c_bytes = 128 * 1024
        self.bytes_a = self.bytes_b = 2
        self.bytes_c = 4
        self.min_m = self.min_n = self.min_k = 16
        self.align_m = self.align_n = self.align_k = 16
        self.l0c_align_m = 16
        self.box_align_m = self.box_align_n = 1
        self.max_n = self.max_n_pipelined = self.max_n_nested_pipelined = 0
        self.allow_a_stationary = self.allow_b_stationary = self.allow_double_buffer_c = False
        self.c_read = False
        self.bw_a, self.bw_b, self.bw_drain = 129.7, 85.4, 118.0
        self.drain_fixed_cycles, self.drain_row_cycles, self.drain_penalty_cycles = 164.0, 4.45, 2.6
        self.drain_c0_bytes, self.mad_head, self.mad_k_fractal_bytes, self.mad_fp32_passes = 32, 21, 32, 2
        self.allow_padding = self.allow_k_boundary = False


class L0TileResult:
    """The chosen design point (``m``, ``n``, ``k``), its regime and what the model says it costs."""

    def __init__(self, m, n, k, traffic, cost, volume, perf_hint=""):
        self.m, self.n, self.k = m, n, k
        self.estimated_traffic_bytes = traffic
        self.estimated_cost_cycles = cost
        self.padded_compute_volume = volume
        self.stationarity = Stationarity.OutputStationary
        self.os_holds_a = True
        self.double_buffer_c = False
        self.perf_hint = perf_hint

    def __repr__(self) -> str:
        return (f"L0TileResult(m={self.m}, n={self.n}, k={self.k}, stationarity={self.stationarity.name}, "
                f"double_buffer_c={self.double_buffer_c})")


def _up(x: int, a: int) -> int:
    return -(-x // a) * a


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _l0c_elems(m: int, n: int, c) -> int:
    """Physical L0C elements of an ``[m, n]`` tile: boxed, then M rounded to ``l0c_align_m``."""
    return _up(_up(m, c.box_align_m), c.l0c_align_m) * _up(n, c.box_align_n)


def _holds_a(m, n, c) -> bool:
    """Full-K output-stationary hoist: holding A (rows outer) costs no more load cycles than B."""
    M, N, K = c.M, c.N, c.K
    held_a = c.bytes_a * M * K / c.bw_a + c.bytes_b * K * N * _cdiv(M, m) / c.bw_b
    held_b = c.bytes_a * M * K * _cdiv(N, n) / c.bw_a + c.bytes_b * K * N / c.bw_b
    return held_a <= held_b


def _load(m, n, k, c, stat) -> float:
    M, N, K = c.M, c.N, c.K
    held_a = c.bytes_a * M * K / c.bw_a + c.bytes_b * K * N * _cdiv(M, m) / c.bw_b
    held_b = c.bytes_a * M * K * _cdiv(N, n) / c.bw_a + c.bytes_b * K * N / c.bw_b
    if stat == Stationarity.AStationary:
        return held_a
    if stat == Stationarity.BStationary:
        return held_b
    if k >= K:
        return held_a if _holds_a(m, n, c) else held_b
    return c.bytes_a * M * K * _cdiv(N, n) / c.bw_a + c.bytes_b * K * N * _cdiv(M, m) / c.bw_b


def _mad(m, n, k, c) -> int:
    kt = max(1, c.mad_k_fractal_bytes // c.bytes_a)
    cpr = max(1, c.mad_fp32_passes) if c.bytes_a == 4 else max(1, c.bytes_a // 2)
    full, tail = c.K // k, c.K - (c.K // k) * k
    blocks = full + (1 if tail else 0)
    fractals = full * _cdiv(k, kt) + (_cdiv(tail, kt) if tail else 0)
    per_mn = blocks * c.mad_head + cpr * _cdiv(m, c.align_m) * fractals * _cdiv(n, c.align_n)
    return _cdiv(c.M, m) * _cdiv(c.N, n) * per_mn


def _odd(x: int) -> int:
    while x % 2 == 0:
        x //= 2
    return x


def _drain(m, n, c) -> float:
    drains = _cdiv(c.M, m) * _cdiv(c.N, n)
    n1 = _cdiv(n, max(1, c.drain_c0_bytes // c.bytes_c))
    per_row = max(c.drain_row_cycles, c.bytes_c * n / c.bw_drain) + c.drain_penalty_cycles * (_odd(n1) - 1)
    return drains * (c.drain_fixed_cycles + m * per_row)


def _wall(m, n, k, c, stat, dbc) -> int:
    compute = max(_load(m, n, k, c, stat), float(_mad(m, n, k, c)))
    drain = _drain(m, n, c)
    if dbc:
        wall = max(compute, drain) + min(compute, drain) / (_cdiv(c.M, m) * _cdiv(c.N, n))
    else:
        wall = compute + drain
    return int(math.floor(wall + 0.5))  # llround of a positive value


def _traffic(m, n, k, c, stat) -> int:
    M, N, K = c.M, c.N, c.K
    a_once, b_once = c.bytes_a * M * K, c.bytes_b * K * N
    a_str, b_str = a_once * _cdiv(N, n), b_once * _cdiv(M, m)
    if stat == Stationarity.AStationary or (stat == Stationarity.OutputStationary and k >= K and _holds_a(m, n, c)):
        ab = a_once + b_str
    elif stat == Stationarity.BStationary or (stat == Stationarity.OutputStationary and k >= K):
        ab = a_str + b_once
    else:
        ab = a_str + b_str
    return ab + (2 if c.c_read else 1) * c.bytes_c * M * N


def _ks(m, n, c, a0, b0) -> list[int]:
    cap = min(a0 // _up(m, c.box_align_m), b0 // _up(n, c.box_align_n))
    k_problem = max(_up(c.K, c.align_k), c.min_k) if c.allow_padding else c.K
    hi = (min(cap, k_problem) // c.align_k) * c.align_k
    peel = c.allow_k_boundary and c.K % c.align_k == 0
    return [k for k in range(c.min_k, hi + 1, c.align_k) if c.allow_padding or peel or c.K % k == 0]


def _candidate(m, n, k, c, c0, stat, dbc):
    if m < c.min_m or n < c.min_n or k < c.min_k or (c.max_n and n > c.max_n):
        return None
    grid = k == c.K and (m != c.M or n != c.N)
    os_ = stat == Stationarity.OutputStationary
    if c.max_n_pipelined and grid and (stat == Stationarity.AStationary or os_) and n > c.max_n_pipelined:
        return None
    if c.max_n_nested_pipelined and grid and os_ and _holds_a(m, n, c) and n > c.max_n_nested_pipelined:
        return None
    if not c.allow_padding and (m > c.M or n > c.N):
        return None
    if _l0c_elems(m, n, c) > c0:
        return None
    return dict(m=m, n=n, k=k, cost=_wall(m, n, k, c, stat, dbc), load=_load(m, n, k, c, stat),
                volume=_cdiv(c.M, m) * m * _cdiv(c.N, n) * n * _cdiv(c.K, k) * k,
                traffic=_traffic(m, n, k, c, stat), stat=stat, dbc=dbc)


def _key(x, c):
    return (x["cost"], x["volume"], _cdiv(c.K, x["k"]), x["load"], -x["m"] * x["n"], -x["k"])


def _inner_full_tiles(m, n, c, stat) -> int:
    rows_outer = stat == Stationarity.AStationary or (stat == Stationarity.OutputStationary and _holds_a(m, n, c))
    return c.N // n if rows_outer else c.M // m


def _best(c, stat, dbc, a0, b0, c0, inner_pair, full_k):
    m_hi = _up(c.M, c.align_m) if c.allow_padding else c.M
    n_hi = _up(c.N, c.align_n) if c.allow_padding else c.N
    if c.max_n:
        n_hi = min(n_hi, c.max_n)
    best = None
    for m in range(c.min_m, m_hi + 1, c.align_m):
        pm = _up(_up(m, c.box_align_m), c.l0c_align_m)
        if pm > c0 // _up(c.min_n, c.box_align_n):
            break
        for n in range(c.min_n, min(n_hi, c0 // pm) + 1, c.align_n):
            if inner_pair and _inner_full_tiles(m, n, c, stat) < 2:
                continue
            for k in _ks(m, n, c, a0, b0):
                if full_k and k != c.K:
                    continue
                x = _candidate(m, n, k, c, c0, stat, dbc)
                if x is not None and (best is None or _key(x, c) < _key(best, c)):
                    best = x
    return best


def choose_l0_tile(config: L0TileConfig) -> L0TileResult:
    """The minimum-wall design point for ``config`` (see the module docstring); a ``ValueError``
    names the limit when the inputs are invalid or no tile fits."""
    c = config
    if min(c.M, c.N, c.K) <= 0:
        raise ValueError(f"choose_l0_tile: M, N, K must be positive, got {c.M}, {c.N}, {c.K}")
    if min(c.l0a_bytes, c.l0b_bytes, c.l0c_bytes) <= 0 or min(c.bytes_a, c.bytes_b, c.bytes_c) <= 0:
        raise ValueError("choose_l0_tile: L0 capacities and element sizes must be positive")
    if min(c.bw_a, c.bw_b, c.bw_drain) <= 0:
        raise ValueError("choose_l0_tile: roofline bandwidths must be strictly positive")
    if not c.allow_padding and (c.M < c.min_m or c.N < c.min_n or c.K < c.min_k):
        raise ValueError(f"choose_l0_tile: M={c.M}, N={c.N}, K={c.K} below the cube minimum tile dimension "
                         f"{c.min_m} (allow_padding is off)")

    def budgets(stat, dbc):
        a_db, b_db = stat != Stationarity.AStationary, stat != Stationarity.BStationary
        return (c.l0a_bytes // (c.bytes_a * (2 if a_db else 1)), c.l0b_bytes // (c.bytes_b * (2 if b_db else 1)),
                c.l0c_bytes // (c.bytes_c * (2 if dbc else 1)))

    os_ = Stationarity.OutputStationary
    a0, b0, c0 = budgets(os_, False)
    min_c = _l0c_elems(c.min_m, c.min_n, c)
    if _up(c.min_m, c.box_align_m) > a0 // c.min_k or _up(c.min_n, c.box_align_n) > b0 // c.min_k or c0 < min_c:
        raise ValueError("choose_l0_tile: the L0 capacities cannot hold the minimum tile")
    best = _best(c, os_, False, a0, b0, c0, False, False)
    if best is None:
        raise ValueError(f"choose_l0_tile: no legal (m, n, k) tile for M={c.M}, N={c.N}, K={c.K}")
    if (best["m"], best["n"], best["k"]) != (c.M, c.N, c.K):  # tiled: score the richer regimes
        stats = [os_] + [Stationarity.AStationary] * bool(c.allow_a_stationary) \
            + [Stationarity.BStationary] * bool(c.allow_b_stationary)
        for stat in stats:
            for dbc in (False, True) if c.allow_double_buffer_c else (False,):
                if stat == os_ and not dbc:
                    continue
                a, b, cc = budgets(stat, dbc)
                if cc < min_c:
                    continue
                x = _best(c, stat, dbc, a, b, cc, dbc, stat != os_ or dbc)
                if x is not None and x["cost"] < best["cost"]:
                    best = x
    r = L0TileResult(best["m"], best["n"], best["k"], best["traffic"], best["cost"], best["volume"])
    r.stationarity, r.double_buffer_c = best["stat"], best["dbc"]
    r.os_holds_a = _holds_a(best["m"], best["n"], c)
    return r


__all__ = ["L0TileConfig", "L0TileResult", "Stationarity", "choose_l0_tile"]
