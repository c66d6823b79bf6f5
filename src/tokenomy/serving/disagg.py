"""The analytic steady state of disaggregated serving: a prefill pool hands each request's KV to a decode pool.

Per workload point (means of the length distributions; I = prefill tokens computed per request, N the engine's token
budget; every time is a scheduler step, scheduler.step_time, i.e. one Deployment.run):
    prefill pool  a pass runs the prompts that arrived during the last one, b_p = clip(X·t_p, 1, b_max) (closed
                  loop: at least 1 + X·W_p, a prompt and those that arrived while it waited — the clients' arrivals,
                  regular, leave no M/D/1 queue to stand for them; checked against serving.sim_disagg), at most
                  b_max = ranks_p·max(1, floor(N/I)) (ranks: the pool's schedulers, dp·ep under attention-DP, else
                  dp; fewer when their KV at ISL would not fit); t_p = t(0, b_p·I) a prefill-only step; capacity
                  mu_p = b_max / t_p(b_max) requests/s
    queue         W_p = u·t_p/2 (the pass under way, found with probability u = min(1, X·t_p/b_p), the share of
                  time the pool is busy: X/b_p passes a second of t_p each) + open loop: the M/D/1 wait
                  rho/(1 − rho)·t_p/2 at rho = λ/mu_p
    KV transfer   one message per request of kv(ISL) bytes (engine cache terms: what the sequence caches at ISL)
                  from the prefill pool to the decode pool: t_kv = alpha + bytes/beta over scale-up when both pools
                  sit in one scale-up domain, else scale-out (core.collectives.p2p); not overlapped with the
                  prefill pass (a conservative bound: layer-wise streaming hides part of it) and not contended
    decode pool   B running sequences, B = min(X·OSL·TPOT, B_cap), B_cap = min(B_kv, min(max_batch, N)·ranks_d) (a
                  decode-only step carries one token a sequence: the budget caps the batch too, ``decode_slots``);
                  TPOT = t(B, 0) at context ISL + OSL/2; capacity mu_d = B_cap / (OSL·TPOT(B_cap))
    bootstrap     the decode pool takes the request first and the prefill starts it only once the decode side has
                  pre-allocated its KV (SGLang's PD hand-shake: python/sglang/srt/disaggregation/prefill.py
                  PrefillBootstrapQueue.pop_bootstrapped, a request leaves for the prefill queue at KVPoll.WaitingForInput);
                  a decode scheduler that receives every r_recv-th step (--scheduler-recv-interval) makes it wait
                  W_d = (r_recv − 1)/2·TPOT where others decode in a closed loop (scheduler.poll_wait_s: times
                  min(1, B − 1), as the aggregated model charges it); an open loop's Poisson arrival lands at a
                  random point of the receive cycle, r_recv/2 steps from the next receive, the interval adding
                  W_d = (r_recv − 1)/2·TPOT·min(1, B) to the rest of the step under way an engine receiving every
                  step waits too (poll_wait_s's open loop; that half step: the KV's TPOT/2 below)
    TTFT          W_d + W_p + t_p + t_kv + TPOT/2 (the KV lands during a decode step and joins at the next) + TPOT (the
                  first decode step) + o_req (the request overhead around the engine, Efficiency.request_overhead_s,
                  as the aggregated model adds it); checked against the disaggregated simulator (serving.sim_disagg)
    closed loop   X = min(U / (TTFT + (OSL − 1)·TPOT), mu_p, mu_d), B and X by fixed-point iteration; clients
                  beyond what the pools hold queue (Little's law: U/X − cycle)
    open loop     X = λ; capacity-limited (the queue grows without bound) when λ >= min(mu_p, mu_d)
    $             input tokens pay the prefill pool's chip-seconds, output tokens the decode pool's:
                  $/Mtok in = 1e6·P·price/(X·ISL), out = 1e6·D·price/(X·OSL); tokens/s per chip = X·OSL/(P + D)

The pools, their default layouts and how they are sized for each other: serving/disagg_pools.py (re-exported here).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.core import engine
from tokenomy.core.collectives import p2p
from tokenomy.core.deployment import Deployment, usd_per_mtok
from tokenomy.serving.disagg_pools import (  # noqa: F401  (re-exported: callers write disagg.<name>)
    DecodeLoad, DecodePool, PoolDoesNotFit, PrefillTable, _busiest_tokens, _fits, _prefill_terms, checked_capacity,
    decode_load, decode_pool, decode_rate, decode_slots, prefill_capacity, prefill_columns, prefill_pass_s,
    prefill_table)
from tokenomy.serving.engine_profile import poll_wait_s
from tokenomy.serving.scheduler import EngineProfile, kv_sequence_bytes, poll_steps, step_time

ITERATIONS = 200
RHO_MAX = 1.0 - 1e-6
TOL = 1e-4  # the fixed point's relative tolerance on B and b_p


@dataclass(frozen=True)
class Disagg:
    """Arrays over workload points (scalars for the pool terms)."""

    prompts_per_pass: np.ndarray  # b_p at this load
    prefill_pass_s: np.ndarray  # t_p
    prompts_per_pass_max: float  # b_max
    prefill_capacity: float  # mu_p, requests/s
    kv_bytes: float  # per request, at ISL
    kv_transfer_s: float
    crosses_domain: bool
    decode_cap: float  # sequences the decode pool can run
    decode_capacity: np.ndarray  # mu_d, requests/s
    batch: np.ndarray  # running decodes B
    prefill_wait_s: np.ndarray  # W_p
    queue_s: np.ndarray
    tpot_s: np.ndarray
    ttft_s: np.ndarray
    e2e_s: np.ndarray
    requests_per_s: np.ndarray
    tokens_per_s_per_chip: np.ndarray
    usd_per_mtok_input: np.ndarray
    usd_per_mtok_output: np.ndarray
    kv_occupancy: np.ndarray
    capacity_limited: np.ndarray
    bound: np.ndarray  # index into engine.BOUNDS (the decode step)
    chips: int
    # each pool's (u_compute, u_hbm, u_link) over time (engine.PassTerms.busy_shares; econ/energy.py's watts): the
    # decode pool steps without pause at batch B; the prefill pool runs a pass of t_p for X/b_p of each second and
    # idles between (its shares times that duty, min(1, X·t_p/b_p))
    prefill_busy: tuple = ()
    decode_busy: tuple = ()


@dataclass(frozen=True)
class _Pools:
    """What a load point's latency takes from the two pools and does not change across the fixed point: the prefill
    capacity mu_p (prompts/s), the KV hand-off t_kv, the per-request overhead o_req, OSL, the loop's kind and the
    decode scheduler's receive wait in steps (poll_d)."""

    mu_p: float
    t_kv: float
    o_req: float
    osl: float
    closed: bool
    poll_d: float = 0.0


def _latency(X, b_p, t_p, tpot, B, k: _Pools):
    """(W_p, TTFT without the clients' queue, a request's cycle = TTFT + (OSL − 1)·TPOT): the module docstring's
    queue and TTFT at request rate X, b_p prompts a pass of t_p seconds, the decode step TPOT, the decode
    scheduler's receive wait of ``k.poll_d`` steps where B − 1 others decode."""
    busy = np.minimum(X * t_p / b_p, 1.0)
    rho = np.minimum(X / k.mu_p, RHO_MAX)
    wait = busy * t_p / 2.0 + (0.0 if k.closed else rho / (1.0 - rho) * t_p / 2.0)
    # a closed loop's client answers at a step boundary beside B − 1 others; a Poisson arrival lands mid-cycle
    bootstrap = poll_wait_s(k.poll_d, B, tpot, k.closed)
    ttft0 = bootstrap + wait + t_p + k.t_kv + 1.5 * tpot + k.o_req
    return wait, ttft0, ttft0 + (k.osl - 1.0) * tpot


def kv_handoff(pre: Deployment, isl, crosses_domain: bool):
    """(bytes, seconds) of the KV hand-off of a prompt of ``isl`` tokens: one message of kv(ISL) bytes (engine cache
    terms) from the prefill pool to the decode pool, t_kv = alpha + bytes/beta over scale-up, or scale-out when the
    pools sit in different domains (core.collectives.p2p); broadcasts over ``isl`` (the simulator's requests)."""
    kv_b = np.asarray(kv_sequence_bytes(pre, isl), float)
    return kv_b, np.asarray(p2p(pre.topo, kv_b, crosses_domain), float)


def crosses(pre: Deployment, dec: Deployment, crosses_domain: bool | None) -> bool:
    """The pools sit in different scale-up domains: as given, else when P + D chips exceed one domain."""
    return (pre.chips + dec.chips > pre.topo.domain_size) if crosses_domain is None else bool(crosses_domain)


@dataclass(frozen=True)
class DisaggLoad:
    """The workload points a disaggregated deployment serves: the mean ISL and OSL, the load — ``concurrency`` U
    (a closed loop) or ``rate`` λ requests/s (an open one), a list of points — and the prefix-cache hit rate."""

    isl: float
    osl: float
    concurrency: object = None
    rate: object = None
    cache_hit: float = 0.0


def disagg(pre: Deployment, dec: Deployment, prof_p: EngineProfile, prof_d: EngineProfile, w: DisaggLoad, *,
           crosses_domain: bool | None = None, decode: DecodePool | None = None,
           prefill: tuple | None = None) -> Disagg:
    """The steady state at each load point of ``w`` (module docstring). ``crosses_domain``: the pools sit in
    different scale-up domains (default: when P + D exceeds one domain). Raises PoolDoesNotFit naming the pool."""
    closed = w.concurrency is not None
    load = np.atleast_1d(np.asarray(w.concurrency if closed else w.rate, float))
    isl, osl, cache_hit = float(w.isl), float(w.osl), w.cache_hit
    cross = crosses(pre, dec, crosses_domain)

    # prefill pool: whole prompts per pass, as many as the budget and the KV at ISL allow
    I, pctx, b_max, t_max = prefill or _prefill_terms(pre, prof_p, isl, cache_hit)  # ``prefill``: computed once
    mu_p = b_max / t_max

    kv_b, t_kv = (float(x) for x in kv_handoff(pre, isl, cross))

    # decode pool
    pool = decode or decode_pool(dec, prof_d, isl, osl)  # ``decode``: the same pool's terms, computed once
    ctx, cap, mu_d, Bg, tg_d = pool.context, pool.cap, pool.capacity, pool.batches, pool.step_s

    # the fixed point runs on tables of whole batches (step_time is linear between them, so np.interp is exact for
    # the decode step; the prefill pass between whole prompts is interpolated the same way)
    bg = np.arange(1.0, np.ceil(b_max) + 1.0)
    tg_p = np.asarray(prefill_pass_s(pre, bg, I, pctx), float)
    B, b_p = np.minimum(np.ones_like(load), cap), np.ones_like(load)
    X = np.minimum(load, min(mu_p, mu_d)) if not closed else np.zeros_like(load)
    fixed = _Pools(mu_p, t_kv, float(np.asarray(dec.eff.request_overhead_s)), osl, closed, poll_steps(prof_d))
    for _ in range(ITERATIONS + 1):
        t_p, tpot = np.interp(b_p, bg, tg_p), np.interp(B, Bg, tg_d)
        wait, ttft0, cycle = _latency(X, b_p, t_p, tpot, B, fixed)
        X = np.minimum(load / cycle, min(mu_p, mu_d)) if closed else np.minimum(load, min(mu_p, mu_d))
        b_new = np.clip(np.maximum(X * t_p, 1.0 + X * wait if closed else 1.0), 1.0, b_max)  # prompts a pass
        B_new = np.clip(X * osl * tpot, 1.0, cap)
        done = np.allclose(b_new, b_p, rtol=TOL) and np.allclose(B_new, B, rtol=TOL)
        b_p, B = b_new, B_new
        if done:
            break
    t_p = np.interp(b_p, bg, tg_p)
    tpot, r = step_time(dec, B, ctx, terms=True)
    _, r_p = prefill_pass_s(pre, b_p, I, pctx, terms=True)
    duty = np.minimum(X * t_p / b_p, 1.0)
    wait, ttft0, cycle = _latency(X, b_p, t_p, tpot, B, fixed)
    if closed:  # clients the pools cannot hold wait in the prefill queue (Little's law)
        limited = load / cycle >= min(mu_p, mu_d) * (1.0 - 1e-6)
        queue = np.maximum(load / X - cycle, 0.0)
    else:
        limited = load >= min(mu_p, mu_d)
        queue = np.where(limited, np.inf, 0.0)
    chips = pre.chips + dec.chips
    kv_d = pool.kv_tokens
    return Disagg(prompts_per_pass=b_p, prefill_pass_s=t_p, prompts_per_pass_max=b_max, prefill_capacity=mu_p, kv_bytes=kv_b, kv_transfer_s=t_kv,
                  crosses_domain=cross, decode_cap=cap, decode_capacity=np.full_like(load, mu_d), batch=B,
                  prefill_wait_s=wait, queue_s=queue, tpot_s=tpot, ttft_s=ttft0 + queue, e2e_s=cycle + queue,
                  requests_per_s=X, tokens_per_s_per_chip=X * osl / chips,
                  # each pool's chip-seconds pay for its own tokens: input on the prefill pool, output on decode
                  usd_per_mtok_input=usd_per_mtok(1.0, X * isl, pre.chips, pre.price),
                  usd_per_mtok_output=usd_per_mtok(1.0, X * osl, dec.chips, dec.price),
                  kv_occupancy=B * ctx / (float(kv_d) * float(dec.layout.dp)), capacity_limited=limited,
                  bound=np.broadcast_to(r.bound, load.shape), chips=chips,
                  prefill_busy=tuple(duty * u for u in r_p.busy_shares()),
                  decode_busy=tuple(np.broadcast_to(u, load.shape) for u in r.busy_shares()))
