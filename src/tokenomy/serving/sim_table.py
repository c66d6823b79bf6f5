"""The simulator's step times: the engine evaluated once on a grid, read off by interpolation, summed in closed form.

    grid        t[n, j, i] = scheduler.step_time(n decodes, context c_i, P_j prefill tokens), n = 0..n_max,
                P_j = j·N/P_GRID (N the token budget), c_i = c_lo + i·dc (dc = (c_hi − c_lo)/C_GRID, >= 1 token)
    one step    t(n, c, P): bilinear in (P, c) between grid points, clamped to the grid's edges; an engine that runs
                a prompt chunk as its own pass (scheduler.unmixed_step: t(0, P) + t(n, 0), a jump at P > 0) reads
                its first P cell from a row at one prompt token instead of P = 0 (``first``), so a small chunk is
                not interpolated down toward the decode-only step
    a run       k pure-decode steps of n decodes whose mean context starts at c and grows one token a step:
                Σ_{j<k} t(n, c + j, 0). t is linear in c inside a context cell (slope s per token), so each cell
                the run crosses adds m·t(n, c') + s·m(m − 1)/2 for its m steps — the same seconds as stepping
    first step  ``steps_to_reach(n, c, T)``: the fewest m >= 1 steps of a run whose seconds reach T (an arrival
                is due), from the same closed form (the root of the cell's quadratic, then checked exactly);
                ``decode_run`` gives that m and its seconds from one walk
"""

from __future__ import annotations

import math
from math import ceil, floor, inf, isfinite, sqrt

import numpy as np

P_GRID = 16  # prefill-token grid cells over the budget
C_GRID = 8  # context grid cells


class StepTable:
    """Step seconds t(n decodes, context, P prefill tokens) from a grid ``t[n, P, context]`` (module docstring)."""

    def __init__(self, t: np.ndarray, budget: float, c_lo: float, dc: float, first=None):
        t = np.asarray(t, float)
        self.t = np.where(np.isfinite(t), t, np.inf)
        # t[n, context] at one prompt token, where the step jumps at P > 0 (module docstring); None: no jump
        self.first = None if first is None else np.where(np.isfinite(first), np.asarray(first, float), np.inf)
        self._first = None if self.first is None else self.first.tolist()
        self.budget, self.c_lo, self.dc = float(budget), float(c_lo), float(dc)
        self.dp = self.budget / (self.t.shape[1] - 1)
        self.c_cells, self.p_cells = self.t.shape[2] - 1, self.t.shape[1] - 1
        self._rows = self.t.tolist()  # Python floats: the per-step reads stay off numpy
        self._decode = [r[0] for r in self._rows]  # P = 0 rows, t[n][i]
        # per P = 0 row its cells' rises row[i + 1] − row[i] and slopes per token (the same floats decode_run needs)
        self._rise = [[b - a for a, b in zip(r, r[1:])] for r in self._decode]
        self._slope = [[d / self.dc for d in r] for r in self._rise]
        self._pieces = list(zip(self._decode, self._rise, self._slope))  # per n, read once a run

    @classmethod
    def for_deployment(cls, dep, n_max: int, budget: float, c_lo: float, c_hi: float, pctx: float, *,
                       p_cells: int = P_GRID, c_cells: int = C_GRID, chunk_tokens=None) -> "StepTable":
        """The engine (scheduler.step_time) over n = 0..n_max, the P grid over the budget and the context grid
        (``p_cells``/``c_cells`` cells: the disaggregated pools' prefill-only and decode-only tables);
        ``chunk_tokens``: a prompt chunk's tokens under attention-DP (scheduler.rank_chunk)."""
        from tokenomy.serving.scheduler import step_time

        dc = max((c_hi - c_lo) / c_cells, 1.0)
        n = np.arange(n_max + 1, dtype=float)[:, None, None]
        P = np.linspace(0.0, float(budget), p_cells + 1)[None, :, None]
        C = (c_lo + dc * np.arange(c_cells + 1))[None, None, :]
        t = np.asarray(step_time(dep, n, C, P, pctx, chunk_tokens=chunk_tokens), float)
        first = None
        if np.any(np.asarray(dep.eff.mixed_prefill) < 0.5):
            first = np.asarray(step_time(dep, n[:, 0], C[0], 1.0, pctx, chunk_tokens=chunk_tokens), float)
        return cls(t, budget, c_lo, dc, first)

    def __call__(self, n: int, ctx: float, P: float) -> float:
        """One step: bilinear in P and context (clamped to the grid)."""
        top_c, top_p = self.c_cells, self.p_cells
        x = (ctx - self.c_lo) / self.dc
        if x <= 0.0:
            i, fx = 0, 0.0
        elif x >= top_c:
            i, fx = top_c - 1, 1.0
        else:
            i = int(x)
            fx = x - i
        y = P / self.dp
        if y >= top_p:
            j, y = top_p - 1, float(top_p)
        else:
            j = int(y) if y > 0.0 else 0
            y = y if y > 0.0 else 0.0
        rows = self._rows[n]
        lo, hi = rows[j], rows[j + 1]
        if j == 0 and y > 0.0 and self._first is not None:
            lo = self._first[n]
        a = lo[i] + fx * (lo[i + 1] - lo[i])
        b = hi[i] + fx * (hi[i + 1] - hi[i])
        return a + (y - j) * (b - a)

    def decode_run_s(self, n: int, ctx: float, k: int) -> float:
        """Σ_{j<k} t(n, ctx + j, 0): seconds of k pure-decode steps (module docstring)."""
        return self.decode_run(n, ctx, math.inf, k)[1]

    def steps_to_reach(self, n: int, ctx: float, T: float, k_max: int) -> int:
        """The fewest m in 1..k_max with decode_run_s(n, ctx, m) >= T (k_max when none)."""
        return self.decode_run(n, ctx, T, k_max)[0]

    def decode_run(self, n: int, ctx: float, T: float, k_max: int) -> tuple[int, float]:
        """(m, decode_run_s(n, ctx, m)) for the fewest m in 1..k_max whose seconds reach T (m = k_max when none,
        T = inf: the whole run): one walk over the run's linear pieces for both."""
        total, j = 0.0, 0
        reach = T < inf
        row, rise, slope = self._pieces[n]
        c_lo, dc, top = self.c_lo, self.dc, self.c_cells
        while j < k_max:
            # the next m steps sharing one linear piece of t(n, ·, 0): value f0 at ctx + j, slope s per token
            c = ctx + j
            x = (c - c_lo) / dc
            if x <= 0.0:  # below the grid: the first value, flat, until the context passes c_lo
                m, f0, s = max(min(k_max - j, floor(c_lo - c) + 1), 1), row[0], 0.0
            elif x >= top:  # above it: the last value, flat
                m, f0, s = k_max - j, row[top], 0.0
            else:
                i = int(x)
                m = ceil(c_lo + (i + 1) * dc - c)  # to where the next piece starts
                if m > k_max - j:
                    m = k_max - j
                elif m < 1:
                    m = 1
                s = slope[i]
                f0 = row[i] + (x - i) * rise[i]
            seg = m * f0 + s * (m * (m - 1) / 2.0)
            if total + seg < T or not reach:
                total, j = total + seg, j + m
                continue
            R = T - total
            b = f0 - s / 2.0  # G(q) = (s/2)q² + b·q reaches R at q = 2R / (b + sqrt(b² + 2sR))
            d = b * b + 2.0 * s * R
            q = 2.0 * R / (b + sqrt(0.0 if d < 0.0 else d))  # (max(d, 0), NaN kept)
            # an infinite step (the batch's KV over the cache at this context: t = inf, its slope NaN) reaches T at once
            if isfinite(q):
                q = ceil(q)
                q = 1 if q < 1 else (m if q > m else q)
            else:
                q = 1
            while q > 1 and total + ((q - 1) * f0 + s * ((q - 1) * (q - 2) / 2.0)) >= T:  # G(q − 1) reaches T
                q -= 1
            while True:
                got = total + (q * f0 + s * (q * (q - 1) / 2.0))
                if q >= m or got >= T:  # (else G(q) short of T: one step more)
                    return j + q, got
                q += 1
        return k_max, total
