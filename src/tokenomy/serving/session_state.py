"""The state of one replica under session traffic at a token hit rate h and a turn time e2e: the equations that
serving/session_steady.py solves for their fixed point, vectorised over workload points.

Per point (arrays: concurrent sessions or session rate, tier capacities, think time), the state at a token hit
rate h is:
    λ_s   = U / D_session (closed loop: U sessions back to back) or the session rate (open)
            D_session = K·(e2e + θ) + spawns·D: the session's critical path, its K turns each an end-to-end
            time plus a think time, and each spawn's sub-agent run D (a parent's turn waits for the slowest of its
            sub-agents: turn_types.TurnTypes.sub_run_s)
    X     = λ_s · requests per session                         requests/s on the replica
    s     = steady.steady(rate = X, ISL, OSL the turn means, prefix = Prefix(h, the shared system prompt))
    hits  = kv_che.che_hits at λ_s (HBM's capacity: the KV pool less the running requests' B·(ISL + OSL/2))
    load  = Σ_j r_j·(E[S_j] + W_j): r_j the share of requests reading from tier j, S_j = latency_j + h·s_j its
            read, W_j = λ_j·E[S_j²] / (2·(1 − ρ_j)) the wait for the tier's channel (M/G/1, Pollaczek–Khinchine;
            λ_j = X·r_j, ρ_j = λ_j·E[S_j]); "layerwise-overlapped" hides the prefill of the computed tokens
            I·s_prefill under it
    TTFT  = s.TTFT + load,  e2e = s.e2e + load
s is steady's open loop at X (a turn lands after a random think time, mid-step, as Poisson arrivals do); for U
sessions past the replica's capacity, where the open loop has no steady state, its closed loop at the requests in
flight (Little: X·e2e).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from tokenomy.serving.kv_capacity import kv_tokens
from tokenomy.serving.kv_che import CheHits, che_hits
from tokenomy.serving.turn_types import turn_types
from tokenomy.serving.steady import Prefix, Steady, steady
from tokenomy.serving.steady_table import HIT_CAP, TABLE_ABOVE, Fields, SteadyTable, capacity

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
    bistable: np.ndarray  # a higher self-consistent hit rate exists too (session_steady's module docstring)


def pool_tokens(dep1, prof, w) -> float:
    """One replica's KV pool in tokens at the workload's mean sequence."""
    tt = turn_types(w)
    return float(np.ravel(kv_tokens(dep1, prof, tt.mean(tt.isl + tt.osl)).tokens)[0])


@dataclass(frozen=True)
class SessionProblem:
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

    def take(self, mask) -> "SessionProblem":
        """The points where ``mask`` (of the points' shape) holds, flattened."""
        return replace(self, load=self.load[mask], theta=self.theta[mask], lower=self.lower[mask],
                       e2e0=self.e2e0[mask])

    def expand(self, extra: int) -> "SessionProblem":
        """The points repeated over a new last axis of ``extra`` (the hit scan)."""
        ax = lambda a: np.repeat(np.asarray(a)[..., None], extra, -1)  # noqa: E731
        return SessionProblem(self.tt, self.stack, ax(self.load), ax(self.theta), np.moveaxis(ax(self.lower), -1, -2),
                        self.pool, self.isl, self.osl, self.closed, ax(self.e2e0),
                        self.solve_open, self.solve_closed, self.tokenize_s, self.capacity_per_s)


def problem(dep1, prof, w, stack, lower_capacities, *, concurrency=None, rate=None, think_s=None,
            pool=None) -> SessionProblem:
    tt = turn_types(w)
    theta = np.asarray(w.think_s if think_s is None else think_s, float)
    load = np.asarray(concurrency if concurrency is not None else rate, float)
    lower = np.asarray(lower_capacities, float)
    shape = np.broadcast_shapes(load.shape, theta.shape, lower.shape[:-1])
    isl, osl = tt.mean(tt.isl), tt.mean(tt.osl)
    one = dict(isl=isl, osl=osl, prefix=Prefix(0.0, tt.shared_tokens))  # the mean turn, its shared prefix held once
    e2e0 = float(np.ravel(steady(dep1, prof, concurrency=1.0, **one).e2e_s)[0])  # unloaded
    cap = capacity(dep1, prof, isl, osl, tt.shared_tokens)  # at the tables' hit rates, the first h = 0
    solve_open, solve_closed = _solvers(dep1, prof, one, int(np.prod(shape)), cap)
    return SessionProblem(tt, stack, np.broadcast_to(load, shape), np.broadcast_to(theta, shape),
                    np.broadcast_to(lower, shape + lower.shape[-1:]),
                    pool_tokens(dep1, prof, w) if pool is None else pool, isl, osl,
                    concurrency is not None, np.full(shape, e2e0),
                    solve_open, solve_closed, isl * float(prof.tokenize_s_per_token), float(cap.requests_per_s[0]))


def state_of(pb: SessionProblem, h, x, bistable=None, full=False, t_guess=None) -> SessionSteady:
    """The state at hit rate h when log e2e is x (its root); ``t_guess`` as in ``state_at``."""
    e2e = np.where(np.isfinite(x), np.exp(x), np.inf)  # no root: the queue grows without bound
    new, s, hits, wait, lam, hbm = state_at(pb, h, e2e, full, t_guess)
    shape = np.shape(e2e)
    none = np.where(np.isfinite(e2e), 0.0, np.inf)  # no steady state: TTFT and e2e unbounded
    return SessionSteady(hits, s, np.reshape(s.ttft_s, shape) + wait + none, np.reshape(s.e2e_s, shape) + wait + none,
                         wait, lam * pb.tt.requests_per_session, lam, pb.isl, pb.osl, hbm, pb.tt.requests_per_session,
                         np.zeros(shape, bool) if bistable is None else bistable)


def state_at(pb: SessionProblem, h, e2e, full=False, t_guess=None):
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
    # a turn's wait before it references its blocks (the forks' hold, kv_che's W): the admission queue, and before it
    # the tokenizer and the tiers' reads, which the simulator starts on arrival and the scheduler admits after
    # (sim_session_run: pinned at admission); their wait is e2e − s.e2e at the fixed point, so the trial e2e gives it
    # (counted as pinned, a congested read channel pinned every fork and held HBM on a second, inconsistent branch)
    before = np.nan_to_num(np.where(np.isfinite(e2e), e2e, 0.0) - np.reshape(s.e2e_s, shape), nan=0.0, neginf=0.0)
    queue = np.nan_to_num(np.reshape(s.queue_s, shape), posinf=0.0) + np.clip(before, 0.0, None)
    hits = che_hits(tt, pb.stack, caps, lam, pb.theta, tt.sub_run_s(e2e, pb.theta), t_guess, queue)
    wait = _load_wait(pb.stack, hits, X, pb.isl * (1.0 - hits.hit_rate)) + _tokenizer_wait(pb.tokenize_s, X)
    new = np.reshape(s.e2e_s, shape) + wait
    return new, s, hits, wait, lam, hbm


def _solvers(dep1, prof, one: dict, points: int, cap: Steady):
    """(open loop at rate, closed loop in flight) -> Steady at the mean turn ``one`` (steady's isl, osl,
    prefix: its shared_tokens): solved per point, or read from steady_table's grids for a sweep of more than
    TABLE_ABOVE points (the marked shortcut; ``cap``: steady_table.capacity, their top load)."""
    lengths, shared = dict(isl=one["isl"], osl=one["osl"]), one["prefix"].shared_tokens
    if points <= TABLE_ABOVE:
        return (lambda X, h, names=None: steady(dep1, prof, rate=X, prefix=Prefix(h, shared), **lengths),
                lambda U, h, names=None: steady(dep1, prof, concurrency=U, prefix=Prefix(h, shared), **lengths))
    return (SteadyTable(dep1, prof, **lengths, closed=False, shared_tokens=shared, cap=cap),
            SteadyTable(dep1, prof, **lengths, closed=True, shared_tokens=shared, cap=cap))


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
