"""Where a request's prompt lands among the others' under the scheduler's token budget: the steps from its
arrival to its first token, closed loop and open (Poisson) loop. Used by the analytic steady state (steady.py);
checked against the iteration-level simulator (tests/serving/test_serve_steady_and_sim.py,
test_open_loop_prefill.py).

Notation (arrays over workload points): I prefill tokens a prompt computes, room = N − n the budget the decodes
leave a step, c = ceil(I/room) its chunks, r = I − (c − 1)·room its last chunk.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

SPILL_SIGMAS = 8.0  # Poisson counts beyond mean + 8 sd (and 8) carry no probability worth a term
EXTRA_STEPS = 256  # a bound only: the sum stops at the first step whose tail is below NEGLIGIBLE everywhere (near
# the budget's capacity the backlog reaches sqrt((B - 1)/pi) prompts, ~9 at B = 248, and pushes a prompt ~5 steps)
NEGLIGIBLE = 1e-6  # a Poisson tail below this carries under 0.01 tokens of a 1000-token prompt: not formed


def _live(lam, k):
    """Where P(Pois(λ) >= k) may exceed NEGLIGIBLE, by the Chernoff bound P <= e^{−λ}·(eλ/k)^k (k > λ)."""
    lam, k = np.asarray(lam, float), np.asarray(k, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_bound = k * (1.0 + np.log(np.maximum(lam, 1e-300)) - np.log(np.maximum(k, 1e-300))) - lam
    return (k <= lam) | (log_bound > math.log(NEGLIGIBLE))


def _top(lam):
    """The largest Poisson count worth a term: mean + SPILL_SIGMAS sd + SPILL_SIGMAS."""
    return lam + SPILL_SIGMAS * np.sqrt(lam) + SPILL_SIGMAS


def _pmf(lam: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """(K, Pois(K; λ)) for K = 0, 1, ... up to the largest mean + SPILL_SIGMAS sd over the points, each point's
    terms past its own bound 0: the log-pmf stepped by log(λ/K) from K = 0, so a large λ does not underflow and a
    point's terms are the same bits whatever points share the array (a sweep's pieces agree)."""
    log_lam = np.log(np.maximum(lam, 1e-300))
    top = _top(lam)
    log_pmf = -lam
    top_max = np.max(np.where(np.isfinite(top), top, 0.0)) if np.size(top) else -1.0  # NaN: a point that does not fit
    for K in range(int(top_max) + 1):
        if K > 0:
            log_pmf = log_pmf + log_lam - math.log(K)
        yield K, np.where(K <= top, np.where(lam > 0, np.exp(log_pmf), float(K == 0)), 0.0)


def poisson_tail(lam, k):
    """P(Pois(λ) >= k), elementwise (k integer-valued; 1 where k <= 0)."""
    lam, k = np.broadcast_arrays(np.asarray(lam, float), np.asarray(k, float))
    out = np.where(k <= 0, 1.0, 0.0)
    live = np.flatnonzero((k > 0) & _live(lam, k))
    if live.size:
        lam_l, k_l = lam.flat[live], k.flat[live]
        below = np.zeros_like(lam_l)  # P(K < k) = Σ_{K < k} pmf
        for K, p in _pmf(lam_l):
            if K >= np.max(k_l):
                break
            below += np.where(K < k_l, p, 0.0)
        out.flat[live] = np.clip(1.0 - below, 0.0, 1.0)
    return out


def spill_share(others_per_step, prefill, last, room):
    """Open loop, P(spill): the chance that a request's last chunk does not finish in its step. The other prompts
    that land in the same step are Poisson with mean λ (the open loop's R·E[T²]/E[T], steady._step_times) and the
    scheduler packs them FCFS, the request at a uniform place among them; each one ahead takes q = min(I, room) of
    the room, so the last r tokens spill into the next step when k* = floor((room − r)/q) + 1 or more are ahead:
    P = Σ_{K >= k*} Pois(K; λ)·(K + 1 − k*)/(K + 1). (One prompt ahead of a 4096-token one under an 8192-token
    budget spills it: at λ = 0.5 about one time in five.)"""
    lam = np.asarray(others_per_step, float)
    q = np.maximum(np.minimum(prefill, room), 1.0)
    k_star = np.floor(np.maximum(room - last, 0.0) / q) + 1.0
    out = np.zeros(np.broadcast_shapes(lam.shape, np.shape(k_star)))
    lam, k_star = np.broadcast_to(lam, out.shape), np.broadcast_to(k_star, out.shape)
    live = np.flatnonzero(k_star <= _top(lam))
    if not live.size:
        return out
    lam_l, k_l = lam.flat[live], k_star.flat[live]
    acc = np.zeros_like(lam_l)
    for K, p in _pmf(lam_l):  # terms below K = k* − 1 are zero
        acc += p * np.maximum(K + 1.0 - k_l, 0.0) / (K + 1.0)
    out.flat[live] = np.where(lam_l > 0, acc, 0.0)
    return out


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
    extra = np.zeros(np.broadcast_shapes(mu.shape, np.shape(slack)))
    for m in range(1, EXTRA_STEPS + 1):  # P(K_a >= k_m) falls with m: stop at the first that is 0 everywhere
        # (poisson_tail forms no tail below NEGLIGIBLE)
        tail = poisson_tail(mu, np.floor(((m - 1) * room + slack) / I) + 1.0)
        if not np.any(tail):
            break
        extra = extra + tail
    ahead = mu * I
    behind = capped_poisson_sum(lam / 2.0 + lam * (chunks + extra - 1.0), I, (chunks + extra) * room - I - ahead)
    return extra, I + ahead + behind


def capped_poisson_sum(lam, size, cap):
    """E[min(cap, K·size)], K ~ Poisson(λ): K prompts of ``size`` tokens filling a room of ``cap`` (at least 0),
    = λ·size − Σ_{K > k0} Pois(K; λ)·(K·size − cap), k0 = floor(cap/size) (what overflows the room). Not
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
        over = np.zeros_like(lam_l)
        for K, p in _pmf(lam_l):
            over += np.where(K > k0_l, p * (K * size_l - cap_l), 0.0)
        out = np.array(out)
        out.flat[live] = lam_l * size_l - over
    return out
