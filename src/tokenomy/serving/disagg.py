"""The analytic steady state of disaggregated serving: a prefill pool hands each request's KV to a decode pool.

Per workload point (means of the length distributions; I = prefill tokens computed per request, N the engine's token
budget; every time is a scheduler step, scheduler.step_time, i.e. one Deployment.run):
    prefill pool  a pass runs the prompts that arrived during the last one, b_p = clip(X·t_p, 1, b_max), at most
                  b_max = ranks_p·max(1, floor(N/I)) (ranks: the pool's schedulers, dp·ep under attention-DP, else
                  dp; fewer when their KV at ISL would not fit); t_p = t(0, b_p·I) a prefill-only step; capacity
                  mu_p = b_max / t_p(b_max) requests/s
    queue         W_p = t_p/2 (the pass under way) + open loop: the M/D/1 wait rho/(1 − rho)·t_p/2 at rho = R/mu_p
    KV transfer   one message per request of kv(ISL) bytes (engine cache terms: what the sequence caches at ISL)
                  from the prefill pool to the decode pool: t_kv = alpha + bytes/beta over scale-up when both pools
                  sit in one scale-up domain, else scale-out (core.collectives.p2p); not overlapped with the
                  prefill pass (a conservative bound: layer-wise streaming hides part of it) and not contended
    decode pool   B running sequences, B = min(X·OSL·TPOT, B_kv, max_batch·ranks_d); TPOT = t(B, 0) at context
                  ISL + OSL/2; capacity mu_d = B_cap / (OSL·TPOT(B_cap))
    TTFT          W_p + t_p + t_kv + TPOT (the first decode step)
    closed loop   X = min(C / (TTFT + (OSL − 1)·TPOT), mu_p, mu_d), B and X by fixed-point iteration; clients
                  beyond what the pools hold queue (Little's law: C/X − cycle)
    open loop     X = R; capacity-limited (the queue grows without bound) when R >= min(mu_p, mu_d)
    $             input tokens pay the prefill pool's chip-seconds, output tokens the decode pool's:
                  $/Mtok in = 1e6·P·price/(X·ISL), out = 1e6·D·price/(X·OSL); tokens/s per chip = X·OSL/(P + D)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.core import engine
from tokenomy.core.collectives import p2p
from tokenomy.core.deployment import Deployment
from tokenomy.serving.scheduler import EngineProfile, kv_batch, kv_sequence_bytes, kv_tokens, scheduler_ranks, step_time
from tokenomy.serving.workload import prefill_tokens
from tokenomy.units import SECONDS_PER_HOUR, fmt_bytes

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


class PoolDoesNotFit(ValueError):
    """A pool that cannot hold its work: the message names the pool and what it needs; ``pool`` its name."""

    def __init__(self, pool: str, msg: str) -> None:
        super().__init__(msg)
        self.pool = pool


def _fits(name: str, dep: Deployment, prof: EngineProfile, tokens: float, r) -> None:
    """Refuse a pool whose pass does not fit or whose KV cannot hold one ``tokens``-token sequence."""
    if int(np.ravel(r.reason)[0]) != 0:
        raise PoolDoesNotFit(name, f"does not fit: {name} pool ({dep.layout.label()} on {dep.chips} chips): "
                             f"{engine.REASONS[int(np.ravel(r.reason)[0])]}; it needs "
                             f"{fmt_bytes(float(np.ravel(r.memory_per_chip_bytes)[0]))} per chip of "
                             f"{fmt_bytes(float(np.ravel(r.hbm_bytes)[0]))}")
    _, per_tok, free = kv_tokens(dep, prof, tokens)
    need = float(per_tok) * tokens
    if float(free) < need:
        raise PoolDoesNotFit(name, f"does not fit: {name} pool ({dep.layout.label()} on {dep.chips} chips) needs KV for one "
                             f"{tokens:g}-token sequence, {fmt_bytes(need)} per chip > {fmt_bytes(max(float(free), 0))} "
                             f"left after weights and activations under {prof.name}'s {prof.hbm_fraction:g} HBM share")


def disagg(pre: Deployment, dec: Deployment, prof_p: EngineProfile, prof_d: EngineProfile, *, isl, osl,
           concurrency=None, rate=None, cache_hit=0.0, crosses_domain: bool | None = None) -> Disagg:
    """The steady state at each load point (module docstring). ``crosses_domain``: the pools sit in different
    scale-up domains (default: when P + D exceeds one domain). Raises PoolDoesNotFit naming the pool."""
    closed = concurrency is not None
    load = np.atleast_1d(np.asarray(concurrency if closed else rate, float))
    isl, osl = float(isl), float(osl)
    I = float(prefill_tokens(isl, cache_hit))
    pctx = isl * cache_hit + I / 2.0
    topo = pre.topo
    cross = (pre.chips + dec.chips > topo.domain_size) if crosses_domain is None else bool(crosses_domain)

    # prefill pool: whole prompts per pass, as many as the budget and the KV at ISL allow
    blk = prof_p.block_size
    kv_p, _, _ = kv_tokens(pre, prof_p, np.ceil(isl / blk) * blk)
    per_rank = max(1.0, np.floor(prof_p.max_num_tokens / I))
    ranks_p = float(scheduler_ranks(pre.layout))
    by_kv = float(np.floor(float(kv_p) * float(pre.layout.dp) / (np.ceil(isl / blk) * blk)))
    b_max = max(min(per_rank * ranks_p, by_kv), 1.0)
    t_max, r_p = step_time(pre, 0.0, 1.0, b_max * I, pctx, terms=True)
    _fits("prefill", pre, prof_p, float(np.ceil(isl / blk) * blk), r_p)
    mu_p = b_max / float(t_max)

    # KV hand-off: one message per request
    kv_b = float(kv_sequence_bytes(pre, isl))
    t_kv = float(p2p(topo, kv_b, cross))

    # decode pool
    ctx = isl + osl / 2.0
    L_d = float(np.ceil((isl + osl) / prof_d.block_size) * prof_d.block_size)
    b_kv = float(kv_batch(dec, prof_d, isl, osl))
    cap = min(b_kv, float(prof_d.max_batch) * float(scheduler_ranks(dec.layout)))
    _, r_d0 = step_time(dec, float(dec.layout.dp), ctx, terms=True)  # one sequence per replica
    _fits("decode", dec, prof_d, L_d, r_d0)
    t_cap = float(step_time(dec, cap, ctx))
    mu_d = cap / (osl * t_cap)

    # the fixed point runs on tables of whole batches (step_time is linear between them, so np.interp is exact for
    # the decode step; the prefill pass between whole prompts is interpolated the same way)
    Bg = np.arange(1.0, np.ceil(cap) + 1.0)
    tg_d = np.asarray(step_time(dec, Bg, ctx), float)
    bg = np.arange(1.0, np.ceil(b_max) + 1.0)
    tg_p = np.asarray(step_time(pre, 0.0, 1.0, bg * I, pctx), float)
    B, b_p = np.minimum(np.ones_like(load), cap), np.ones_like(load)
    X = np.minimum(load, min(mu_p, mu_d)) if not closed else np.zeros_like(load)
    for _ in range(ITERATIONS + 1):
        t_p, tpot = np.interp(b_p, bg, tg_p), np.interp(B, Bg, tg_d)
        rho = np.minimum(X / mu_p, RHO_MAX)
        wait = t_p / 2.0 + (0.0 if closed else rho / (1.0 - rho) * t_p / 2.0)
        ttft0 = wait + t_p + t_kv + tpot
        cycle = ttft0 + (osl - 1.0) * tpot
        X = np.minimum(load / cycle, min(mu_p, mu_d)) if closed else np.minimum(load, min(mu_p, mu_d))
        b_new = np.clip(X * t_p, 1.0, b_max)  # a pass takes the prompts that arrived during the last one
        B_new = np.clip(X * osl * tpot, 1.0, cap)
        done = np.allclose(b_new, b_p, rtol=TOL) and np.allclose(B_new, B, rtol=TOL)
        b_p, B = b_new, B_new
        if done:
            break
    t_p = np.interp(b_p, bg, tg_p)
    tpot, r = step_time(dec, B, ctx, terms=True)
    rho = np.minimum(X / mu_p, RHO_MAX)
    wait = t_p / 2.0 + (0.0 if closed else rho / (1.0 - rho) * t_p / 2.0)
    ttft0 = wait + t_p + t_kv + tpot
    cycle = ttft0 + (osl - 1.0) * tpot
    if closed:  # clients the pools cannot hold wait in the prefill queue (Little's law)
        limited = load / cycle >= min(mu_p, mu_d) * (1.0 - 1e-6)
        queue = np.maximum(load / X - cycle, 0.0)
    else:
        limited = load >= min(mu_p, mu_d)
        queue = np.where(limited, np.inf, 0.0)
    chips = pre.chips + dec.chips
    usd = lambda dep: dep.chips * dep.price / SECONDS_PER_HOUR  # noqa: E731  ($ per second of the pool)
    kv_d, _, _ = kv_tokens(dec, prof_d, L_d)
    return Disagg(prompts_per_pass=b_p, prefill_pass_s=t_p, prompts_per_pass_max=b_max, prefill_capacity=mu_p, kv_bytes=kv_b, kv_transfer_s=t_kv,
                  crosses_domain=cross, decode_cap=cap, decode_capacity=np.full_like(load, mu_d), batch=B,
                  prefill_wait_s=wait, queue_s=queue, tpot_s=tpot, ttft_s=ttft0 + queue, e2e_s=cycle + queue,
                  requests_per_s=X, tokens_per_s_per_chip=X * osl / chips,
                  usd_per_mtok_input=1e6 * usd(pre) / (X * isl), usd_per_mtok_output=1e6 * usd(dec) / (X * osl),
                  kv_occupancy=B * ctx / (float(kv_d) * float(dec.layout.dp)), capacity_limited=limited,
                  bound=np.broadcast_to(r.bound, load.shape), chips=chips)
