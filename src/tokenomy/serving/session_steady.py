"""The analytic steady state of session traffic on one replica with KV tiers, vectorised over workload points.

Per point (arrays: concurrent sessions or session rate, tier capacities, think time), the state at a token hit
rate h is:
    λ_s   = C / D_session (closed loop: C sessions back to back) or the session rate (open)
            D_session = K·(e2e + θ) + spawns·D: the session's critical path, its K turns each an end-to-end
            time plus a think time, and each spawn's sub-agent run D (a parent's turn waits for the slowest of its
            sub-agents: kv_che.TurnTypes.sub_run_s)
    X     = λ_s · requests per session                         requests/s on the replica
    s     = steady.steady(rate = X, ISL, OSL the turn means, cache_hit = h)
    hits  = kv_che.che_hits at λ_s (HBM's capacity: the KV pool less the running requests' B·(ISL + OSL/2))
    load  = Σ_j r_j·(E[S_j] + W_j): r_j the share of requests reading from tier j, S_j = latency_j + h·s_j its
            read, W_j = λ_j·E[S_j²] / (2·(1 − ρ_j)) the wait for the tier's channel (M/G/1, Pollaczek–Khinchine;
            λ_j = X·r_j, ρ_j = λ_j·E[S_j]); "layerwise-overlapped" hides the prefill of the computed tokens
            I·s_prefill under it
    TTFT  = s.TTFT + load,  e2e = s.e2e + load
s is steady's open loop at X (a turn lands after a random think time, mid-step, as Poisson arrivals do); for C
sessions past the replica's capacity, where the open loop has no steady state, its closed loop at the requests in
flight (Little: X·e2e).

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
second to hold (fewer). So f(h) − h is scanned on HIT_GRID (f(0) >= 0 and f(0.99) <= 0.99 always) and its LOWEST
downward crossing solved (regula falsi, Illinois, within the crossing's cell, to |f(h) − h| < HIT_TOL). The lowest
is the state a cold engine reaches: it starts with an empty cache (h = 0), and the hit rate it climbs to stops at
the first self-consistent state. ``bistable`` marks the points where the scan found a higher one too (reachable
only from a warm cache). The DeepSeek case above has a single crossing (f(h) >= 0.92 for every h: at saturation the
running set leaves 3-5e6 tokens of HBM, enough for the few sessions thinking): 0.94, as the session simulator with
vLLM's shared block pool (serving/kv_hbm_pool.py) finds, 0.96 (tests/serving/test_kv_che.py states it outside the
grid). Counting the queue's KV as held (vLLM admits a waiting request as soon as its prompt's blocks fit) gave a
congested low state at think 4 s (0.49, TTFT 146 s) that the simulator reached only with a plain LRU beside the
running set (0.33, 228 s), not with the shared pool: not kept.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from tokenomy.serving.kv_che import CheHits, che_hits, turn_types
from tokenomy.serving.roots import bounded, falsi, warm_root
from tokenomy.serving.scheduler import kv_tokens
from tokenomy.serving.steady import Steady, steady
from tokenomy.serving.steady_table import TABLE_ABOVE, Fields, SteadyTable

HIT_CAP = 0.99  # steady's cache_hit stays below 1 (one token computed)
HIT_GRID = 12  # scan cells of f(h) − h over [0, HIT_CAP]
HIT_TOL = 1e-5  # |f(h) − h| at the answer
E2E_TOL = 1e-5  # |log e2e − log model(e2e)| at the answer
SCAN_TOL = 1e-3  # the same on the scan's cells, which only place the crossing (its cell is then solved to E2E_TOL)
WARM = 0.05  # half-width in log e2e of a warm-started bracket (a neighbouring solve's root as its centre)
LEAN = ("batch", "e2e_s", "ttft_s", "capacity_limited", "queue_s")  # the fields of steady's answer the solve reads


@dataclass(frozen=True)
class SessionSteady:
    hits: CheHits
    steady: Steady
    ttft_s: np.ndarray
    e2e_s: np.ndarray
    load_s: np.ndarray  # mean seconds a request waits for its reads below HBM
    requests_per_s: np.ndarray
    sessions_per_s: np.ndarray
    isl: float
    osl: float
    hbm_tokens: np.ndarray  # HBM prefix-cache capacity used (the pool less the running requests)
    requests_per_session: float
    bistable: np.ndarray  # a higher self-consistent hit rate exists too (module docstring)


def pool_tokens(dep1, prof, w) -> float:
    """One replica's KV pool in tokens at the workload's mean sequence."""
    tt = turn_types(w)
    return float(np.ravel(kv_tokens(dep1, prof, tt.mean(tt.isl + tt.osl)).tokens)[0])


@dataclass(frozen=True)
class _Problem:
    """What the state at a hit rate needs (module docstring), arrays broadcast to the points' shape."""

    tt: object
    stack: object
    load: np.ndarray
    theta: np.ndarray
    lower: np.ndarray  # [..., tier below HBM] tokens
    pool: float
    isl: float
    osl: float
    closed: bool
    e2e0: np.ndarray  # the unloaded e2e (the bisection's scale)
    solve_open: object
    solve_closed: object
    tokenize_s: float = 0.0  # the API server's tokenization of a mean prompt, ISL·s_tok (EngineProfile)
    capacity_per_s: float = np.inf  # requests/s the replica serves at h = 0 (the first scan cell's guess)

    def take(self, mask) -> "_Problem":
        """The points where ``mask`` (of the points' shape) holds, flattened."""
        return replace(self, load=self.load[mask], theta=self.theta[mask], lower=self.lower[mask],
                       e2e0=self.e2e0[mask])

    def expand(self, extra: int) -> "_Problem":
        """The points repeated over a new last axis of ``extra`` (the hit scan)."""
        ax = lambda a: np.repeat(np.asarray(a)[..., None], extra, -1)  # noqa: E731
        return _Problem(self.tt, self.stack, ax(self.load), ax(self.theta), np.moveaxis(ax(self.lower), -1, -2),
                        self.pool, self.isl, self.osl, self.closed, ax(self.e2e0),
                        self.solve_open, self.solve_closed, self.tokenize_s, self.capacity_per_s)


def session_steady(dep1, prof, w, stack, lower_capacities, *, concurrency=None, rate=None, think_s=None,
                   pool=None) -> SessionSteady:
    """Arrays over points (module docstring) on the one-replica deployment ``dep1``. ``lower_capacities``:
    [..., tier] tokens of the tiers below HBM (may be empty: HBM only); ``concurrency`` sessions or ``rate``
    sessions/s; ``think_s``: think times (default the workload's)."""
    pb = problem(dep1, prof, w, stack, lower_capacities, concurrency=concurrency, rate=rate, think_s=think_s,
                 pool=pool)
    return solve_plain(pb) if pb.load.size <= TABLE_ABOVE else solve_warm(pb)


def solve_warm(pb: _Problem) -> SessionSteady:
    """The solve with warm starts: the scan cell by cell, each cell's e2e root started from the previous cells'
    (extrapolated; the first cell's from the unloaded e2e) with a Newton step at the previous cell's slope of g, to
    SCAN_TOL (the cells only place the crossing); the crossing's e2e roots started between its cell's ends, to
    E2E_TOL, and its last one kept for the answer's state. ~27 evaluations of the state per point (63 with
    brackets around each guess, 84 before: benchmarks/sessions.py), but one call per cell: it pays where the points
    are many (read from steady_table's grids); few points are solved faster all at once."""
    flat = pb.take(np.ones(pb.load.shape, bool))
    grid = np.linspace(0.0, HIT_CAP, HIT_GRID)
    xs = np.empty(flat.load.shape + (HIT_GRID,))  # log e2e per scan cell: the next cell's and the crossing's guess
    gap = np.empty_like(xs)
    slope = np.ones(flat.load.shape)  # g's slope in log e2e per point, from the previous cell (Newton's first step)
    t_seen = np.full((len(pb.stack.levels),) + flat.load.shape, np.nan)  # each point's last T per tier (Newton's start)
    for k, hk in enumerate(grid):
        guess = _first_guess(flat) if k == 0 else _extrapolated(xs[:, :k])
        hs = np.full(flat.load.shape, hk)
        xs[:, k], f = _log_e2e(flat, hs, guess, with_hits=True, tol=SCAN_TOL, slope=slope, t_seen=t_seen)
        gap[:, k] = f - hk
    lo, hi, bistable = _lowest_crossing(grid, gap)
    k = np.searchsorted(grid, lo)
    rows = np.arange(len(k))
    x_lo, x_hi = xs[rows, k], xs[rows, k + 1]

    seen_h, seen_x = np.full(lo.shape, np.nan), np.full(lo.shape, np.nan)  # each point's last h and its log e2e

    def g(h, m):  # the e2e guess: log e2e interpolated between the crossing cell's ends
        guess = x_lo[m] + (h - lo[m]) / (hi[m] - lo[m]) * (x_hi[m] - x_lo[m])
        t_m = t_seen[:, m]
        x, f = _log_e2e(flat.take(m), h, np.where(np.isfinite(guess), guess, np.nan), with_hits=True, t_seen=t_m)
        seen_h[m], seen_x[m], t_seen[:, m] = h, x, t_m
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
    return _state_at(pb, h.reshape(shape), x.reshape(shape), bistable.reshape(shape), True)


def _first_guess(flat: _Problem) -> np.ndarray:
    """The first scan cell's log e2e guess (h = 0): the unloaded e2e, or where the closed loop's sessions would
    ask for more than the replica serves at h = 0 (X_max requests/s, the capacity of its open loop), the e2e that
    brings them down to it: λ_s·M = X_max at λ_s = C/(turns·(e2e + θ)) (Little's law on the sessions)."""
    if not flat.closed:
        return np.log(flat.e2e0)
    X_max = flat.capacity_per_s
    tt = flat.tt  # D_session = a·e2e + b·θ (TurnTypes.session_s): a = D_session at (1, 0), b at (0, 1)
    e2e_sat = (flat.load * tt.requests_per_session / X_max - tt.session_s(0.0, 1.0) * flat.theta) / \
        tt.session_s(1.0, 0.0)
    return np.log(np.maximum(flat.e2e0, e2e_sat))


def _extrapolated(xs):
    """The next scan cell's log e2e from the previous cells' (polynomial through the last three at most)."""
    k = xs.shape[-1]
    if k == 1:
        return xs[:, 0]
    if k == 2:
        return 2.0 * xs[:, 1] - xs[:, 0]
    return 3.0 * xs[:, k - 1] - 3.0 * xs[:, k - 2] + xs[:, k - 3]


def solve_plain(pb: _Problem) -> SessionSteady:
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


def problem(dep1, prof, w, stack, lower_capacities, *, concurrency=None, rate=None, think_s=None,
            pool=None) -> _Problem:
    tt = turn_types(w)
    theta = np.asarray(w.think_s if think_s is None else think_s, float)
    load = np.asarray(concurrency if concurrency is not None else rate, float)
    lower = np.asarray(lower_capacities, float)
    shape = np.broadcast_shapes(load.shape, theta.shape, lower.shape[:-1])
    isl, osl = tt.mean(tt.isl), tt.mean(tt.osl)
    one = dict(isl=isl, osl=osl, shared_tokens=tt.shared_tokens)  # the mean turn, its shared prefix held once
    e2e0 = float(np.ravel(steady(dep1, prof, concurrency=1.0, **one).e2e_s)[0])  # unloaded
    solve_open, solve_closed = _solvers(dep1, prof, one, int(np.prod(shape)))
    return _Problem(tt, stack, np.broadcast_to(load, shape), np.broadcast_to(theta, shape),
                    np.broadcast_to(lower, shape + lower.shape[-1:]),
                    pool_tokens(dep1, prof, w) if pool is None else pool, isl, osl,
                    concurrency is not None, np.full(shape, e2e0),
                    solve_open, solve_closed, isl * float(prof.tokenize_s_per_token),
                    float(np.ravel(steady(dep1, prof, concurrency=1e6, **one).requests_per_s)[0]))


def hit_map(pb: _Problem, h, guess=None) -> np.ndarray:
    """f(h): the Che hit rate of the state the replica settles in when its requests hit h of their input
    (``guess``: log e2e near the root, flat over the points, or None)."""
    return _state(pb, h, None, guess).hits.hit_rate


def _lowest_crossing(grid, gap):
    """The first scan cell where f(h) − h goes from >= 0 to < 0 (there is one: f(0) >= 0, f(HIT_CAP) < HIT_CAP
    unless every token hits), and whether a later cell crosses again downward."""
    down = (gap[..., :-1] >= 0) & (gap[..., 1:] < 0)
    k = np.where(np.any(down, -1), np.argmax(down, -1), len(grid) - 2)
    return grid[k], grid[k + 1], np.sum(down, -1) > 1


def _state(pb: _Problem, h, bistable, guess=None, full=False) -> SessionSteady:
    """The state at hit rate h: log e2e solved (module docstring; ``guess`` as in ``_log_e2e``), then the hits.
    ``full``: every field of its Steady (else the few the solve reads)."""
    h = np.broadcast_to(np.asarray(h, float), pb.load.shape)
    flat = pb.take(np.ones(pb.load.shape, bool))
    x = _log_e2e(flat, h.ravel(), guess).reshape(h.shape)
    return _state_at(pb, h, x, bistable, full)


def _state_at(pb: _Problem, h, x, bistable=None, full=False) -> SessionSteady:
    """The state at hit rate h when log e2e is x (its root)."""
    e2e = np.where(np.isfinite(x), np.exp(x), np.inf)  # no root: the queue grows without bound
    new, s, hits, wait, lam, hbm = _at(pb, h, e2e, full)
    shape = np.shape(e2e)
    none = np.where(np.isfinite(e2e), 0.0, np.inf)  # no steady state: TTFT and e2e unbounded
    return SessionSteady(hits, s, np.reshape(s.ttft_s, shape) + wait + none, np.reshape(s.e2e_s, shape) + wait + none,
                         wait, lam * pb.tt.requests_per_session, lam, pb.isl, pb.osl, hbm, pb.tt.requests_per_session,
                         np.zeros(shape, bool) if bistable is None else bistable)


def _log_e2e(flat: _Problem, h, guess=None, with_hits=False, tol=None, slope=None, t_seen=None):
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
        new, _, hits = _at(flat.take(idx), h[idx], np.exp(x), t_guess=seen_t[:, idx])[:3]
        seen_x[idx], seen_f[idx] = x, hits.hit_rate
        for j, t in enumerate(hits.t_char):
            seen_t[j, idx] = t
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
        seen_f[again] = _state_at(flat.take(again), h[again], x[again]).hits.hit_rate
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


def _at(pb: _Problem, h, e2e, full=False, t_guess=None):
    """The model's e2e (and the state) when a turn takes ``e2e``: λ_s, steady at X and h, HBM left, hits, wait.
    ``full``: every field of steady's answer, else only LEAN; ``t_guess``: [tier, ...] characteristic times near
    the answer (a previous evaluation's at the same point: Newton's start)."""
    tt, M = pb.tt, pb.tt.requests_per_session
    shape = np.shape(e2e)
    lam = pb.load / tt.session_s(e2e, pb.theta) if pb.closed else pb.load
    hit = np.broadcast_to(np.minimum(h, HIT_CAP), shape)
    X = np.broadcast_to(np.maximum(lam * M, 1e-9), shape)
    names = None if full else LEAN
    s = pb.solve_open(X, hit, names)
    if pb.closed:  # past the replica's capacity the open loop has no answer: the sessions' closed loop, in flight
        in_flight = np.maximum(X * np.where(np.isfinite(e2e), e2e, 0.0), 1.0)
        s = _or_closed(s, lambda bad: pb.solve_closed(np.broadcast_to(in_flight, bad.shape)[bad],
                                                      np.broadcast_to(hit, bad.shape)[bad], names))
    # the running requests' own blocks: their prompts less the prefixes the cache holds anyway (TurnTypes.shared_tokens)
    running = np.nan_to_num(np.reshape(s.batch, shape) * (pb.isl - pb.tt.shared_tokens + pb.osl / 2.0))
    hbm = np.maximum(pb.pool - running, 0.0)
    caps = [hbm] + [pb.lower[..., j] for j in range(pb.lower.shape[-1])]
    queue = np.nan_to_num(np.reshape(s.queue_s, shape), posinf=0.0)  # a turn's wait for admission (the forks' hold)
    hits = che_hits(tt, pb.stack, caps, lam, pb.theta, tt.sub_run_s(e2e, pb.theta), t_guess, queue)
    wait = _load_wait(pb.stack, hits, X, pb.isl * (1.0 - hits.hit_rate)) + _tokenizer_wait(pb.tokenize_s, X)
    new = np.reshape(s.e2e_s, shape) + wait
    return new, s, hits, wait, lam, hbm


def _solvers(dep1, prof, one: dict, points: int):
    """(open loop at rate, closed loop in flight) -> Steady at the mean turn ``one`` (steady's isl, osl,
    shared_tokens): solved per point, or read from steady_table's grids for a sweep of more than TABLE_ABOVE points
    (the marked shortcut)."""
    if points <= TABLE_ABOVE:
        return (lambda X, h, names=None: steady(dep1, prof, rate=X, cache_hit=h, **one),
                lambda C, h, names=None: steady(dep1, prof, concurrency=C, cache_hit=h, **one))
    return (SteadyTable(dep1, prof, one["isl"], one["osl"], closed=False, shared_tokens=one["shared_tokens"]),
            SteadyTable(dep1, prof, one["isl"], one["osl"], closed=True, shared_tokens=one["shared_tokens"]))


def _or_closed(s_open: Steady, closed) -> Steady:
    """The open loop's steady state where it has one (turns arrive after random think times: a request lands
    mid-step and queues as Poisson arrivals do), else the closed loop's at the requests in flight (Little's law),
    ``closed(mask)`` solved at those points only."""
    bad = ~(np.isfinite(s_open.ttft_s) & ~np.asarray(s_open.capacity_limited, bool))
    if not np.any(bad):
        return s_open
    sc = closed(bad)
    out = {}
    names = [f.name for f in fields(Steady)] if isinstance(s_open, Steady) else list(s_open)
    for name in names:
        a = np.array(np.broadcast_to(getattr(s_open, name), bad.shape))
        a[bad] = np.ravel(getattr(sc, name))
        out[name] = a
    return Steady(**out) if isinstance(s_open, Steady) else Fields(out)


def _tokenizer_wait(s_req: float, X):
    """Seconds a request spends at the API server's one tokenizer worker (serving/sim_sessions, tokenize): its own
    S = ISL·s_tok plus the FCFS queue, M/D/1: ρ·S / (2(1 − ρ)) with ρ = X·S (capped below 1)."""
    if s_req <= 0:
        return 0.0
    rho = np.minimum(X * s_req, 0.99)
    return s_req * (1.0 + rho / (2.0 * (1.0 - rho)))


def _load_wait(stack, hits: CheHits, X, computed_tokens):
    """Mean seconds a request waits for its reads below HBM, queueing for each tier's channel (module docstring)."""
    wait = np.zeros(np.shape(X))
    for j in range(1, len(stack.levels)):
        lv = stack.levels[j]
        r, h = hits.reads_by[j], hits.read_tokens_by[j]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_tok = np.where(r > 0, h / np.where(r > 0, r, 1.0), 0.0)
        ES = lv.latency_s + mean_tok * lv.read_s_per_token
        ES2 = lv.latency_s ** 2 + 2 * lv.latency_s * mean_tok * lv.read_s_per_token + \
            hits.read_sq_by[j] * lv.read_s_per_token ** 2
        lam_j = X * r
        rho = lam_j * ES
        W = np.where(rho < 1.0, lam_j * ES2 / (2.0 * np.maximum(1.0 - rho, 1e-9)), np.inf)
        own = ES + W
        if stack.load == "layerwise-overlapped":
            own = np.maximum(own - computed_tokens * stack.prefill_s_per_token, 0.0)
        wait = wait + np.where(r > 0, r * own, 0.0)
    return wait
