"""Hit rates of session traffic in LRU KV tiers, analytically: the characteristic-time (Che) approximation.

Che et al. (IEEE JSAC 2002; Fricker, Robert & Roberts, ITC 2012 for renewal requests): an LRU cache of capacity Cap
keeps an object for a characteristic time T after its last use, T the root of
    sum over objects of  size · (time-average share of time it is held) = Cap,
and a request finds its object when the time since the object's last use is under T. Session traffic
(serving/sessions.py) reuses an agent's own context at its next turn after the think time τ ~ Exp(θ), so per turn
type i (n_i a session, object O_i after it):
    held_i(T)   = E[min(τ + W, T)] = min(W, T) + θ·(1 − e^{−(T − W)⁺/θ})
                                                                    (the last turn of an agent: T, never reused)
    P(hit)_i    = P(τ + W < T) = 1 − e^{−(T − W)⁺/θ}
W the turn's wait from its arrival to its admission (the tokenizer, the tiers' reads, the admission queue): vLLM looks
a waiting request's prefix up when it schedules it (vllm/v1/core/sched/scheduler.py, Scheduler.schedule: its pass over the
waiting queue calls kv_cache_manager.get_computed_blocks, then the connector's get_num_new_matched_tokens; read at
commit 00024d31), and nothing touches the object before, so its reuse distance
is the think gap plus the whole wait, queue included (W taken at its mean). Looked up on arrival instead (the form
before, (θ + min(W, T))·(1 − e^{−T/θ}) and P(τ < T)), 4,096 DeepSeek-V3 sessions on a GB200 NVL72 past saturation,
HBM only, hit 0.95 while a 157 s queue aged every context out of a T = 19 s cache; the simulator, looking up again
at admission (serving/sim_session_run.admit_blocks), 0.46.
Sibling sub-agents share the fork: when the tiers lost it, the first admitted recomputes it and the others find it
(``_siblings_share``; past saturation, where their turns queue in step, the simulator's sub-agents hit 0.52 where a
fork lost to each would give 0.30).
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
Newton's method (occupancy is increasing and concave in T for every W), vectorised over workload points (capacities, loads, think times as arrays).
Checked against the simulator (serving/sim_sessions.py) in tests/serving/test_session_agreement.py over the grid stated there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.serving.kv_che_occupancy import Occupancy
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
    """(occupancy(T), d occupancy / dT) per point (module docstring). d held_i/dT = P(τ + W > T): 1 below W,
    e^{−(T−W)/θ} above it (0 at θ = 0), 1 for a last turn's object; a fork's adds
    t_run·q·(s/θ')·e^{−sT/θ'}. The turn types share these held
    times, so their objects are summed first (the sweep's cost then does not grow with the number of turns)."""
    arrays = np.broadcast_arrays(*(np.asarray(x, float) for x in (T, sessions_per_s, theta, sub_run_s, queue_s)))
    T, lam, th, t_run, W = (a.ravel() for a in arrays)  # flat arrays of one shape (Occupancy works in place)
    f, df = Occupancy(tt, lam, th, t_run, W)(T)
    return f.reshape(arrays[0].shape), df.reshape(arrays[0].shape)


def characteristic_time(capacity_tokens, tt: TurnTypes, sessions_per_s, theta, sub_run_s, guess=None, queue_s=0.0):
    """T with occupancy(T) = capacity, vectorised; 0 where the capacity holds nothing (under the occupancy at T = 0:
    the system prompt, the forks while their sub-agents run). Newton's method from ``guess`` (a T near the answer)
    where under T_hi = (Cap − f(0))/(λ·O_last) (the root of the lower bound f(0) + λ·O_last·T), else from T_hi:
    occupancy is increasing and concave for every W (a reused object's held time min(W, T) + θ·(1 − e^{−(T−W)⁺/θ})
    has slope 1 below W and e^{−(T−W)/θ} above it, never rising), so from above a step lands at or below the root
    and from below the steps rise to it (quadratically near it). Stops at |occupancy − Cap| <= T_RTOL·Cap or NEWTON_STEPS,
    every point still in the arrays taking each round's step (one within tolerance only comes nearer), the stopped
    ones leaving once fewer than half still move. A step settles its point unlooked where the residual it leaves
    is provably within tolerance: the curvature |f''| is a sum of decaying exponentials of rates <= s/θ
    (e^{−(T−W)⁺/θ}, a fork's e^{−sT/θ'}; s >= 1; below W the reused objects' term is taken at its value at W, which
    bounds it on both sides of W), so over a step δ it stays under |f''(T)|·e^{s|δ|/θ} and the residual
    under ½|f''(T)|·δ²·e^{s|δ|/θ} <= |f''(T)|·δ² for s|δ| <= θ/2, either direction (the slope times s/θ bounded
    it before, far above it where the last turns' linear term dominates the slope: 84 evaluations a point over
    benchmarks/sessions.py's solve, 101 before)."""
    cap, lam, th, t_run, W = (np.asarray(v, float)
                              for v in (capacity_tokens, sessions_per_s, theta, sub_run_s, queue_s))
    shape = np.broadcast_shapes(cap.shape, lam.shape, th.shape, t_run.shape, W.shape)
    cap, lam, th, t_run, W = (np.broadcast_to(v, shape).ravel() for v in (cap, lam, th, t_run, W))
    occ = Occupancy(tt, lam, th, t_run, W)
    return _solve_t(cap, occ, occ.at_zero(), tt, guess).reshape(shape)


def _solve_t(cap, occ: "Occupancy", f0, tt: TurnTypes, guess=None):
    """characteristic_time's Newton steps on flat points: ``occ`` the occupancy at those points, ``f0`` its value at
    T = 0 (both shared by the tiers of one state: che_hits forms them once)."""
    c = cap - f0
    with np.errstate(over="ignore", invalid="ignore"):
        x = np.minimum(c * occ.inv_l_last, T_MAX)  # inf: T_MAX
    if guess is not None:  # any start converges (concave: from above the first step lands below the root)
        g = np.broadcast_to(np.asarray(guess, float), cap.shape).ravel()
        x = np.where((g > 0) & (g < x), g, x)
    df_pos = occ.O_last > 0 and bool(np.all(occ.lam > 0))  # the slope is at least λ·O_last: no zero to guard
    live = np.flatnonzero(c > 0)  # the points still moving (T = 0 at the others)
    if live.size < c.size:  # else every point moves: no copies
        x[~(c > 0)] = 0.0
        occ, xl, capl = occ.take(live), x[live], cap[live]
    else:
        xl, capl = x, cap
    tol, settle, reach2 = T_RTOL * capl, (SETTLE * T_RTOL) * capl, occ.reach2
    for _ in range(NEWTON_STEPS):
        if live.size == 0:
            break
        f, df, d2f = occ(xl, curvature=True)
        r = np.subtract(f, capl, out=f)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = r / df if df_pos else np.where(df > 0, r / np.where(df > 0, df, 1.0), 0.0)
        done = np.abs(r) <= tol  # (its step, within tolerance too, only brings it nearer)
        x_new = np.subtract(xl, step, out=r)
        np.maximum(x_new, 0.0, out=x_new)
        # settled: the residual the step leaves is within tolerance without a look (docstring)
        np.square(step, out=step)
        settled = step <= reach2
        settled &= x_new > 0
        step *= d2f
        settled &= step <= settle
        if not df_pos:  # (no slope: no step)
            settled &= df > 0
        done |= settled
        xl = x_new
        n_open = live.size - int(np.count_nonzero(done))
        if n_open == 0:
            break
        if 2 * n_open < live.size:  # the slowest do not hold the rest: the stopped points leave
            x[live] = xl
            keep = np.flatnonzero(~done)
            live, xl, capl, tol, settle = (v[keep] for v in (live, xl, capl, tol, settle))
            occ = occ.take(keep)
            reach2 = occ.reach2
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
    occ = Occupancy(tt, *(np.broadcast_to(v, shape).ravel() for v in (lam, th, t_run, W)))
    f0 = occ.at_zero()
    T = []
    for j in range(J):
        cap = np.broadcast_to(caps[j], shape).ravel()
        g = None if guess is None else np.broadcast_to(np.asarray(guess[j], float), shape).ravel()
        t = _solve_t(cap, occ, f0, tt, g).reshape(shape)
        T.append(t if j == 0 else np.maximum(T[-1], t))  # a copy further down is found when an upper tier lost it
    # P(found in tiers <= j): every reuse follows an Exp(θ) gap after its object's last use (module docstring: a
    # parent's turn after a spawn, after its last sub-agent's turn)
    # looked up when admitted: the gap is τ + W, found while τ < T − W (P = 1 − e^{−(T − W)⁺/θ}; 0 where T <= W)
    within = [p_within(t - W, theta) for t in T]
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
    read_tok[0] = read_tok[0] + _siblings_share(tt, T[0], W, th, t_run, worth, within)
    reads, read_tok, sq = ([np.broadcast_to(x, shape) for x in v] for v in (reads, read_tok, sq))
    isl_tokens = float(np.sum(tt.n * tt.isl))
    by = [(read_tok[0] + np.where(T[0] > 0, tt.system_tokens, 0.0) * n_req) / isl_tokens]  # HBM: every request
    by += [read_tok[j] / isl_tokens for j in range(1, J)]  # uses the system prompt
    hit = sum(by[1:], by[0])  # the tiers in order
    with np.errstate(invalid="ignore", divide="ignore"):
        sq = [q / np.where(r > 0, r, 1.0) for q, r in zip(sq, reads)]
    return CheHits(hit, tuple(by), tuple(T), tuple(r / n_req for r in read_tok), tuple(r / n_req for r in reads),
                   tuple(sq))


def _siblings_share(tt: TurnTypes, T0, W, theta, t_run, worth, within):
    """Fork tokens per session a sub-agent finds in HBM because a sibling recomputed it: the s sub-agents of a
    spawn share their parent's fork (vLLM's prefix cache keys blocks by their tokens), so when the tiers lost it
    the first one admitted recomputes it and each of the other s − 1 finds it, pinned through that turn's run
    (e2e − W) and held T_HBM after it, when admitted within that of it: their think gaps apart, P(Exp(θ) < e2e −
    W + T_HBM). Per sub-agent turn i: fork_i·P(lost)·(s − 1)/s·that, P(lost) = 1 − Σ_j P(served from tier j)."""
    s = int(tt.subagents)
    if s < 2 or tt.fork is None:
        return 0.0
    nf = tt.n * tt.fork
    lost = float(np.sum(nf)) - sum((within[j] - (within[j - 1] if j else 0.0)) * float(np.sum(nf * worth[:, j]))
                                   for j in range(len(within)))
    e2e = tt.sub_e2e_s(t_run, theta)
    return lost * (s - 1) / s * p_within(np.maximum(e2e - W, 0.0) + T0, theta)


def _worth(stack, j: int, tokens) -> np.ndarray:
    lv = stack.levels[j]
    if j == 0:
        return np.ones_like(tokens, float)
    return (lv.latency_s + tokens * lv.read_s_per_token < tokens * stack.prefill_s_per_token).astype(float)
