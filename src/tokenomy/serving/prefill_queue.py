"""Where a request's prompt lands among the others' under the scheduler's token budget: the steps from its
arrival to its first token, closed loop and open (Poisson) loop. Used by the analytic steady state (steady.py);
checked against the iteration-level simulator (tests/serving/test_serve_steady_and_sim.py,
test_open_loop_prefill.py).

Notation (arrays over workload points): I prefill tokens a prompt computes, room = N − n the budget the decodes
leave a step, c = ceil(I/room) its chunks, r = I − (c − 1)·room its last chunk.
"""

from __future__ import annotations

import math
import numpy as np

SPILL_SIGMAS = 8.0  # Poisson counts beyond mean + 8 sd (and 8) carry no probability worth a term
EXTRA_STEPS = 256  # a bound only: the sum stops at the first step whose tail is below NEGLIGIBLE everywhere (near
# the budget's capacity the backlog reaches sqrt((B - 1)/pi) prompts, ~9 at B = 248, and pushes a prompt ~5 steps)
NEGLIGIBLE = 1e-6  # a Poisson tail below this carries under 0.01 tokens of a 1000-token prompt: not formed
TABLE_CELLS = 1 << 21  # Poisson table cells formed at once (16 MiB of floats)


def _live(lam, k):
    """Where P(Pois(λ) >= k) may exceed NEGLIGIBLE, by the Chernoff bound P <= e^{−λ}·(eλ/k)^k (k > λ)."""
    lam, k = np.asarray(lam, float), np.asarray(k, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_bound = k * (1.0 + np.log(np.maximum(lam, 1e-300)) - np.log(np.maximum(k, 1e-300))) - lam
    return (k <= lam) | (log_bound > math.log(NEGLIGIBLE))


def _top(lam):
    """The largest Poisson count worth a term: mean + SPILL_SIGMAS sd + SPILL_SIGMAS."""
    return lam + SPILL_SIGMAS * np.sqrt(lam) + SPILL_SIGMAS


def _tail_table(lam: np.ndarray) -> np.ndarray:
    """U[k, i] = P(Pois(λ_i) >= k) for k = 0 .. K + 1, K the largest mean + SPILL_SIGMAS sd over the points: the
    pmf exp(k·log λ − λ − log k!) summed from the top down (a small tail without the cancellation of 1 − CDF),
    each point's terms past its own bound 0, so its tails are the same bits whatever points share the table (a
    sweep's pieces agree). A point that does not fit (λ NaN) has no terms."""
    top = _top(lam)
    k_max = int(np.max(np.where(np.isfinite(top), top, 0.0))) if lam.size else 0
    K = np.arange(k_max + 1.0)[:, None]
    log_fact = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1.0, k_max + 1.0)))))[:, None]
    with np.errstate(invalid="ignore", over="ignore"):
        pmf = np.where(lam > 0, np.exp(K * np.log(np.maximum(lam, 1e-300)) - lam - log_fact), K == 0)
    table = np.zeros((k_max + 2, lam.size))
    table[:-1] = np.cumsum(np.where(K <= top, pmf, 0.0)[::-1], axis=0)[::-1]
    return table


class _Tails:
    """P(Pois(λ) >= k) at any integer-valued k for fixed λ over points, from tables of at most TABLE_CELLS cells
    (the points in slices: a λ of thousands has thousands of terms)."""

    def __init__(self, lam):
        self.lam = np.ravel(np.asarray(lam, float))
        top = _top(self.lam)
        rows = int(np.max(np.where(np.isfinite(top), top, 0.0))) + 2 if self.lam.size else 2
        step = max(1, TABLE_CELLS // rows)
        self.parts = [(sl, _tail_table(self.lam[sl])) for sl in
                      (slice(a, a + step) for a in range(0, self.lam.size, step))]

    def _points(self, k) -> np.ndarray:
        """k broadcast over the points: a number or one per point (flat), or rows of one per point [row, point]."""
        k = np.asarray(k, float)
        return np.broadcast_to(k, k.shape[:-1] + self.lam.shape) if k.ndim > 1 else \
            np.broadcast_to(k.ravel(), self.lam.shape)

    def at(self, k) -> np.ndarray:
        """U[k] per point (k clipped to the table: 0 past every term), k broadcast over the points (``_points``)."""
        k = self._points(k)
        out = np.empty(k.shape)
        for sl, table in self.parts:
            idx = np.clip(k[..., sl], 0, table.shape[0] - 1).astype(np.intp)
            out[..., sl] = table[idx, np.arange(idx.shape[-1])]
        return out

    def tail(self, k) -> np.ndarray:
        """poisson_tail: 1 where k <= 0, 0 where the tail is below NEGLIGIBLE (``_live``), else U[k]."""
        k = self._points(k)
        return np.where(k <= 0, 1.0, np.where(_live(self.lam, k), np.clip(self.at(k), 0.0, 1.0), 0.0))



def poisson_tail(lam, k):
    """P(Pois(λ) >= k), elementwise (k integer-valued; 1 where k <= 0; 0 below NEGLIGIBLE: no table is formed
    for those points)."""
    lam, k = np.broadcast_arrays(np.asarray(lam, float), np.asarray(k, float))
    out = np.where(k <= 0, 1.0, 0.0)
    live = np.flatnonzero((k > 0) & _live(lam, k))
    if live.size:
        out.flat[live] = _Tails(lam.flat[live]).tail(k.flat[live])
    return out


def spill_share(others_per_step, prefill, last, room):
    """Open loop, P(spill): the chance that a request's last chunk does not finish in its step. The other prompts
    that land in the same step are Poisson with mean λ (the open loop's R·E[T²]/E[T], steady_steps.step_times) and the
    scheduler packs them FCFS, the request at a uniform place among them; each one ahead takes q = min(I, room) of
    the room, so the last r tokens spill into the next step when k* = floor((room − r)/q) + 1 or more are ahead:
    P = Σ_{K >= k*} Pois(K; λ)·(K + 1 − k*)/(K + 1) = P(K >= k*) − (k*/λ)·P(K >= k* + 1), since
    Pois(K; λ)/(K + 1) = Pois(K + 1; λ)/λ. (One prompt ahead of a 4096-token one under an 8192-token budget spills
    it: at λ = 0.5 about one time in five.)"""
    lam = np.asarray(others_per_step, float)
    q = np.maximum(np.minimum(prefill, room), 1.0)
    k_star = np.floor(np.maximum(room - last, 0.0) / q) + 1.0
    out = np.zeros(np.broadcast_shapes(lam.shape, np.shape(k_star)))
    lam, k_star = np.broadcast_to(lam, out.shape), np.broadcast_to(k_star, out.shape)
    live = np.flatnonzero((k_star <= _top(lam)) & (lam > 0))
    if not live.size:
        return out
    lam_l, k_l = lam.flat[live], k_star.flat[live]
    tails = _Tails(lam_l)
    out.flat[live] = np.maximum(tails.at(k_l) - k_l / lam_l * tails.at(k_l + 1.0), 0.0)
    return out


def gated_residual_s(plain_s, mean_s, prompt_s, rate):
    """Open loop, prompts of one chunk: the rest of the step a Poisson arrival lands in, E[T²]/(2·E[T]), with the
    steps' lengths as batch service makes them: a step carries the prompts that arrived during the step before
    (they wait for its end, then share one step: gated service), T' = t_0 + τ·N with N ~ Pois(R·T), t_0 the step
    without prefill and τ = ``prompt_s`` the seconds a prompt adds to its step. A long step gathers more prompts and
    makes the next one long too: with ρ = R·τ the share of time spent prefilling,
        E[T²] = t_0² + 2·t_0·ρ·E[T] + τ·ρ·E[T] + ρ²·E[T²]  =>  E[T²] = (t_0² + 2·t_0·ρ·E[T] + τ·ρ·E[T])/(1 − ρ²)
    (E[T] = t_0/(1 − ρ) where t is linear in the prompts; here the model's mean step ``mean_s``; the prompts' own
    length spread would add τ·ρ·E[T]·CV_I² to the numerator: steady has the mean prompt only). A two-point mix of
    plain steps and steps at the mean prefill load misses the correlation: DeepSeek-V3 agentic sessions on one
    GB200 NVL72 tp8 kv-batch replica (2.9 requests/s computing 2.5k tokens each at 62k context, ρ = 0.59) wait
    0.100 s by the mix, 0.15 s gated; the session simulator measures 0.142 s from a prompt reaching the engine to
    its admission (tests/serving/test_session_agreement.py). ρ >= 1: the prompts alone fill the time, no gated
    steady state: NaN (steady_solve keeps the two-point mix there, and its capacity tests report the point)."""
    t0, m = np.asarray(plain_s, float), np.maximum(np.asarray(mean_s, float), 1e-30)
    tau = np.asarray(prompt_s, float)
    rho = rate * tau
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        second = (t0 ** 2 + 2.0 * t0 * rho * m + tau * rho * m) / (1.0 - rho ** 2)
    return np.where(rho < 1.0, second / (2.0 * m), np.nan)


def full_chunk_queue_s(rate, exclusive_s):
    """Open loop: the wait of a Poisson arrival behind the full-room chunks of the prompts ahead (a prompt longer
    than the room holds whole steps, FCFS): an M/D/1 queue, W = ρ·S/(2(1 − ρ)), ρ = R·S, S = (c − 1)·t(n, N − n);
    zero for prompts of one chunk. ρ >= 1 is beyond capacity: an infinite wait, which the capacity test on the
    lifetime then reports (``capacity_limited``), as it does a queue that outgrows the KV cache."""
    rho = np.asarray(rate * exclusive_s, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(rho < 1.0, rho * exclusive_s / (2.0 * (1.0 - rho)), np.inf)


def closed_loop_prompt(others_per_step, prefill, room, chunks, clients):
    """Closed loop: (E[k] − c, E[tokens]) — the steps a prompt is pushed back by those ahead of it, and the prefill
    tokens the steps from its arrival to its first token process (those ahead, its own, those behind that fill
    its last step). A client's request lands at a step boundary beside the completions of the other clients in
    that step, K ~ Poisson(λ), λ = (B − 1)/life (the superposition of many clients' renewals is near Poisson,
    Palm–Khintchine; the simulator at C = 64, 8192/256, OSL ±10%: 78.4/19.0/2.3% of boundaries with 0/1/2
    arrivals, Poisson 78.3/19.1/2.3%), FCFS at a uniform place among them: λ/2 ahead on average; behind the
    backlog the earlier boundaries left, L_q = min(ρ²/(2(1 − ρ)), sqrt((B − 1)/π)) prompts: the M/D/1 queue
    (ρ = λ·I/room per step) until the loop's own feedback bounds it — a client whose prompt waits sends no next
    one, so the arrivals fall by λ·q/(B − 1) with q waiting, and near ρ = 1 the queue is a reflected
    Ornstein-Uhlenbeck process of variance (B − 1)/2, mean sqrt((B − 1)/π) (``clients`` = B − 1). The prompts
    ahead K_a ~ Poisson(μ), μ = λ/2 + L_q, taken whole: its last token is in step k = ceil((K_a + 1)·I/room),
        E[k] − c = Σ_{m >= 1} P(K_a >= k_m),  k_m = floor(((m − 1)·room + c·room − I)/I) + 1
    (one 4096-token prompt ahead under an 8128-token room pushes a 4096-token one to a second step; one 3000-
    token prompt does not). The steps up to k process I + μ·I tokens and, in the room its last step leaves
    (E[k]·room − I − μ·I), those behind it: its co-arrivals behind (λ/2) and the arrivals at the boundaries of its
    later steps (λ·(E[k] − 1)), each I tokens, as many as fit (``capped_poisson_sum``)."""
    lam, I = np.asarray(others_per_step, float), np.maximum(np.asarray(prefill, float), 1.0)
    rho = np.minimum(lam * I / np.maximum(room, 1.0), 1.0 - 1e-12)
    backlog = np.minimum(rho ** 2 / (2.0 * (1.0 - rho)), np.sqrt(np.maximum(clients, 0.0) / math.pi))
    mu = lam / 2.0 + backlog
    slack = chunks * room - I  # what the last chunk's step has left before anyone ahead spills it
    shape = np.broadcast_shapes(mu.shape, np.shape(slack), np.shape(room), I.shape)
    mu_f, slack_f, room_f, I_f = (np.broadcast_to(x, shape).ravel() for x in (mu, slack, room, I))
    extra = np.zeros(mu_f.shape)
    # k_m grows with m, so a point whose first tail is below NEGLIGIBLE has none: the table (the same μ at every m)
    # is formed for the others only
    live = np.flatnonzero(_live(mu_f, np.floor(slack_f / I_f) + 1.0))
    if live.size:
        tails, room_l, slack_l, I_l = _Tails(mu_f[live]), room_f[live], slack_f[live], I_f[live]
        acc, m, rows = np.zeros(live.size), 1, 4
        while m <= EXTRA_STEPS:  # P(K_a >= k_m) falls with m: stop at the first that is 0 everywhere, the m taken
            ms = np.arange(m, min(m + rows, EXTRA_STEPS + 1))[:, None]  # a block of rows at a time (4, 16, 64, ...)
            tail = tails.tail(np.floor(((ms - 1) * room_l + slack_l) / I_l) + 1.0)
            acc = np.add.accumulate(np.vstack([acc[None], tail]), axis=0)[-1]  # in m's order; a 0 row after the
            if not np.any(tail[-1]):  # first adds nothing (the tails only fall with m)
                break
            m, rows = m + rows, rows * 4
        extra[live] = acc
    extra = extra.reshape(shape)
    ahead = mu * I
    behind = capped_poisson_sum(lam / 2.0 + lam * (chunks + extra - 1.0), I, (chunks + extra) * room - I - ahead)
    return extra, I + ahead + behind


def capped_poisson_sum(lam, size, cap):
    """E[min(cap, K·size)], K ~ Poisson(λ): K prompts of ``size`` tokens filling a room of ``cap`` (at least 0),
    = λ·size − Σ_{K > k0} Pois(K; λ)·(K·size − cap), k0 = floor(cap/size) (what overflows the room),
    = λ·size − size·λ·P(K >= k0) + cap·P(K >= k0 + 1)  (Σ_{K > k0} K·Pois(K; λ) = λ·P(K >= k0)). Not
    min(cap, λ·size): one 12000-token prompt behind at λ = 0.23 fills a 4288-token room 21% of the time
    (1 − e^{−0.23}), 881 tokens on average, not 2760."""
    lam, size = np.asarray(lam, float), np.maximum(np.asarray(size, float), 1.0)
    cap = np.maximum(np.asarray(cap, float), 0.0)
    shape = np.broadcast_shapes(lam.shape, size.shape, cap.shape)
    lam, size, cap = (np.broadcast_to(x, shape) for x in (lam, size, cap))
    out = lam * size
    k0 = np.floor(cap / size)
    live = np.flatnonzero(_live(lam, k0 + 1.0))
    if live.size:
        lam_l, size_l, cap_l, k0_l = lam.flat[live], size.flat[live], cap.flat[live], k0.flat[live]
        tails = _Tails(lam_l)
        over = size_l * lam_l * tails.at(k0_l) - cap_l * tails.at(k0_l + 1.0)
        out = np.array(out)
        out.flat[live] = lam_l * size_l - np.maximum(over, 0.0)
    return out
