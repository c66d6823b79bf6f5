"""The steady state of one workload's mean turn, tabulated over (load, hit rate): the session solver's shortcut.

PERFORMANCE SHORTCUT (DESIGN 12). session_steady solves the steady state some hundreds of times per point (its bisections); for a sweep of
many points (over TABLE_ABOVE) it reads these tables instead of solving every point: steady.steady over a grid of
request rates (open loop, log-spaced up to the replica's capacity) x hit rates, and of requests in flight (closed
loop) x hit rates, every field interpolated bilinearly (log load, hit). The ISL and OSL are fixed (the workload's
means), so the grid is two-dimensional. benchmarks/sessions.py measures the rate with and without it;
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

    def __call__(self, load, hit) -> Steady:
        """Every field at (load, hit), bilinear in (log load, hit); beyond the grid's loads: NaN (no answer)."""
        load, hit = np.broadcast_arrays(np.asarray(load, float), np.asarray(hit, float))
        x = np.log(np.clip(load, self.loads[0], self.loads[-1]))
        lx = np.log(self.loads)
        i = np.clip(np.searchsorted(lx, x) - 1, 0, LOADS - 2)
        fx = (x - lx[i]) / (lx[i + 1] - lx[i])
        y = np.clip(hit, 0.0, 0.99) / (0.99 / (HITS - 1))
        j = np.clip(np.floor(y).astype(int), 0, HITS - 2)
        fy = y - j
        out = {}
        for name, g in self.grid.items():
            v = (g[i, j] * (1 - fx) * (1 - fy) + g[i + 1, j] * fx * (1 - fy) + g[i, j + 1] * (1 - fx) * fy
                 + g[i + 1, j + 1] * fx * fy)
            out[name] = np.where(load > self.loads[-1] * (1 + 1e-9), np.nan, v)
        for name in ("capacity_limited", "fits"):
            out[name] = out[name] > 0.5
        out["bound"] = np.nan_to_num(out["bound"]).round().astype(int)
        return Steady(**out)
