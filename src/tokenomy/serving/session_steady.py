"""The analytic steady state of session traffic on one replica with KV tiers, vectorised over workload points: the
fixed point of serving/session_state.py's equations (the state at a hit rate h and a turn time e2e).

The solve. For a given h, e2e is the root of x − log model(e^x), x = log e2e, model = s.e2e + load at the λ_s
that e2e gives. It rises with x on each branch: the open loop's e2e falls as e2e grows (a longer turn lowers λ_s),
the closed loop's rises slower than e2e (X·e2e in flight grows as e2e/(e2e + θ)). Between them it jumps: the open
loop's e2e stays finite up to the replica's capacity, where the closed loop's at saturation is longer. Where the
sessions saturate the replica the root sits at that jump, and a plain iteration of the whole state hopped across
it (DeepSeek-V3 on a GB200 NVL72 rack, agentic, think 30 s, 1,024 sessions, HBM only: TTFT 0.4 s, 0.7 s or 1.5 s
by its iteration count). Regula falsi (``roots.falsi``) closes its bracket on the root or the jump and returns the end
with the smaller residual: at the jump, the closed loop's saturated state (within a few % of self-consistent).
The answer is then a fixed point of the hit rate's map
f(h) = hits.hit_rate at that state, h = f(h). f need not be monotone nor a contraction: more hits mean less prefill,
fewer running requests and more HBM for the prefix cache (more hits), but also faster turns and more sessions per
second to hold (fewer). So f(h) − h is scanned on HIT_GRID (f(0) >= 0 and f(0.99) <= 0.99 always; the solve
(solve_warm) skips the nodes a lower node vouches for, ``_scan``) and its LOWEST downward crossing solved (regula falsi,
Illinois, within the crossing's cell, to |f(h) − h| < HIT_TOL). The lowest is the state a cold engine reaches: it
starts with an empty cache (h = 0), and the hit rate it climbs to stops at the first self-consistent state. ``bistable`` marks the points where the scan found a higher one too (reachable
only from a warm cache). The DeepSeek case above has a single crossing (f(h) >= 0.92 for every h: at saturation the
running set leaves 3-5e6 tokens of HBM, enough for the few sessions thinking): 0.960, as the session simulator with
vLLM's shared block pool (serving/kv_hbm_pool.py) finds (tests/serving/test_session_agreement.py). Counting the queue's KV as held (vLLM admits a waiting request as soon as its prompt's blocks fit) gave a
congested low state at think 4 s (0.49, TTFT 146 s) that the simulator reached only with a plain LRU beside the
running set (0.33, 228 s), not with the shared pool: not kept.
"""

from __future__ import annotations

import numpy as np

from tokenomy.serving.roots import bounded, falsi, warm_root
from tokenomy.serving.session_state import (HIT_CAP, SessionProblem, SessionSteady, problem, state_at,
                                            state_of)

HIT_GRID = 12  # scan cells of f(h) − h over [0, HIT_CAP]
HIT_TOL = 1e-5  # |f(h) − h| at the answer
E2E_TOL = 1e-5  # |log e2e − log model(e2e)| at the answer
SCAN_TOL = 3e-3  # the same on the scan's cells, which only place the crossing (its cell is then solved to E2E_TOL)
F_FALL = 1.0  # f(h) falls at most this per unit of h (measured <= 0.51 over tests/serving/test_session_solve.py's grid)


def session_steady(dep1, prof, w, stack, lower_capacities, *, concurrency=None, rate=None, think_s=None,
                   pool=None) -> SessionSteady:
    """Arrays over points (module docstring) on the one-replica deployment ``dep1``. ``lower_capacities``:
    [..., tier] tokens of the tiers below HBM (may be empty: HBM only); ``concurrency`` sessions or ``rate``
    sessions/s; ``think_s``: think times (default the workload's)."""
    pb = problem(dep1, prof, w, stack, lower_capacities, concurrency=concurrency, rate=rate, think_s=think_s,
                 pool=pool)
    return solve_warm(pb)


def solve_warm(pb: SessionProblem) -> SessionSteady:
    """The solve with warm starts: the scan (``_scan``: the grid's nodes a point needs, each node's e2e root started
    from the point's previous nodes', to SCAN_TOL: the nodes only place the crossing); the crossing's e2e roots
    started between its cell's ends, to E2E_TOL, and its last one kept for the answer's state. ~16 evaluations of
    the state per point (27 scanning every node, 63 with brackets around each guess, 84 before:
    benchmarks/sessions.py), one call per round of nodes. session_steady's solve at any number of points: with
    steady solved per point (TABLE_ABOVE points or fewer) its ~18 calls of the state take half the CPU of
    solve_plain's ~33 (one Llama-3.1-8B/H100 point: 0.32 s against 0.68; 20 points 0.73 against 1.31; 300 points
    1.42 against 2.58), within the tolerances tests/serving/test_session_solve.py holds it to against solve_plain."""
    flat = pb.take(np.ones(pb.load.shape, bool))
    grid = np.linspace(0.0, HIT_CAP, HIT_GRID)
    t_seen = np.full((len(pb.stack.levels),) + flat.load.shape, np.nan)  # each point's last T per tier (Newton's start)
    xs, gap, slope = _scan(flat, grid, t_seen)
    lo, hi, bistable = _lowest_crossing(grid, gap)
    k = np.searchsorted(grid, lo)
    rows = np.arange(len(k))
    x_lo, x_hi = xs[rows, k], xs[rows, k + 1]

    seen_h, seen_x = np.full(lo.shape, np.nan), np.full(lo.shape, np.nan)  # each point's last h and its log e2e

    def g(h, m):  # the e2e guess: log e2e interpolated between the crossing cell's ends
        guess = x_lo[m] + (h - lo[m]) / (hi[m] - lo[m]) * (x_hi[m] - x_lo[m])
        t_m, s_m = t_seen[:, m], slope[m]
        x, f = _log_e2e(flat.take(m), h, np.where(np.isfinite(guess), guess, np.nan), with_hits=True, slope=s_m,
                        t_seen=t_m)
        seen_h[m], seen_x[m], t_seen[:, m], slope[m] = h, x, t_m, s_m
        return h - f

    # the cell's ends are the scan's: g = h − f(h) = −gap there
    h = falsi(g, lo, hi, HIT_TOL, (bounded(-gap[rows, k]), bounded(-gap[rows, k + 1])))
    h = np.where(np.isnan(h), hi, h)  # f(h) >= h up to the cap: every reusable token hits
    again = ~(seen_h == h)  # the e2e root at the answer is kept where the crossing's last solve was at it
    x = np.where(again, np.nan, seen_x)
    if np.any(again):
        guess = x_lo[again] + (h[again] - lo[again]) / (hi[again] - lo[again]) * (x_hi[again] - x_lo[again])
        x[again] = _log_e2e(flat.take(again), h[again], np.where(np.isfinite(guess), guess, np.nan))
    shape = pb.load.shape
    return state_of(pb, h.reshape(shape), x.reshape(shape), bistable.reshape(shape), True,
                    t_seen.reshape(t_seen.shape[:1] + shape))  # (T: Newton's start)


def _scan(flat: SessionProblem, grid, t_seen):
    """(log e2e, f(h) − h) on the nodes of ``grid`` each point needs to place its lowest downward crossing and the
    crossings above it, in rounds (one _log_e2e call each, every point at its own next node):
      search  from node 0 up: a node's gap γ = f(h) − h >= 0 vouches for the nodes up to h + γ/(1 + F_FALL) (f falls
              at most F_FALL per unit of h, so f(h') − h' >= γ − (1 + F_FALL)(h' − h) >= 0 there): skipped
              (gap +inf, log e2e NaN); the next node is the first past that
      lower   a node found below zero whose lower neighbour was skipped: that neighbour is evaluated (the crossing
              cell's ends both solved, as the crossing's regula falsi starts from their gaps and log e2e)
      above   once the crossing is placed, every node above it (a second downward crossing: ``bistable``)
    The crossings are then those of scanning every node (tests/serving/test_session_solve.py: against solve_plain
    over a stated grid). A node's e2e root starts from the point's previous nodes' (the polynomial through the last
    three at most; the first node's from the unloaded e2e) with a Newton step at the previous node's slope of g."""
    n, K = flat.load.shape[0], len(grid)
    xs, gap = np.full(n * K, np.nan), np.full(n * K, np.inf)  # flat over [point, node]: one index a write
    done = np.zeros(n * K, bool)
    hist_h, hist_x = np.full((3, n), np.nan), np.full((3, n), np.nan)  # the last three nodes solved (a ring: slot
    solved = np.zeros(n, int)  # solved % 3 the next to overwrite; the polynomial does not depend on their order)
    slope = np.ones(n)  # g's slope in log e2e per point, from the previous node (Newton's first step)
    nxt = np.zeros(n, int)  # each point's next node (-1: its scan is done)
    above = np.zeros(n, bool)  # the crossing is placed: the nodes above it follow
    first = _first_guess(flat)
    while True:
        m = np.flatnonzero(nxt >= 0)
        if not m.size:
            return xs.reshape(n, K), gap.reshape(n, K), slope
        k = nxt[m]
        h = grid[k]
        every = m.size == n  # (every point: no gathers)
        guess = first[m] if not np.any(k) else np.where(k == 0, first[m], _lagrange(hist_h[:, m], hist_x[:, m], h))
        s_m, t_m = (slope, t_seen) if every else (slope[m], t_seen[:, m])
        x, f = _log_e2e(flat if every else flat.take(m), h, guess, with_hits=True, tol=SCAN_TOL, slope=s_m,
                        t_seen=t_m)
        if not every:
            slope[m], t_seen[:, m] = s_m, t_m
        at = m * K + k
        xs[at], gap[at], done[at] = x, f - h, True
        ring = solved[m] % 3 * n + m
        hist_h.reshape(-1)[ring], hist_x.reshape(-1)[ring] = h, x
        solved[m] += 1
        nxt[m] = _next_node(grid, gap, done, k, f - h, above, m)


def _next_node(grid, gap, done, k, g, above, m):
    """The next node of the points ``m`` (``_scan``'s rules) after node k gave them gap g; -1 where done;
    ``above`` (over every point) set where the crossing is now placed. ``gap``, ``done``: flat over [point, node]."""
    K = len(grid)
    at = m * K
    up = above[m]
    # search: vouched-for nodes skipped (the first node past h + γ/(1 + F_FALL), the top one at most)
    jump = np.minimum(np.searchsorted(grid, grid[k] + g / (1.0 + F_FALL), "right"), K - 1)
    jump = np.where(np.isfinite(g), np.maximum(jump, k + 1), k + 1)
    below = g < 0
    low_known = (k == 0) | done[at + np.maximum(k - 1, 0)]
    # below zero: its lower neighbour if skipped (evaluated: the crossing cell's ends both solved); node 0 below zero
    # searches on (f(0) >= 0 always: a NaN state); at or above zero: the search's jump
    out = np.where(below, np.where(k == 0, 1, np.where(low_known, -1, k - 1)), np.where(k < K - 1, jump, -1))
    top = at + np.minimum(k + 1, K - 1)  # a lower neighbour solved after the node above it was found below zero
    placed = ~up & ((below & low_known & (k > 0)) | (~below & (k < K - 1) & done[top] & (gap[top] < 0)))
    above[m] = up | placed
    # above: every node above the crossing not yet solved (and above the first one found below zero)
    pu = np.flatnonzero(placed | up)
    if pu.size:
        rows = m[pu]
        neg = gap.reshape(-1, K)[rows] < 0
        start = np.maximum(k[pu] + 1, np.where(np.any(neg, 1), np.argmax(neg, 1), K))
        later = ~done.reshape(-1, K)[rows] & (np.arange(K) >= start[:, None])
        out[pu] = np.where(np.any(later, 1), np.argmax(later, 1), -1)
    return out


def _lagrange(hh, xx, h):
    """The polynomial through the finite (hh, xx) pairs of each column (three at most), at h: a node's log e2e
    guess from the point's previous nodes'."""
    ok = np.isfinite(hh) & np.isfinite(xx)
    out = np.zeros(len(h))
    for i in range(hh.shape[0]):
        w = ok[i].astype(float)
        for j in range(hh.shape[0]):
            if j != i:
                with np.errstate(invalid="ignore", divide="ignore"):
                    term = (h - hh[j]) / (hh[i] - hh[j])
                w *= np.where(ok[j], term, 1.0)
        out += np.where(ok[i], w * xx[i], 0.0)
    return np.where(np.any(ok, 0), out, np.nan)


def _first_guess(flat: SessionProblem) -> np.ndarray:
    """The first scan cell's log e2e guess (h = 0): the unloaded e2e, or where the closed loop's sessions would
    ask for more than the replica serves at h = 0 (X_max requests/s, the capacity of its open loop), the e2e that
    brings them down to it: λ_s·M = X_max at λ_s = U/(turns·(e2e + θ)) (Little's law on the sessions)."""
    if not flat.closed:
        return np.log(flat.e2e0)
    X_max = flat.capacity_per_s
    tt = flat.tt  # D_session = a·e2e + b·θ (TurnTypes.session_s): a = D_session at (1, 0), b at (0, 1)
    e2e_sat = (flat.load * tt.requests_per_session / X_max - tt.session_s(0.0, 1.0) * flat.theta) / \
        tt.session_s(1.0, 0.0)
    return np.log(np.maximum(flat.e2e0, e2e_sat))


def solve_plain(pb: SessionProblem) -> SessionSteady:
    """The straightforward solve: every e2e root from the wide bracket, the scan's cells all at once (the reference
    the warm-started path is tested against)."""
    grid = np.linspace(0.0, HIT_CAP, HIT_GRID)
    scan = pb.expand(HIT_GRID)
    H = np.broadcast_to(grid, scan.load.shape)
    gap = hit_map(scan, H) - H
    lo, hi, bistable = _lowest_crossing(grid, gap)
    flat = pb.take(np.ones(pb.load.shape, bool))
    h = falsi(lambda x, m: x - hit_map(flat.take(m), x), lo.ravel(), hi.ravel(), HIT_TOL).reshape(lo.shape)
    h = np.where(np.isnan(h), hi, h)  # f(h) >= h up to the cap: every reusable token hits
    return _state(pb, h, bistable, full=True)


def hit_map(pb: SessionProblem, h, guess=None) -> np.ndarray:
    """f(h): the Che hit rate of the state the replica settles in when its requests hit h of their input
    (``guess``: log e2e near the root, flat over the points, or None)."""
    return _state(pb, h, None, guess).hits.hit_rate


def _lowest_crossing(grid, gap):
    """The first scan cell where f(h) − h goes from >= 0 to < 0 (there is one: f(0) >= 0, f(HIT_CAP) < HIT_CAP
    unless every token hits), and whether a later cell crosses again downward."""
    down = (gap[..., :-1] >= 0) & (gap[..., 1:] < 0)
    k = np.where(np.any(down, -1), np.argmax(down, -1), len(grid) - 2)
    return grid[k], grid[k + 1], np.sum(down, -1) > 1


def _state(pb: SessionProblem, h, bistable, guess=None, full=False) -> SessionSteady:
    """The state at hit rate h: log e2e solved (module docstring; ``guess`` as in ``_log_e2e``), then the hits.
    ``full``: every field of its Steady (else the few the solve reads)."""
    h = np.broadcast_to(np.asarray(h, float), pb.load.shape)
    flat = pb.take(np.ones(pb.load.shape, bool))
    x = _log_e2e(flat, h.ravel(), guess).reshape(h.shape)
    return state_of(pb, h, x, bistable, full)


def _log_e2e(flat: SessionProblem, h, guess=None, with_hits=False, tol=None, slope=None, t_seen=None):
    """log e2e at hit rates h (flat points): the root of g(x) = x − log model(e^x) to |g| < ``tol`` (E2E_TOL).
    With a ``guess``: g there, then one step of the fixed-point map (x1 = log model(e^x0), exact where model does not
    depend on e2e: an open loop; x1 = x0 − g0/s with ``slope`` s, g's slope from a neighbouring solve, where
    given: updated in place), then a secant through both; a point stops where |g| < tol, and where two of those
    points bracket the root (g rises with x: the same root or jump as the wide bracket's) regula falsi finishes
    inside them. The other points (NaN guess included) are solved in the wide bracket [log e2e0 − log 1e3, log e2e0
    + log 1e6]. ``with_hits``: (x, f) with f the hit rate of the state at x (kept from the evaluation at x where
    the root finder made one there, else evaluated). ``t_seen``: [tier, point] characteristic times of a previous
    evaluation at each point (NaN: none), each evaluation's start for T's Newton steps, updated in place."""
    tol = E2E_TOL if tol is None else tol
    seen_x, seen_f = np.full(h.shape, np.nan), np.full(h.shape, np.nan)  # each point's last evaluation
    seen_t = np.full((len(flat.stack.levels),) + h.shape, np.nan) if t_seen is None else t_seen  # its T per tier

    def model(idx, x):  # log model(e^x) at the flat points idx, noting the hit rate each gives
        every = idx.size == h.size  # every point (idx sorted, distinct): no gathers
        at = slice(None) if every else idx
        new, _, hits = state_at(flat if every else flat.take(idx), h[at], np.exp(x), t_guess=seen_t[:, at])[:3]
        seen_x[at], seen_f[at] = x, hits.hit_rate
        for j, t in enumerate(hits.t_char):
            seen_t[j, at] = t
        return np.log(new)

    def root(idx, a, b, ends=None):
        return falsi(lambda x, k: x - model(idx[k], x), a, b, tol, ends)

    x = np.full(h.shape, np.nan)
    todo = np.ones(h.shape, bool) if guess is None else ~np.isfinite(guess)
    # the wide bracket's ends, narrowed to what a warm start learnt (an x below the root or above it, with its g)
    a, b = np.log(flat.e2e0 * 1e-3), np.log(flat.e2e0 * 1e6)
    bounds = (np.full(h.shape, -np.inf), np.full(h.shape, np.nan), np.full(h.shape, np.inf), np.full(h.shape, np.nan))
    if guess is not None and not np.all(todo):
        warm_root(np.flatnonzero(~todo), np.asarray(guess, float), x, todo, model, root, tol, slope, bounds)
    if np.any(todo):
        idx = np.flatnonzero(todo)
        x[idx] = _wide_root(idx, a, b, bounds, lambda k, xk: xk - model(idx[k], xk), root)
    if not with_hits:
        return x
    again = ~(seen_x == x)  # the root finder returned a point it did not evaluate last (or no root)
    if np.any(again):
        seen_f[again] = state_of(flat.take(again), h[again], x[again], t_guess=seen_t[:, again]).hits.hit_rate
    return x, seen_f


def _wide_root(idx, a, b, bounds, g, root):
    """The roots at the flat points ``idx`` in the wide bracket [a, b], its ends moved in to the bounds a warm start
    found (``bounds``: x below, its g, x above, its g; ±inf where none) where they lie inside it; g evaluated at
    the ends not known (``g(k, x)`` at the points k of idx), then regula falsi (``root(idx, a, b, ends)``)."""
    lo, g_lo, hi, g_hi = (v[idx] for v in bounds)
    a, b = a[idx], b[idx]
    use_lo, use_hi = (lo > a) & (lo < b), (hi < b) & (hi > a)
    a, b = np.where(use_lo, lo, a), np.where(use_hi, hi, b)
    ga, gb = np.where(use_lo, g_lo, np.nan), np.where(use_hi, g_hi, np.nan)
    for ends, at in ((ga, a), (gb, b)):
        k = np.flatnonzero(np.isnan(ends))
        if k.size:
            ends[k] = bounded(g(k, at[k]))
    return root(idx, a, b, (ga, gb))
