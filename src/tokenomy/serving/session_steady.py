"""The analytic steady state of session traffic on one replica with KV tiers, vectorised over workload points.

Per point (arrays: concurrent sessions or session rate, tier capacities, think time), a fixed point of:
    λ_s   = C / D_session (closed loop: C sessions back to back) or the session rate (open)
            D_session = (K + spawns·K_sub)·(e2e + θ): the turns on the session's critical path (a parent's turn
            waits for its sub-agents), each its end-to-end time plus a think time
    X     = λ_s · requests per session                         requests/s on the replica
    hits  = kv_che.che_hits at λ_s (HBM's capacity: the KV pool less the running requests' B·(ISL + OSL/2))
    s     = steady.steady(rate = X, ISL, OSL the turn means, cache_hit = the token hit rate)
    load  = Σ_j r_j·(E[S_j] + W_j): r_j the share of requests reading from tier j, S_j = latency_j + h·s_j its
            read, W_j = λ_j·E[S_j²] / (2·(1 − ρ_j)) the wait for the tier's channel (M/G/1, Pollaczek–Khinchine;
            λ_j = X·r_j, ρ_j = λ_j·E[S_j]); "layerwise-overlapped" hides the prefill of the computed tokens
            I·s_prefill under it
    TTFT  = s.TTFT + load,  e2e = s.e2e + load
s is steady's open loop at X (a turn lands after a random think time, mid-step, as Poisson arrivals do); for C
sessions past the replica's capacity, where the open loop has no steady state, its closed loop at the requests in
flight (Little: X·e2e); iterated from the unloaded e2e until every point's e2e moves by under TOLERANCE (ITERATIONS at most), the closed loop's e2e damped (geometric mean of the
last two: an undamped step overshoots where the sessions load the replica near its capacity).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from tokenomy.serving.kv_che import CheHits, che_hits, turn_types
from tokenomy.serving.scheduler import kv_tokens
from tokenomy.serving.steady import Steady, steady
from tokenomy.serving.steady_table import TABLE_ABOVE, SteadyTable

ITERATIONS = 60  # at most; stops once every point's e2e moved by under TOLERANCE
TOLERANCE = 1e-4


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


def pool_tokens(dep1, prof, w) -> float:
    """One replica's KV pool in tokens at the workload's mean sequence."""
    tt = turn_types(w)
    return float(np.ravel(kv_tokens(dep1, prof, tt.mean(tt.isl + tt.osl)).tokens)[0])


def session_steady(dep1, prof, w, stack, lower_capacities, *, concurrency=None, rate=None, think_s=None,
                   pool=None) -> SessionSteady:
    """Arrays over points (module docstring) on the one-replica deployment ``dep1``. ``lower_capacities``:
    [..., tier] tokens of the tiers below HBM (may be empty: HBM only); ``concurrency`` sessions or ``rate``
    sessions/s; ``think_s``: think times (default the workload's)."""
    tt = turn_types(w)
    theta = np.asarray(w.think_s if think_s is None else think_s, float)
    load = np.asarray(concurrency if concurrency is not None else rate, float)
    lower = np.asarray(lower_capacities, float)
    shape = np.broadcast_shapes(load.shape, theta.shape, lower.shape[:-1])
    load, theta = np.broadcast_to(load, shape), np.broadcast_to(theta, shape)
    lower = np.broadcast_to(lower, shape + lower.shape[-1:])
    pool = pool_tokens(dep1, prof, w) if pool is None else pool
    isl, osl = tt.mean(tt.isl), tt.mean(tt.osl)
    spawns = float(np.sum(tt.obj_next_runs > 0))  # the parent's turns that spawn sub-agents
    path_turns = float(w.turns) + spawns * tt.sub_turns
    closed = concurrency is not None
    M = tt.requests_per_session
    e2e = np.full(shape, float(np.ravel(steady(dep1, prof, isl=isl, osl=osl, concurrency=1.0).e2e_s)[0]))  # unloaded
    running, T = np.zeros(shape), None
    solve_open, solve_closed = _solvers(dep1, prof, isl, osl, int(np.prod(shape)))
    for _ in range(ITERATIONS):
        lam = load / (path_turns * (e2e + theta)) if closed else load
        hbm = np.maximum(pool - running, 0.0)
        caps = np.concatenate([hbm[..., None], lower], axis=-1)
        hits = che_hits(tt, stack, caps, lam, theta, tt.sub_turns * (e2e + theta), T)
        T = np.where(hits.t_char_s > 0, hits.t_char_s, 1.0)
        hit = np.minimum(hits.hit_rate, 0.99)
        s = solve_open(np.maximum(lam * M, 1e-9), hit)
        if closed:  # past the replica's capacity the open loop has no answer: the sessions' closed loop, in flight
            in_flight = np.maximum(lam * M * e2e, 1.0)
            s = _or_closed(s, lambda bad: solve_closed(np.broadcast_to(in_flight, bad.shape)[bad],
                                                       np.broadcast_to(hit, bad.shape)[bad]))
        X = lam * M
        wait = _load_wait(stack, hits, X, isl * (1.0 - hits.hit_rate))
        new = np.nan_to_num(np.reshape(s.e2e_s, shape) + wait, nan=np.inf)
        last, e2e = e2e, (np.sqrt(e2e * new) if closed else new)  # damped: approached geometrically
        with np.errstate(invalid="ignore"):
            if np.all(~(np.abs(e2e / last - 1.0) > TOLERANCE)):
                break
        running = np.nan_to_num(np.reshape(s.batch, shape) * (isl + osl / 2.0))
    ttft = np.reshape(s.ttft_s, shape) + wait
    return SessionSteady(hits, s, ttft, np.reshape(s.e2e_s, shape) + wait, wait, X, lam, isl, osl, hbm,
                         tt.requests_per_session)


def _solvers(dep1, prof, isl, osl, points: int):
    """(open loop at rate, closed loop in flight) -> Steady: solved per point, or read from steady_table's grids
    for a sweep of more than TABLE_ABOVE points (the marked shortcut)."""
    if points <= TABLE_ABOVE:
        return (lambda X, h: steady(dep1, prof, isl=isl, osl=osl, rate=X, cache_hit=h),
                lambda C, h: steady(dep1, prof, isl=isl, osl=osl, concurrency=C, cache_hit=h))
    return SteadyTable(dep1, prof, isl, osl, closed=False), SteadyTable(dep1, prof, isl, osl, closed=True)


def _or_closed(s_open: Steady, closed) -> Steady:
    """The open loop's steady state where it has one (turns arrive after random think times: a request lands
    mid-step and queues as Poisson arrivals do), else the closed loop's at the requests in flight (Little's law),
    ``closed(mask)`` solved at those points only."""
    bad = ~(np.isfinite(s_open.ttft_s) & ~np.asarray(s_open.capacity_limited, bool))
    if not np.any(bad):
        return s_open
    sc = closed(bad)
    out = {}
    for f in fields(Steady):
        a = np.array(np.broadcast_to(getattr(s_open, f.name), bad.shape))
        a[bad] = np.ravel(getattr(sc, f.name))
        out[f.name] = a
    return Steady(**out)


def _load_wait(stack, hits: CheHits, X, computed_tokens):
    """Mean seconds a request waits for its reads below HBM, queueing for each tier's channel (module docstring)."""
    wait = np.zeros(np.shape(X))
    for j in range(1, len(stack.levels)):
        lv = stack.levels[j]
        r, h = hits.reads[..., j], hits.read_tokens[..., j]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_tok = np.where(r > 0, h / np.where(r > 0, r, 1.0), 0.0)
        ES = lv.latency_s + mean_tok * lv.read_s_per_token
        ES2 = lv.latency_s ** 2 + 2 * lv.latency_s * mean_tok * lv.read_s_per_token + \
            hits.read_sq_tokens[..., j] * lv.read_s_per_token ** 2
        lam_j = X * r
        rho = lam_j * ES
        W = np.where(rho < 1.0, lam_j * ES2 / (2.0 * np.maximum(1.0 - rho, 1e-9)), np.inf)
        own = ES + W
        if stack.load == "layerwise-overlapped":
            own = np.maximum(own - computed_tokens * stack.prefill_s_per_token, 0.0)
        wait = wait + np.where(r > 0, r * own, 0.0)
    return wait
