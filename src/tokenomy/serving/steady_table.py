"""The steady state of one workload's mean turn, tabulated over (load, hit rate): the session solver's shortcut.

PERFORMANCE SHORTCUT (DESIGN 12). session_steady solves the steady state ~30 times per point (its root finders);
for a sweep of many points (over TABLE_ABOVE) it reads these tables instead of solving every point: steady.steady
over a grid of request rates (open loop, log-spaced up to the replica's capacity) x hit rates, and of requests in
flight (closed loop) x hit rates, every field interpolated bilinearly (log load, hit; ``names``: only the fields the
solve's inner loop reads, gathered at once). The ISL and OSL are fixed (the workload's means), so the grid is
two-dimensional. benchmarks/sessions.py measures the rate with and without it;
tests/serving/test_kv_che.py holds the table within 3% of the solved TTFT on random points away from saturation.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from tokenomy.serving.steady import Steady, steady

TABLE_ABOVE = 4096  # points: below this, solve each point (exact); above, the tables
LOADS, HITS = 96, 34  # grid cells


class SteadyTable:
    def __init__(self, dep1, prof, isl: float, osl: float, closed: bool):
        self.hits = np.linspace(0.0, 0.99, HITS)
        self.closed = closed
        if closed:
            top = float(np.ravel(steady(dep1, prof, isl=isl, osl=osl, concurrency=1e6, cache_hit=0.0).b_kv)[0])
            self.loads = np.geomspace(1.0, max(4.0 * top, 2.0), LOADS)
        else:
            cap = steady(dep1, prof, isl=isl, osl=osl, concurrency=np.full(HITS, 1e6), cache_hit=self.hits)
            top = float(np.nanmax(cap.requests_per_s))
            self.loads = np.geomspace(top * 1e-5, top * 1.2, LOADS)
        L, H = np.meshgrid(self.loads, self.hits, indexing="ij")
        kw = dict(concurrency=L) if closed else dict(rate=L)
        s = steady(dep1, prof, isl=isl, osl=osl, cache_hit=H, **kw)
        self.grid = {f.name: np.asarray(getattr(s, f.name), float) for f in fields(Steady)}
        self.log_loads = np.log(self.loads)
        self._stacks: dict = {}

    def __call__(self, load, hit, names=None):
        """Every field at (load, hit), bilinear in (log load, hit), as a Steady; beyond the grid's loads: NaN (no
        answer). ``names``: only those fields, as a ``Fields`` (the solve's inner loop reads a few)."""
        load, hit = np.broadcast_arrays(np.asarray(load, float), np.asarray(hit, float))
        lx = self.log_loads
        step = (lx[-1] - lx[0]) / (LOADS - 1)  # the loads are log-spaced: the cell by division, not a search
        u = (np.log(np.clip(load, self.loads[0], self.loads[-1])) - lx[0]) / step
        i = np.clip(np.floor(u).astype(int), 0, LOADS - 2)
        fx = u - i
        y = np.clip(hit, 0.0, 0.99) / (0.99 / (HITS - 1))
        j = np.clip(np.floor(y).astype(int), 0, HITS - 2)
        fy = y - j
        beyond = load > self.loads[-1] * (1 + 1e-9)
        keys = tuple(self.grid) if names is None else tuple(names)
        g = self.stacked(keys)  # [load·hit, field]: one gather of each corner for every field
        ij = i * HITS + j
        wx, wy = fx[..., None], fy[..., None]
        with np.errstate(invalid="ignore"):  # inf (no steady state) x a zero weight: NaN, as past the grid
            v = ((g.take(ij, 0) * (1 - wx) + g.take(ij + HITS, 0) * wx) * (1 - wy)
                 + (g.take(ij + 1, 0) * (1 - wx) + g.take(ij + HITS + 1, 0) * wx) * wy)
        v[beyond] = np.nan
        out = {k: v[..., n] for n, k in enumerate(keys)}
        for name in ("capacity_limited", "fits"):
            if name in out:
                out[name] = out[name] > 0.5
        if "bound" in out:
            out["bound"] = np.nan_to_num(out["bound"]).round().astype(int)
        return Steady(**out) if names is None else Fields(out)

    def stacked(self, keys: tuple) -> np.ndarray:
        if keys not in self._stacks:
            self._stacks[keys] = np.stack([self.grid[k] for k in keys], -1).reshape(LOADS * HITS, len(keys))
        return self._stacks[keys]


class Fields(dict):
    """Some of Steady's fields by attribute (the solve's inner loop)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None
