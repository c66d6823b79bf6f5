"""Hit rates of session traffic in LRU KV tiers, analytically: the characteristic-time (Che) approximation.

Che et al. (IEEE JSAC 2002; Fricker, Robert & Roberts, ITC 2012 for renewal requests): an LRU cache of capacity Cap
keeps an object for a characteristic time T after its last use, T the root of
    sum over objects of  size · (time-average share of time it is held) = Cap,
and a request finds its object when the time since the object's last use is under T. Session traffic
(serving/sessions.py) reuses an agent's own context at its next turn after the think time τ ~ Exp(θ) (after the
sub-agents' run D plus τ for a parent's turn that spawned them), so per turn type i (n_i a session, object O_i after
it, next use after τ_i = D_i + Exp(θ)):
    held_i(T)   = E[min(τ_i, T)] = T if T <= D_i, else D_i + θ·(1 − e^{−(T − D_i)/θ})      (the last turn: T)
    occupancy   = λ_s · Σ_i n_i · O_i · held_i(T) + S                                      (S the system prompt)
    P(hit)_i    = P(τ_i < T) = 1 − e^{−(T − D_i)/θ} for T > D_i, else 0
with λ_s sessions per second per replica (closed loop: C sessions over a session's duration; open: the rate). Per
tier: write-through keeps an LRU copy in every tier, each with its own T_j (from its own capacity); on-evict moves
what HBM evicts down, so tiers 0..j behave as one LRU of their summed capacity (T_{<=j}). A turn's reuse is served
by the fastest tier whose T exceeds its gap, when the lecture's rule says reading beats recomputing. T is solved by
Newton's method (occupancy is concave in T), vectorised over workload points (capacities, loads, think times as arrays).
Checked against the simulator (serving/sim_sessions.py) in tests/serving/test_kv_che.py over the grid stated there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NEWTON_STEPS = 60  # at most (from the upper bound a few suffice: tests/serving/test_kv_che.py)
T_RTOL = 1e-10  # |occupancy(T) − Cap| / Cap at the answer
T_MAX = 1e12  # s: T where λ·B vanishes (no session ever stops: everything held)
SETTLE = 0.1  # a step settles its point where the bound on the residual it leaves is under this share of T_RTOL


@dataclass(frozen=True)
class TurnTypes:
    """The workload's turns by type (arrays over types i): per session ``n``, input ``isl``, output ``osl``, own
    reusable tokens ``reuse`` (beyond the system prompt), its gap's fixed part in sub-agent runs ``d_runs`` (the
    gap is d_runs·(sub-agent run) + Exp(θ)), object after it ``obj``, and whether that object is never used
    again by its agent (``last``: held T)."""

    n: np.ndarray
    isl: np.ndarray
    osl: np.ndarray
    reuse: np.ndarray
    d_runs: np.ndarray
    obj: np.ndarray
    obj_next_runs: np.ndarray  # fixed part of the stored object's next gap, in sub-agent runs
    last: np.ndarray
    system_tokens: float
    sub_turns: int  # turns of a sub-agent (its run: sub_turns·(e2e + θ))
    fork: np.ndarray = None  # the parent's prefix a sub-agent's turn starts with (0 for a main agent's)

    @property
    def shared_tokens(self) -> float:
        """Mean tokens of a running turn's prompt held by objects the cache keeps anyway: the system prompt (the
        occupancy's S) and a sub-agent's fork (its parent's object, held through the sub-agents' run). vLLM's
        block pool counts a shared block once, so these are not the running requests' own."""
        return self.system_tokens + (0.0 if self.fork is None else self.mean(self.fork))

    @property
    def requests_per_session(self) -> float:
        return float(np.sum(self.n))

    def mean(self, x) -> float:
        return float(np.sum(self.n * x) / np.sum(self.n))


def turn_types(w) -> TurnTypes:
    """The turn types of a MultiTurn or Agentic workload from its means (serving/sessions.py). A sub-agent's turn
    reuses the parent's prefix up to the fork and its own context: both were last used by its previous turn (or,
    for its first, by the parent's), so both segments share that turn's gap."""
    S, a, b, o = float(w.system_prompt_tokens), float(w.first_input_tokens), float(w.new_input_tokens), float(w.output_tokens)
    K = int(w.turns)
    subs = int(getattr(w, "subagents", 0))
    every, Ks = int(getattr(w, "subagent_every", 1)), int(getattr(w, "subagent_turns", 1))
    rows = []  # n, isl, reuse, d_runs, obj, obj_next_runs, last, fork
    ctx = 0.0
    for k in range(K):
        new = a if k == 0 else b
        spawn = subs > 0 and (k + 1) % every == 0 and k + 1 < K
        after_prev_spawn = subs > 0 and k > 0 and k % every == 0
        obj = ctx + new + o
        rows.append((1.0, S + ctx + new, ctx, 1.0 if after_prev_spawn else 0.0, obj, 1.0 if spawn else 0.0,
                     k == K - 1, 0.0))
        if spawn:
            sctx = 0.0
            for j in range(Ks):
                sobj = sctx + b + o
                rows.append((float(subs), S + obj + sctx + b, obj + sctx, 0.0, sobj, 0.0, j == Ks - 1, obj))
                sctx = sobj
        ctx = obj
    r = np.array(rows, float)
    return TurnTypes(r[:, 0], r[:, 1], np.full(len(r), o), r[:, 2], r[:, 3], r[:, 4], r[:, 5], r[:, 6].astype(bool),
                     S, Ks, r[:, 7])


def held_s(T, d, theta):
    """E[min(d + Exp(θ), T)] (broadcasts); θ = 0: min(d, T)."""
    T, d, theta = np.asarray(T, float), np.asarray(d, float), np.asarray(theta, float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        tail = np.where(theta > 0, theta * -np.expm1(-np.maximum(T - d, 0.0) / np.where(theta > 0, theta, 1.0)), 0.0)
    return np.where(T <= d, T, d + tail)


def p_within(T, d, theta):
    """P(d + Exp(θ) < T) (broadcasts); θ = 0: 1 where d < T."""
    T, d, theta = np.asarray(T, float), np.asarray(d, float), np.asarray(theta, float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        p = np.where(theta > 0, -np.expm1(-np.maximum(T - d, 0.0) / np.where(theta > 0, theta, 1.0)), 1.0)
    return np.where(T > d, p, 0.0)


def occupancy(T, tt: TurnTypes, sessions_per_s, theta, sub_run_s):
    """Tokens an LRU holding everything for T after its last use keeps (module docstring), per point."""
    return occupancy_and_slope(T, tt, sessions_per_s, theta, sub_run_s)[0]


def occupancy_and_slope(T, tt: TurnTypes, sessions_per_s, theta, sub_run_s):
    """(occupancy(T), d occupancy / dT) per point. d held_i/dT = P(τ_i > T): 1 for T <= D_i, e^{−(T − D_i)/θ}
    past it (0 at θ = 0). The turn types whose next use is after Exp(θ) alone share one held time, so they are
    summed first (the sweep's cost then does not grow with the number of turns)."""
    T, lam, th, D = (np.asarray(x, float) for x in (T, sessions_per_s, theta, sub_run_s))
    return _Occupancy(tt, lam, th, D)(T)


class _Occupancy:
    """occupancy_and_slope at fixed (λ, θ, D) over points, for many T (Newton's steps): what does not depend on T
    is formed once."""

    def __init__(self, tt: TurnTypes, lam, th, D):
        nO = tt.n * tt.obj
        plain = ~tt.last & (tt.obj_next_runs == 0)
        self.A, self.B = float(np.sum(nO[plain])), float(np.sum(nO[tt.last]))
        self.lam, self.th, self.S = lam, th, tt.system_tokens
        self.pos = th > 0
        self.all_pos = bool(np.all(self.pos))  # the common case: every θ > 0 (no mask to apply)
        self.th_safe = th if self.all_pos else np.where(self.pos, th, 1.0)
        self.a_theta = self.A * np.where(self.pos, th, 0.0)
        self.forks = [(nO[k], tt.obj_next_runs[k] * D) for k in np.flatnonzero(~tt.last & (tt.obj_next_runs > 0))]

    def __call__(self, T):
        pos, th = self.pos, self.th
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            tail = np.exp(-T / self.th_safe)  # P(Exp(θ) > T)
        surv = tail if self.all_pos else np.where(pos, tail, 0.0)
        total = self.a_theta * (1.0 - surv) + self.B * T
        slope = self.A * surv + self.B
        for nO_k, d in self.forks:
            total = total + nO_k * held_s(T, d, th)
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                past = np.where(pos, np.exp(-np.maximum(T - d, 0.0) / self.th_safe), 0.0)
            slope = slope + nO_k * np.where(T <= d, 1.0, past)
        return self.lam * total + self.S, self.lam * slope

    def take(self, keep) -> "_Occupancy":
        """The points where ``keep`` holds."""
        out = object.__new__(_Occupancy)
        out.A, out.B, out.S = self.A, self.B, self.S
        out.lam, out.th, out.pos, out.all_pos = self.lam[keep], self.th[keep], self.pos[keep], self.all_pos
        out.th_safe, out.a_theta = self.th_safe[keep], self.a_theta[keep]
        out.forks = [(nO_k, np.broadcast_to(d, keep.shape)[keep]) for nO_k, d in self.forks]
        return out


def characteristic_time(capacity_tokens, tt: TurnTypes, sessions_per_s, theta, sub_run_s, guess=None):
    """T with occupancy(T) = capacity, vectorised; 0 where the capacity holds nothing. Newton's method from an
    upper bound: occupancy is increasing and concave in T (its slope, a sum of survival probabilities, falls), so
    the tangent at a point above the root lands at or below it, and from below Newton's steps rise monotonically
    to it (quadratically near it). Start: ``guess`` (a T near the answer) where under T_hi, else
    T_hi = (Cap − S)/(λ·B), the root of the lower bound S + λ·B·T (the last turns' objects, held T); steps stop at
    |occupancy − Cap| <= T_RTOL·Cap or NEWTON_STEPS. A step up from below settles its point without another
    evaluation where the residual it leaves is provably within that: occupancy's curvature is at most its slope
    over θ (each survival term e^{−(T − d)/θ} has slope −1/θ of itself), so after a step δ from T the residual is
    at most f'(T)·δ²/(2θ) (_settled). A point that stopped keeps its T (the others are evaluated beside it until
    fewer than half still move, then alone)."""
    cap, lam, th, D = (np.asarray(v, float) for v in (capacity_tokens, sessions_per_s, theta, sub_run_s))
    shape = np.broadcast_shapes(cap.shape, lam.shape, th.shape, D.shape)
    cap, lam, th, D = (np.broadcast_to(v, shape).ravel() for v in (cap, lam, th, D))
    c = cap - tt.system_tokens
    B = float(np.sum((tt.n * tt.obj)[tt.last]))
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(c > 0, c / np.maximum(lam * B, 1e-300), 0.0)
    x = np.minimum(np.where(np.isnan(x), 0.0, x), T_MAX)  # NaN: 0; inf: T_MAX
    if guess is not None:  # any start converges (concave: from above the first step lands below the root)
        g = np.broadcast_to(np.asarray(guess, float), shape).ravel()
        x = np.where((g > 0) & (g < x), g, x)
    live = np.flatnonzero(c > 0)  # the points still moving
    occ, xl, tol = _Occupancy(tt, lam[live], th[live], D[live]), x[live], T_RTOL * cap[live]
    capl, settle = cap[live], SETTLE * 2.0 * tol * th[live]
    open_ = np.ones(live.size, bool)
    df_pos = B > 0 and bool(np.all(lam[live] > 0))  # the slope is at least λ·B: no zero to guard
    for _ in range(NEWTON_STEPS):
        if live.size == 0:
            break
        f, df = occ(xl)
        r = f - capl
        moving = open_ & (np.abs(r) > tol)
        if not np.any(moving):
            break
        with np.errstate(divide="ignore", invalid="ignore"):
            step = r / df if df_pos else np.where(df > 0, r / np.where(df > 0, df, 1.0), 0.0)
        xl = np.where(moving, np.maximum(xl - step, 0.0), xl)
        open_ = moving & ~((r < 0) & (df * step * step <= settle))  # _settled: within tolerance without a look
        n_open = int(np.count_nonzero(open_))
        if n_open == 0:
            break
        if 2 * n_open < live.size:  # the slowest do not hold the rest: the stopped points leave
            x[live] = xl
            live, xl, capl, tol, settle, occ = (live[open_], xl[open_], capl[open_], tol[open_], settle[open_],
                                                occ.take(open_))
            open_ = np.ones(live.size, bool)
    x[live] = xl
    return np.where(c > 0, x, 0.0).reshape(shape)


@dataclass(frozen=True)
class CheHits:
    """Arrays over points: token hit rate in all and per tier, T per tier. The per-tier fields are tuples of arrays
    over the points, one per tier (``*_by``); the properties stack them with the tier on the last axis."""

    hit_rate: np.ndarray
    by: tuple  # per tier: share of input tokens served from it
    t_char: tuple  # per tier: T
    read_tokens_by: tuple  # per tier: mean tokens a request reads from it
    reads_by: tuple  # per tier: share of requests reading from it
    read_sq_by: tuple  # per tier: E[tokens read^2] over the requests reading (the M/G/1 queue's)

    by_tier = property(lambda self: np.stack(self.by, -1))  # [..., tier]
    t_char_s = property(lambda self: np.stack(self.t_char, -1))
    read_tokens = property(lambda self: np.stack(self.read_tokens_by, -1))
    reads = property(lambda self: np.stack(self.reads_by, -1))
    read_sq_tokens = property(lambda self: np.stack(self.read_sq_by, -1))


def che_hits(tt: TurnTypes, stack, capacities, sessions_per_s, theta, sub_run_s, guess=None) -> CheHits:
    """Token hit rates per tier (module docstring). ``capacities``: tokens per replica, [..., tier] or a sequence of
    arrays over the points, one per tier; ``stack``: the TierStack (store policy, the rule's read and prefill
    seconds per token); ``guess``: T near the answer (characteristic_time), one array per tier (a sequence or the
    first axis)."""
    if isinstance(capacities, (list, tuple)):
        caps = [np.asarray(c, float) for c in capacities]
    else:
        c = np.asarray(capacities, float)
        caps = [c[..., j] for j in range(c.shape[-1])]
    if stack.store == "on-evict":
        caps = list(np.cumsum(caps, axis=0))
    J = len(caps)
    # per tier, arrays over the points (an axis of a few tiers last would make numpy loop per point)
    T = []
    for j in range(J):
        t = characteristic_time(caps[j], tt, sessions_per_s, theta, sub_run_s, None if guess is None else guess[j])
        T.append(t if j == 0 else np.maximum(T[-1], t))  # a copy further down is found when an upper tier lost it
    th, D = np.asarray(theta, float), np.asarray(sub_run_s, float)
    # P(found in tiers <= j): one for every turn after a plain Exp(θ) gap, one per parent turn after a spawn (its
    # object had to survive the sub-agents' first turns' Exp(θ) gap too, then their run D)
    plain_within = [p_within(t, 0.0, th) for t in T]
    worth = np.stack([_worth(stack, j, tt.reuse) for j in range(J)], -1)  # [type, tier]
    n, u = tt.n[:, None] * worth, tt.reuse[:, None]
    groups = [(tt.d_runs == 0, plain_within)] + [
        (np.arange(len(tt.n)) == k, [p_within(t, tt.d_runs[k] * D, th) * pw for t, pw in zip(T, plain_within)])
        for k in np.flatnonzero(tt.d_runs > 0)]
    n_req = float(np.sum(tt.n))
    reads, read_tok, sq = ([0.0] * J for _ in range(3))
    for mask, within in groups:
        n_m, nu_m, nu2_m = np.sum(n[mask], axis=0), np.sum((n * u)[mask], axis=0), np.sum((n * u ** 2)[mask], axis=0)
        for j in range(J):
            p_tier = within[j] - (within[j - 1] if j else 0.0)  # served from tier j
            reads[j] = reads[j] + p_tier * n_m[j]
            read_tok[j] = read_tok[j] + p_tier * nu_m[j]
            sq[j] = sq[j] + p_tier * nu2_m[j]
    shape = np.shape(T[0])
    reads, read_tok, sq = ([np.broadcast_to(x, shape) for x in v] for v in (reads, read_tok, sq))
    isl_tokens = float(np.sum(tt.n * tt.isl))
    by = [(read_tok[0] + np.where(T[0] > 0, tt.system_tokens, 0.0) * n_req) / isl_tokens]  # HBM: every request
    by += [read_tok[j] / isl_tokens for j in range(1, J)]  # uses the system prompt
    hit = by[0]
    for b in by[1:]:
        hit = hit + b
    with np.errstate(invalid="ignore", divide="ignore"):
        sq = [q / np.where(r > 0, r, 1.0) for q, r in zip(sq, reads)]
    return CheHits(hit, tuple(by), tuple(T), tuple(r / n_req for r in read_tok), tuple(r / n_req for r in reads),
                   tuple(sq))


def _worth(stack, j: int, tokens) -> np.ndarray:
    lv = stack.levels[j]
    if j == 0:
        return np.ones_like(tokens, float)
    return (lv.latency_s + tokens * lv.read_s_per_token < tokens * stack.prefill_s_per_token).astype(float)
