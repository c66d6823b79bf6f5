"""The Pareto fronts of a sweep, kept chunk by chunk (the front of a union is the front of the fronts).

Passes: per (model, hardware), the points no other beats on both tokens/s per chip and tokens/s per user.
Serving: per (model, hardware), the points no other beats on both $/Mtok (output) and TTFT (lower is better).
Each front point keeps its flat index into the grid (for its coordinates), its two values and its binding term.
The front itself is parallel.search.pareto (the plan's).
"""

from __future__ import annotations

import numpy as np

from tokenomy.answers.sweep_axes import Grid, labels
from tokenomy.core.engine import BOUNDS
from tokenomy.parallel.search import pareto

AXES_OF = {False: ("tokens_per_s_per_user", "tokens_per_s_per_chip"), True: ("ttft_s", "usd_per_mtok_output")}
SERIES = ("model", "hardware")


class Fronts:
    """Accumulates the fronts of a sweep over its chunks (``add``), then ``rows()`` per series."""

    def __init__(self, grid: Grid) -> None:
        self.grid = grid
        self.x_name, self.y_name = AXES_OF[grid.serving]
        self.kept: dict = {}  # series key -> (flat index, x, y, bound)

    def _key_of(self, flat_idx):
        g = self.grid
        pos = np.unravel_index(flat_idx, g.shape)
        keys = [pos[g.names.index(n)] for n in SERIES]
        return keys[0] * len(g.axis("hardware")) + keys[1]

    def add(self, block: tuple[slice, ...], values: dict) -> None:
        g = self.grid
        ok = np.ravel(values["reason"]) == 0
        if not ok.any():
            return
        idx = np.ravel_multi_index(np.meshgrid(*(np.arange(s.start, s.stop) for s in block), indexing="ij"),
                                   g.shape).ravel()[ok]
        x, y = np.ravel(values[self.x_name])[ok], np.ravel(values[self.y_name])[ok]
        b = np.ravel(values["bound"])[ok]
        key = self._key_of(idx)
        for k in np.unique(key):
            sel = key == k
            self._keep(int(k), (idx[sel], x[sel], y[sel], b[sel]))

    def merge(self, other: "Fronts") -> None:
        """Take in another's fronts (a chunk's, kept where it was evaluated: a dask worker)."""
        for k, part in other.kept.items():
            self._keep(k, part)

    def _keep(self, k: int, part: tuple) -> None:
        parts = [part] + ([self.kept[k]] if k in self.kept else [])
        i, xx, yy, bb = (np.concatenate(p) for p in zip(*parts))
        good = np.isfinite(xx) & np.isfinite(yy) & (xx > 0) & (yy > 0)
        i, xx, yy, bb = i[good], xx[good], yy[good], bb[good]
        # maximise both: tokens/s per chip and per user; serving: 1/$ and 1/TTFT
        a, c = (1.0 / yy, 1.0 / xx) if self.grid.serving else (yy, xx)
        f = pareto(a, c, np.ones(a.shape, dtype=bool))
        self.kept[k] = (i[f], xx[f], yy[f], bb[f])

    def rows(self) -> list[dict]:
        """One dict per front point: series, the two values, the binding term and the point's coordinates."""
        g, out = self.grid, []
        coords = {n: labels(g, n) for n in g.names}
        for k in sorted(self.kept):
            idx, x, y, b = self.kept[k]
            order = np.argsort(x)
            pos = np.unravel_index(idx[order], g.shape)
            for j, o in enumerate(order):
                point = {n: coords[n][pos[a][j]] for a, n in enumerate(g.names)}
                out.append({"series": f"{point['model']} on {point['hardware']}", self.x_name: float(x[o]),
                            self.y_name: float(y[o]), "bound": BOUNDS[int(b[o])], "point": point})
        return out
