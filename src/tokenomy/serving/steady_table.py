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

from tokenomy.serving.steady import Prefix, Steady, steady

TABLE_ABOVE = 4096  # points: below this, solve each point (exact); above, the tables
LOADS, HITS = 96, 34  # grid cells
HIT_CAP = 0.99  # steady's cache hit stays below 1 (one token computed): the grid's last row


def capacity(dep1, prof, isl: float, osl: float, shared_tokens: float = 0.0) -> Steady:
    """steady.steady at the replica's capacity (1e6 requests in flight) on the tables' hit rates: the open table's
    top rate, the closed table's B_kv (at hit 0), solved once for both and for session_state's capacity."""
    return steady(dep1, prof, concurrency=np.full(HITS, 1e6), prefix=Prefix(np.linspace(0.0, HIT_CAP, HITS),
                                                                            shared_tokens), isl=isl, osl=osl)


class SteadyTable:
    def __init__(self, dep1, prof, isl: float, osl: float, closed: bool, shared_tokens: float = 0.0,
                 cap: Steady | None = None):
        """``cap``: ``capacity`` at these arguments (solved here when None)."""
        self.hits = np.linspace(0.0, HIT_CAP, HITS)
        self.closed = closed
        one = dict(isl=isl, osl=osl)
        hit = lambda h: Prefix(h, shared_tokens)  # noqa: E731
        cap = capacity(dep1, prof, isl, osl, shared_tokens) if cap is None else cap
        if closed:
            top = float(np.ravel(cap.b_kv)[0])
            self.loads = np.geomspace(1.0, max(4.0 * top, 2.0), LOADS)
        else:
            top = float(np.nanmax(cap.requests_per_s))
            self.loads = np.geomspace(top * 1e-5, top * 1.2, LOADS)
        L, H = np.meshgrid(self.loads, self.hits, indexing="ij")
        kw = dict(concurrency=L) if closed else dict(rate=L)
        s = steady(dep1, prof, prefix=hit(H), **one, **kw)
        self.grid = {f.name: np.asarray(getattr(s, f.name), float) for f in fields(Steady)}
        self.log_loads = np.log(self.loads)
        self._stacks: dict = {}

    def __call__(self, load, hit, names=None):
        """Every field at (load, hit), bilinear in (log load, hit), as a Steady; beyond the grid's loads: NaN (no
        answer). ``names``: only those fields, as a ``Fields`` (the solve's inner loop reads a few)."""
        load, hit = np.broadcast_arrays(np.asarray(load, float), np.asarray(hit, float))
        shape, load, hit = load.shape, load.ravel(), hit.ravel()
        lx = self.log_loads
        step = (lx[-1] - lx[0]) / (LOADS - 1)  # the loads are log-spaced: the cell by division, not a search
        # np.minimum/np.maximum, not np.clip (the same values, a fraction of the overhead per call)
        u = (np.log(np.minimum(np.maximum(load, self.loads[0]), self.loads[-1])) - lx[0]) / step
        i = np.minimum(np.maximum(np.floor(u).astype(np.intp), 0), LOADS - 2)
        fx = u - i
        y = np.minimum(np.maximum(hit, 0.0), HIT_CAP) / (HIT_CAP / (HITS - 1))
        j = np.minimum(np.maximum(np.floor(y).astype(np.intp), 0), HITS - 2)
        fy = y - j
        beyond = load > self.loads[-1] * (1 + 1e-9)
        keys = tuple(self.grid) if names is None else tuple(names)
        ij = i * HITS + j
        gx, gy = 1 - fx, 1 - fy
        out = {}
        with np.errstate(invalid="ignore"):  # inf (no steady state) x a zero weight: NaN, as past the grid
            for k in keys:  # field by field, in place: temporaries of one field's points, not of every field's
                c = self.corners(k).take(ij, 1)  # [corner, ...]: one gather of a cell's four corners
                v = np.multiply(c[0], gx)  # ((c0·(1 − fx) + c1·fx)·(1 − fy) + (c2·(1 − fx) + c3·fx)·fy)
                v += np.multiply(c[1], fx, out=c[1])
                v *= gy
                w = np.multiply(c[2], gx, out=c[2])
                w += np.multiply(c[3], fx, out=c[3])
                w *= fy
                v += w
                v[beyond] = np.nan
                out[k] = v.reshape(shape)
        for name in ("capacity_limited", "fits"):
            if name in out:
                out[name] = out[name] > 0.5
        if "bound" in out:
            out["bound"] = np.nan_to_num(out["bound"]).round().astype(int)
        return Steady(**out) if names is None else Fields(out)

    def corners(self, key: str) -> np.ndarray:
        """[corner, load·hit cell] of one field: each cell's (i, j), (i + 1, j), (i, j + 1), (i + 1, j + 1) values."""
        if key not in self._stacks:
            g = self.grid[key]
            pad = np.concatenate([g, g[-1:]], 0)  # the last row's cells are never read (i <= LOADS - 2)
            pad = np.concatenate([pad, pad[:, -1:]], 1)
            c = np.stack([pad[:-1, :-1], pad[1:, :-1], pad[:-1, 1:], pad[1:, 1:]], 0)
            self._stacks[key] = np.ascontiguousarray(c.reshape(4, LOADS * HITS))
        return self._stacks[key]


class Fields(dict):
    """Some of Steady's fields by attribute (the solve's inner loop)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None
