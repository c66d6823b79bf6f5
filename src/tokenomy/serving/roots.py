"""Vectorised roots of increasing functions over arrays of points: regula falsi in a bracket, and a warm start.

falsi       regula falsi with the Illinois rule in [a, b] (g(a) <= 0 < g(b)), a bisection where the secant leaves the
            bracket; where g jumps over zero it closes on the jump (its docstring)
warm_root   from a guess x0 near the root: g(x0), a Newton step x1 = x0 − g(x0)/s (s a neighbouring solve's slope of
            g, else 1: for g(x) = x − model(x), the fixed-point map's step, exact where model does not depend on x),
            a secant x2 through both; a point stops at the first |g| < tol, regula falsi finishes where two of them
            bracket the root, and the rest is left to the caller's wide bracket
Used by serving/session_steady.py (its e2e roots and the hit rate's crossing).
"""

from __future__ import annotations

import numpy as np

STEPS = 60  # regula falsi steps at most, per root (Illinois: a few suffice; bisection-safeguarded)
SLOPE_MIN = 0.05  # a neighbour's slope of g outside [SLOPE_MIN, 1/SLOPE_MIN] is not used (a jump between them)


def warm_root(idx, guess, x, todo, model, root, tol, slope=None, bounds=None) -> None:
    """The root of g(x) = x − model(x) (increasing in x) at the flat points ``idx`` from a ``guess`` (module
    docstring): writes x where found, marks in ``todo`` the points it leaves to a wide bracket; ``bounds``: four
    arrays over every point (x below the root, its g, x above, its g) where it writes what it learnt of those
    points (from below or above: −inf or inf where nothing). ``model(idx, x)``;
    ``root(idx, a, b, ends)``: regula falsi in [a, b] with g(a), g(b) known; ``slope``: g's slope per point from a
    neighbouring solve (updated in place), else 1 (the fixed-point map's step)."""
    x0 = guess[idx]
    g0 = bounded(x0 - model(idx, x0))
    s = 1.0 if slope is None else slope[idx]
    x1 = x0 - g0 / s  # the fixed-point map's step (s = 1), or Newton's with a neighbour's slope
    # each later candidate only where the earlier ones are not within tol: the arrays shrink (o: the points open
    # after g0, p: those of o open after g1, as positions in o)
    x[idx] = x0  # (overwritten where g0 is not within tol)
    o = np.flatnonzero(np.abs(g0) >= tol)
    if not o.size:
        return
    x0, g0, x1 = x0[o], g0[o], x1[o]
    g1 = bounded(x1 - model(idx[o], x1))
    with np.errstate(invalid="ignore", divide="ignore"):
        s_new = (g1 - g0) / (x1 - x0)
        x2 = x1 - g1 * (x1 - x0) / (g1 - g0)
    if slope is not None:
        s_o = slope[idx[o]]
        slope[idx[o]] = np.where(np.isfinite(s_new) & (s_new > SLOPE_MIN) & (s_new < 1.0 / SLOPE_MIN), s_new, s_o)
    x[idx[o]] = x1
    p = np.flatnonzero(np.abs(g1) >= tol)
    if not p.size:
        return
    x0, g0, x1, g1, x2 = x0[p], g0[p], x1[p], g1[p], x2[p]
    x2 = np.where(np.isfinite(x2), x2, x1)
    g2 = bounded(x2 - model(idx[o[p]], x2))
    x[idx[o[p]]] = x2
    q = np.flatnonzero(np.abs(g2) >= tol)  # none of the three within tol
    if not q.size:
        return
    open_idx = idx[o[p[q]]]
    # the tightest bracket among the three from below (largest x with g < 0) and above (smallest x with g > 0),
    # each with its g (per candidate over the points: no short last axis)
    below, g_below = np.full(q.shape, -np.inf), np.full(q.shape, np.nan)
    above, g_above = np.full(q.shape, np.inf), np.full(q.shape, np.nan)
    for xc, gc in ((x0[q], g0[q]), (x1[q], g1[q]), (x2[q], g2[q])):
        lower, upper = (gc < 0) & (xc > below), (gc > 0) & (xc < above)
        below, g_below = np.where(lower, xc, below), np.where(lower, gc, g_below)
        above, g_above = np.where(upper, xc, above), np.where(upper, gc, g_above)
    inside = np.isfinite(below) & np.isfinite(above) & (below < above)
    if np.any(inside):
        k = np.flatnonzero(inside)
        x[open_idx[k]] = root(open_idx[k], below[k], above[k], (g_below[k], g_above[k]))
    left = ~inside
    todo[open_idx[left]] = True
    x[open_idx[left]] = np.nan
    if bounds is not None:
        for out, v in zip(bounds, (below, g_below, above, g_above)):
            out[open_idx[left]] = v[left]


def falsi(g, a, b, tol, ends=None):
    """The root of g, increasing across [a, b] (1-D arrays over points; g(a) <= 0 < g(b)), by regula falsi with
    the Illinois rule (the end kept twice has its g halved) and a bisection where the secant leaves the bracket:
    a point stops where |g| < tol or its bracket is narrower than tol. Where g jumps over zero (the steady state's
    open loop ends at the replica's capacity with a finite e2e) the bracket closes on the jump and the end with
    the smaller |g| is returned, so the answer does not depend on the step count. NaN where g(b) <= 0 (no root in
    the bracket), ``a`` where g(a) >= 0. ``g(x, at)``: g at the points ``at`` (a mask over every point, or the
    sorted indices of those still open, the only ones evaluated), x their values; ``ends``: (g(a), g(b)) where
    already known."""
    a, b = np.array(a, float), np.array(b, float)
    every = np.ones(a.shape, bool)
    ga, gb = (bounded(g(a, every)), bounded(g(b, every))) if ends is None else map(np.array, ends)
    x = np.where(ga >= 0, a, np.nan)
    live = np.flatnonzero((ga < 0) & (gb > 0))  # the points still open (their indices; the arrays below theirs)
    a, b, ga, gb = a[live], b[live], ga[live], gb[live]
    ra, rb = np.abs(ga), np.abs(gb)  # the ends' own |g| (the Illinois rule scales ga, gb)
    side = np.zeros(live.shape, int)
    for _ in range(STEPS):
        if not live.size:
            break
        with np.errstate(invalid="ignore", divide="ignore"):
            c = b - gb * (b - a) / (gb - ga)
        c = np.where((c > a) & (c < b), c, 0.5 * (a + b))
        gc = bounded(g(c, live))
        r = gc > 0  # the root is left of c
        l_ = ~r
        ga = np.where(r & (side == 1), 0.5 * ga, ga)
        gb = np.where(l_ & (side == -1), 0.5 * gb, gb)
        a, ga, ra = np.where(l_, c, a), np.where(l_, gc, ga), np.where(l_, np.abs(gc), ra)
        b, gb, rb = np.where(r, c, b), np.where(r, gc, gb), np.where(r, np.abs(gc), rb)
        side = np.where(r, 1, -1)
        done = np.abs(gc) < tol
        x[live] = np.where(done, c, np.where(ra <= rb, a, b))  # (the others: narrow, or overwritten later)
        keep = np.flatnonzero(~done & (b - a >= tol))
        live, a, b, ga, gb, ra, rb, side = (v[keep] for v in (live, a, b, ga, gb, ra, rb, side))
    return x


def bounded(g):
    """A NaN or infinite g (no answer at that point: the model unbounded) as a large negative step, so that the
    bracket moves past it."""
    out = np.clip(np.asarray(g, float), -50.0, 50.0)  # (±inf to ±50)
    out[np.isnan(out)] = -50.0
    return out
