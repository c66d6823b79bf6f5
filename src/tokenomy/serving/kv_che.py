"""Hit rates of session traffic in LRU KV tiers, analytically: the characteristic-time (Che) approximation.

Che et al. (IEEE JSAC 2002; Fricker, Robert & Roberts, ITC 2012 for renewal requests): an LRU cache of capacity Cap
keeps an object for a characteristic time T after its last use, T the root of
    sum over objects of  size · (time-average share of time it is held) = Cap,
and a request finds its object when the time since the object's last use is under T. Session traffic
(serving/sessions.py) reuses an agent's own context at its next turn after the think time τ ~ Exp(θ), so per turn
type i (n_i a session, object O_i after it):
    held_i(T)   = E[min(τ, T)] + P(τ < T)·min(W, T) = (θ + min(W, T))·(1 − e^{−T/θ})
                                                                    (the last turn of an agent: T, never reused)
    P(hit)_i    = P(τ < T) = 1 − e^{−T/θ}
W the turn's wait from its lookup (on arrival) to its admission, when its blocks are pinned (the tiers' reads, the
admission queue: serving/sim_session_run.py looks up on arrival and pins on admission); an object found is held
unreferenced through it (for W = 0, the form before).
A parent's turn that spawns s sub-agents leaves the object they fork from; each sub-agent turn reads that fork (its
lookup touches it, the running turn references it, a turn that missed it recomputes and caches it again), so the
object is busy through the sub-agents' run t_run and the parent's next turn finds it when the gap after the LAST
sub-agent's turn, Exp(θ), is under T — the P(hit) above. Through the run it is held while a sub-agent runs and, in
the windows when no sub-agent references it, for at most T. A sub-agent leaves it unreferenced for its think gap
and its next turn's wait W for admission (the lookup touched it, it is pinned when admitted), θ' = θ + W on
average, and references it for the rest of its turn, e2e − W; taking the unreferenced stretches as Exp(θ'), all s
are out a share q = (θ'/(θ' + e2e − W))^s of the run, in windows Exp(θ'/s) long:
    held_fork(T) = t_run·(1 − q·e^{−sT/θ'}) + θ·(1 − e^{−T/θ}),   q = (θ'/(θ' + e2e − W))^s
with t_run the run until the slowest sub-agent's last turn ends, K_sub·e2e + θ·E[max of s Erlang(K_sub)]
(turn_types.TurnTypes.sub_run_s; a Monte Carlo of the sub-agents' busy and idle windows agrees within 2% at T >= 2θ, tests/serving/test_kv_che.py;
at T < θ, where a turn hits less than 63% of the time, the idle windows are not independent and it overstates)
(treating the parent's object as idle through t_run, as before, held it min(t_run + τ, T) and let the parent's turn hit
only when t_run + τ < T: under HBM pressure, T near t_run, the analytic hit rate fell 0.012 under the simulator's).
    occupancy   = λ_s · Σ_i n_i · O_i · held_i(T) + I_sys                                      (I_sys the system prompt)
with λ_s sessions per second per replica (closed loop: U sessions over a session's duration; open: the rate). Per
tier: write-through keeps an LRU copy in every tier, each with its own T_j (from its own capacity); on-evict moves
what HBM evicts down, so tiers 0..j behave as one LRU of their summed capacity (T_{<=j}). A turn's reuse is served
by the fastest tier whose T exceeds its gap, when the lecture's rule says reading beats recomputing. T is solved by
Newton's method (occupancy is concave in T where W = 0; convex below W otherwise), vectorised over workload points (capacities, loads, think times as arrays).
Checked against the simulator (serving/sim_sessions.py) in tests/serving/test_session_agreement.py over the grid stated there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.serving.turn_types import TurnTypes

NEWTON_STEPS = 60  # at most (from the upper bound a few suffice: tests/serving/test_kv_che.py)
T_RTOL = 1e-10  # |occupancy(T) − Cap| / Cap at the answer
T_MAX = 1e12  # s: T where λ·O_last vanishes (no session ever stops: everything held)
SETTLE = 0.1  # a step settles its point where the bound on the residual it leaves is under this share of T_RTOL


def p_within(T, theta):
    """P(Exp(θ) < T) (broadcasts); θ = 0: 1 where T > 0."""
    T, theta = np.asarray(T, float), np.asarray(theta, float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        p = np.where(theta > 0, -np.expm1(-np.maximum(T, 0.0) / np.where(theta > 0, theta, 1.0)), 1.0)
    return np.where(T > 0, p, 0.0)


def occupancy(T, tt: TurnTypes, sessions_per_s, theta, sub_run_s, queue_s=0.0):
    """Tokens an LRU holding everything for T after its last use keeps (module docstring), per point."""
    return occupancy_and_slope(T, tt, sessions_per_s, theta, sub_run_s, queue_s)[0]


def occupancy_and_slope(T, tt: TurnTypes, sessions_per_s, theta, sub_run_s, queue_s=0.0):
    """(occupancy(T), d occupancy / dT) per point (module docstring). d held_i/dT = P(τ > T) = e^{−T/θ} (0 at
    θ = 0) + min(W, T)·e^{−T/θ}/θ + (1 − e^{−T/θ})·[T < W], 1 for a last turn's object; a fork's adds
    t_run·q·(s/θ')·e^{−sT/θ'}. The turn types share these held
    times, so their objects are summed first (the sweep's cost then does not grow with the number of turns)."""
    arrays = np.broadcast_arrays(*(np.asarray(x, float) for x in (T, sessions_per_s, theta, sub_run_s, queue_s)))
    T, lam, th, t_run, W = (a.ravel() for a in arrays)  # flat arrays of one shape (_Occupancy works in place)
    f, df = _Occupancy(tt, lam, th, t_run, W)(T)
    return f.reshape(arrays[0].shape), df.reshape(arrays[0].shape)


class _Occupancy:
    """occupancy_and_slope at fixed (λ, θ, t_run) over points, for many T (Newton's steps): what does not depend on T
    is formed once. O_reuse: the objects reused after Exp(θ) (forks included), O_last: the last turns', O_fork: the
    forks'."""

    def __init__(self, tt: TurnTypes, lam, th, t_run, W=0.0):
        nO = tt.n * tt.obj
        self.O_reuse, self.O_last = float(np.sum(nO[~tt.last])), float(np.sum(nO[tt.last]))
        O_fork, s = float(np.sum(nO[tt.spawn & ~tt.last])), max(int(tt.subagents), 1)
        self.lam, self.th, self.I_sys = lam, th, tt.system_tokens
        self.W = np.broadcast_to(np.asarray(W, float), np.shape(lam))
        self.waits = bool(np.any(self.W > 0))  # reused objects held unreferenced from their lookup to admission
        self.pos = th > 0
        self.all_pos = bool(np.all(self.pos))  # the common case: every θ > 0 (no mask to apply)
        self.th_safe = th if self.all_pos else np.where(self.pos, th, 1.0)
        self.a_theta = self.O_reuse * np.where(self.pos, th, 0.0)
        self.forks = O_fork > 0
        if self.forks:  # held_fork = t_run·(1 − q·e^{−sT/θ'}): O_fork·t_run, O_fork·t_run·q and the rate s/θ' per point
            with np.errstate(divide="ignore", invalid="ignore"):
                e2e = np.maximum(t_run - tt.sub_thinks * th, 0.0) / max(tt.sub_turns, 1)  # t_run = K_sub·e2e + m·θ
                idle = th + W  # a sub-agent's fork unreferenced: its think gap and its turn's wait for admission
                pinned = np.maximum(e2e - W, 0.0)
                q = np.where((idle > 0) & (t_run > 0), idle / np.where(idle > 0, idle + pinned, 1.0), 0.0)
                # t_run = inf: no root
                self.fd, self.fq, self.k = O_fork * t_run, O_fork * t_run * q ** s, s / np.where(idle > 0, idle, 1.0)

    def at_zero(self):
        """occupancy(0) per point without an exp pass: λ·(O_fork·t_run − O_fork·t_run·q) + I_sys (the forks held
        while their sub-agents run; e^0 = 1, so the same floats as ``self(0)[0]``)."""
        total = 0.0 + self.fd - self.fq if self.forks else 0.0
        return self.lam * total + self.I_sys

    def __call__(self, T):
        """(occupancy, slope) at T, an array of the points' shape. In place on fresh arrays (each 100k-point
        temporary costs as much as the arithmetic), in the order of the formulas: the same floats."""
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            surv = np.divide(T, self.th_safe)
            np.negative(surv, out=surv)
            np.exp(surv, out=surv)  # P(Exp(θ) > T)
        if not self.all_pos:
            surv = np.where(self.pos, surv, 0.0)
        total = np.subtract(1.0, surv)
        if self.waits:  # after the lookup that found it, min(W, T) more until its turn is admitted and pins it
            held_w = np.minimum(self.W, T)
            wait_total = self.O_reuse * total * held_w
            wait_slope = self.O_reuse * (surv * held_w / self.th_safe + total * (T < self.W))
        total *= self.a_theta
        total += self.O_last * T
        slope = self.O_reuse * surv
        slope += self.O_last
        if self.waits:
            total += wait_total
            slope += wait_slope
        if self.forks:
            with np.errstate(over="ignore", invalid="ignore"):
                e = np.multiply(self.k, T)
                np.negative(e, out=e)
                np.exp(e, out=e)
                e *= self.fq  # O_fork·t_run·q·e^{−sT/θ'} (0 where θ = 0: q = 0)
                total += self.fd
                total -= e
                e *= self.k
                slope += e
        total *= self.lam
        total += self.I_sys
        slope *= self.lam
        return total, slope

    def take(self, keep) -> "_Occupancy":
        """The points ``keep`` (a mask or indices over the points)."""
        out = object.__new__(_Occupancy)
        out.O_reuse, out.O_last, out.I_sys, out.forks = self.O_reuse, self.O_last, self.I_sys, self.forks
        out.lam, out.th, out.all_pos = self.lam[keep], self.th[keep], self.all_pos
        out.W, out.waits = self.W[keep], self.waits
        out.pos = None if self.all_pos else self.pos[keep]  # read only where some θ = 0
        out.th_safe = out.th if self.all_pos else self.th_safe[keep]
        out.a_theta = self.a_theta[keep]
        if self.forks:
            out.fd, out.fq, out.k = (np.broadcast_to(v, self.lam.shape)[keep] for v in (self.fd, self.fq, self.k))
        return out


def characteristic_time(capacity_tokens, tt: TurnTypes, sessions_per_s, theta, sub_run_s, guess=None, queue_s=0.0):
    """T with occupancy(T) = capacity, vectorised; 0 where the capacity holds nothing. Newton's method from an
    upper bound: occupancy is increasing and concave in T (its slope, a sum of survival probabilities, falls), so
    the tangent at a point above the root lands at or below it, and from below Newton's steps rise monotonically
    to it (quadratically near it). Start: ``guess`` (a T near the answer) where under T_hi, else
    T_hi = (Cap − f(0))/(λ·O_last), the root of the lower bound f(0) + λ·O_last·T (the last turns' objects, held
    T); stops at |occupancy − Cap| <= T_RTOL·Cap or NEWTON_STEPS. A step up from below settles its point without another
    evaluation where the residual it leaves is provably within that: occupancy's curvature is at most its slope
    times s/θ (each survival term e^{−T/θ} has slope −1/θ of itself, a fork's e^{−sT/θ} −s/θ; s >= 1), so after a
    step δ from T the residual is at most f'(T)·δ²·s/(2θ) (_settled). A point that stopped keeps its T (the others
    are evaluated beside it until fewer than half still move, then alone). T = 0 where the capacity is under the
    occupancy at T = 0 (the system prompt, and the forks while their sub-agents run). A reused object held
    through its turn's wait W adds (1 − e^{−T/θ})·min(W, T), convex below W: there no step settles unlooked, and
    from above a step may land above the root (still above it, Newton descends to it)."""
    cap, lam, th, t_run, W = (np.asarray(v, float)
                              for v in (capacity_tokens, sessions_per_s, theta, sub_run_s, queue_s))
    shape = np.broadcast_shapes(cap.shape, lam.shape, th.shape, t_run.shape, W.shape)
    cap, lam, th, t_run, W = (np.broadcast_to(v, shape).ravel() for v in (cap, lam, th, t_run, W))
    occ = _Occupancy(tt, lam, th, t_run, W)
    return _solve_t(cap, occ, occ.at_zero(), tt, guess).reshape(shape)


def _solve_t(cap, occ: "_Occupancy", f0, tt: TurnTypes, guess=None):
    """characteristic_time's Newton steps on flat points: ``occ`` the occupancy at those points, ``f0`` its value at
    T = 0 (both shared by the tiers of one state: che_hits forms them once)."""
    lam, th = occ.lam, occ.th
    c = cap - f0
    O_last = occ.O_last
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(c > 0, c / np.maximum(lam * O_last, 1e-300), 0.0)
    x = np.minimum(np.where(np.isnan(x), 0.0, x), T_MAX)  # NaN: 0; inf: T_MAX
    if guess is not None:  # any start converges (concave: from above the first step lands below the root)
        g = np.broadcast_to(np.asarray(guess, float), cap.shape).ravel()
        x = np.where((g > 0) & (g < x), g, x)
    live = np.flatnonzero(c > 0)  # the points still moving
    if live.size < c.size:  # else every point moves: no copies
        occ, xl, capl, th = occ.take(live), x[live], cap[live], th[live]
    else:
        xl, capl = x, cap
    tol = T_RTOL * capl
    settle = SETTLE * 2.0 * tol * th / max(int(tt.subagents), 1)
    if occ.waits:  # held through a wait W, occupancy is convex below W: no curvature bound, every step is looked at
        settle = np.where(occ.W > 0, 0.0, settle)
    open_ = np.ones(live.size, bool)
    df_pos = O_last > 0 and bool(np.all(occ.lam > 0))  # the slope is at least λ·O_last: no zero to guard
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
    return x


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


def che_hits(tt: TurnTypes, stack, capacities, sessions_per_s, theta, sub_run_s, guess=None, queue_s=0.0) -> CheHits:
    """Token hit rates per tier (module docstring). ``capacities``: tokens per replica, [..., tier] or a sequence of
    arrays over the points, one per tier; ``stack``: the TierStack (store policy, the rule's read and prefill
    seconds per token); ``guess``: T near the answer (characteristic_time), one array per tier (a sequence or the
    first axis); ``queue_s``: a turn's wait for admission, W (the forks' hold)."""
    if isinstance(capacities, (list, tuple)):
        caps = [np.asarray(c, float) for c in capacities]
    else:
        c = np.asarray(capacities, float)
        caps = [c[..., j] for j in range(c.shape[-1])]
    if stack.store == "on-evict":
        caps = list(np.cumsum(caps, axis=0))
    J = len(caps)
    # per tier, arrays over the points (an axis of a few tiers last would make numpy loop per point)
    # the occupancy's per-point terms and its value at T = 0 depend on the load, not on the tier: formed once
    lam, th, t_run, W = (np.asarray(v, float) for v in (sessions_per_s, theta, sub_run_s, queue_s))
    shape = np.broadcast_shapes(lam.shape, th.shape, t_run.shape, W.shape, *(c.shape for c in caps))
    occ = _Occupancy(tt, *(np.broadcast_to(v, shape).ravel() for v in (lam, th, t_run, W)))
    f0 = occ.at_zero()
    T = []
    for j in range(J):
        cap = np.broadcast_to(caps[j], shape).ravel()
        g = None if guess is None else np.broadcast_to(np.asarray(guess[j], float), shape).ravel()
        t = _solve_t(cap, occ, f0, tt, g).reshape(shape)
        T.append(t if j == 0 else np.maximum(T[-1], t))  # a copy further down is found when an upper tier lost it
    # P(found in tiers <= j): every reuse follows an Exp(θ) gap after its object's last use (module docstring: a
    # parent's turn after a spawn, after its last sub-agent's turn)
    within = [p_within(t, theta) for t in T]
    worth = np.stack([_worth(stack, j, tt.reuse) for j in range(J)], -1)  # [type, tier]
    n, u = tt.n[:, None] * worth, tt.reuse[:, None]
    n_m, nu_m, nu2_m = np.sum(n, axis=0), np.sum(n * u, axis=0), np.sum(n * u ** 2, axis=0)
    n_req = float(np.sum(tt.n))
    reads, read_tok, sq = [], [], []
    for j in range(J):
        p_tier = within[j] - (within[j - 1] if j else 0.0)  # served from tier j
        reads.append(p_tier * n_m[j])
        read_tok.append(p_tier * nu_m[j])
        sq.append(p_tier * nu2_m[j])
    shape = np.shape(T[0])
    reads, read_tok, sq = ([np.broadcast_to(x, shape) for x in v] for v in (reads, read_tok, sq))
    isl_tokens = float(np.sum(tt.n * tt.isl))
    by = [(read_tok[0] + np.where(T[0] > 0, tt.system_tokens, 0.0) * n_req) / isl_tokens]  # HBM: every request
    by += [read_tok[j] / isl_tokens for j in range(1, J)]  # uses the system prompt
    hit = sum(by[1:], by[0])  # the tiers in order
    with np.errstate(invalid="ignore", divide="ignore"):
        sq = [q / np.where(r > 0, r, 1.0) for q, r in zip(sq, reads)]
    return CheHits(hit, tuple(by), tuple(T), tuple(r / n_req for r in read_tok), tuple(r / n_req for r in reads),
                   tuple(sq))


def _worth(stack, j: int, tokens) -> np.ndarray:
    lv = stack.levels[j]
    if j == 0:
        return np.ones_like(tokens, float)
    return (lv.latency_s + tokens * lv.read_s_per_token < tokens * stack.prefill_s_per_token).astype(float)
