"""The analytic steady state of aggregated continuous batching, vectorised over workload points.

Per point (means of the length distributions; I = ceil(ISL·(1−F)) prefill tokens computed per request, N the
token budget, t(n, P) one step of n decodes at context ISL + OSL/2 plus P prefill tokens, scheduler.step_time):
    B       = min(C, B_kv, max_batch)                       running sequences (closed loop)
    chunks  = ceil(I / (N − n)),  life = chunks + OSL − 1   steps a request holds its slot
    n       = B·(OSL − 1)/life,   P = B·I/life               decodes and prefill tokens of a mean step
    TPOT    = t(n, P)                                      every decode step carries its share of the prefill
    TTFT    = queue + wait + chunks·t(n, min(I, N − n))     each chunk is a full mixed step
              wait: t/2 for open-loop arrivals (the rest of the step under way), 0 for a closed loop (a client's
              next request lands at a step boundary); "together": all C prompts in the first steps, request j
              done after ceil((j+1)·I/N) prefill-only steps, TTFT the mean of that
    queue   = (C − B)·lifetime/B when C > B (closed loop, Little's law); open loop: N = R·lifetime solved by
              fixed-point iteration, capacity-limited (queue grows without bound) when R·lifetime > B_cap
    X       = B / lifetime requests/s,  lifetime = TTFT − queue + (OSL − 1)·TPOT
    $       chips·$/chip-s split by time: the prefill share of a step (t(n, P) − t(n, 0))/t(n, P) to the input tokens
capacity_limited when demand exceeds B_kv or max_batch, or the step's tokens n + P exceed the budget.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.core import engine
from tokenomy.core.deployment import Deployment
from tokenomy.serving.scheduler import EngineProfile, kv_batch, kv_tokens, step_time
from tokenomy.serving.workload import prefill_tokens
from tokenomy.units import SECONDS_PER_HOUR

OPEN_LOOP_ITERATIONS = 40


@dataclass(frozen=True)
class Steady:
    """Arrays over workload points."""

    batch: np.ndarray  # running sequences B
    b_kv: np.ndarray
    decodes: np.ndarray  # n
    prefill_per_step: np.ndarray  # P
    chunks: np.ndarray
    tpot_s: np.ndarray
    ttft_s: np.ndarray
    ttft_p50_s: np.ndarray
    ttft_p99_s: np.ndarray
    queue_s: np.ndarray
    chunk_step_s: np.ndarray
    e2e_s: np.ndarray
    requests_per_s: np.ndarray
    output_tokens_per_s: np.ndarray
    prefill_share: np.ndarray
    usd_per_mtok_input: np.ndarray
    usd_per_mtok_output: np.ndarray
    kv_occupancy: np.ndarray
    capacity_limited: np.ndarray
    bound: np.ndarray  # index into engine.BOUNDS (the mean step)
    fits: np.ndarray


def _mean_step(dep, B, isl, osl, I, budget, ctx, pctx):
    chunks = np.ceil(I / np.maximum(budget - B, 1.0))
    life = chunks + osl - 1.0
    n = B * (osl - 1.0) / life
    P = np.minimum(B * I / life, np.maximum(budget - n, 0.0))
    return chunks, life, n, P


def steady(dep: Deployment, prof: EngineProfile, *, isl, osl, concurrency=None, rate=None, cache_hit=0.0,
           arrivals="staggered") -> Steady:
    """The steady state at each point (module docstring); ``concurrency`` or ``rate`` an array of points."""
    closed = concurrency is not None
    load = np.atleast_1d(np.asarray(concurrency if closed else rate, float))
    isl, osl = (np.broadcast_to(np.asarray(x, float), load.shape) for x in (isl, osl))
    I = prefill_tokens(isl, cache_hit)
    budget = float(prof.max_num_tokens)
    ctx, pctx = isl + osl / 2.0, isl * cache_hit + I / 2.0
    b_kv = kv_batch(dep, prof, isl, osl)
    cap = np.minimum(b_kv, float(prof.max_batch))
    if closed:
        B = np.minimum(load, cap)
    else:  # Little's law: N = R·lifetime(N), from below
        B = np.minimum(np.ones_like(load), cap)
        for _ in range(OPEN_LOOP_ITERATIONS):
            chunks, life, n, P = _mean_step(dep, B, isl, osl, I, budget, ctx, pctx)
            t = step_time(dep, n, ctx, P, pctx)
            t_chunk = step_time(dep, n, ctx, np.minimum(I, budget - n), pctx)
            lifetime = t / 2.0 + chunks * t_chunk + (osl - 1.0) * t
            B = np.minimum(np.maximum(load * lifetime, 1.0), cap)
    chunks, life, n, P = _mean_step(dep, B, isl, osl, I, budget, ctx, pctx)
    together = closed and arrivals == "together"
    if together:  # C prompts at once: prefill-only steps, then C decodes per step
        n, P = B, np.zeros_like(B)
    tpot, r = step_time(dep, n, ctx, P, pctx, terms=True)
    t_plain = step_time(dep, n, ctx, 0.0, pctx)
    if together:
        t_chunk = step_time(dep, 0.0, ctx, np.minimum(B * I, budget), pctx)
        steps_all = np.ceil(B * I / budget)
        idx = lambda q: np.ceil(np.maximum(q * B, 1.0) * I / budget)  # noqa: E731  (prefill steps to request q·B)
        mean_idx = np.where(steps_all <= 1, 1.0, (steps_all + 1.0) / 2.0)
        ttft0, p50, p99 = mean_idx * t_chunk, idx(0.5) * t_chunk, idx(0.99) * t_chunk
        chunks = steps_all
    else:
        t_chunk = step_time(dep, n, ctx, np.minimum(I, budget - n), pctx)
        wait = 0.0 if closed else tpot / 2.0
        ttft0 = wait + chunks * t_chunk
        p50 = p99 = ttft0
    lifetime = ttft0 + (osl - 1.0) * tpot
    if closed:
        queue = np.where(load > B, (load - B) * lifetime / B, 0.0)
        demand = load > cap
    else:
        demand = load * lifetime > cap
        queue = np.where(demand, np.inf, 0.0)
    over_budget = n + B * I / life > budget + 1e-9
    X = np.where(closed, B / lifetime, np.where(demand, B / lifetime, load))
    out_tps = X * osl
    share = np.clip(np.where(together, chunks * t_chunk / lifetime, (tpot - t_plain) / tpot), 0.0, 1.0)
    usd_s = dep.chips * dep.price / SECONDS_PER_HOUR
    kv_tok, _, _ = kv_tokens(dep, prof, np.ceil((isl + osl) / prof.block_size) * prof.block_size)
    occupancy = B * (isl + osl / 2.0) / (kv_tok * float(dep.layout.dp))
    fits = (np.asarray(r.reason) == 0) & (b_kv >= 1)
    nan = np.where(fits, 0.0, np.nan)
    return Steady(batch=B, b_kv=b_kv, decodes=n, prefill_per_step=P, chunks=chunks, tpot_s=tpot + nan,
                  ttft_s=ttft0 + queue + nan, ttft_p50_s=p50 + queue + nan, ttft_p99_s=p99 + queue + nan,
                  queue_s=queue + nan, chunk_step_s=t_chunk + nan, e2e_s=lifetime + queue + nan,
                  requests_per_s=X + nan, output_tokens_per_s=out_tps + nan, prefill_share=share,
                  usd_per_mtok_input=1e6 * usd_s * share / (X * isl) + nan,
                  usd_per_mtok_output=1e6 * usd_s * (1.0 - share) / out_tps + nan, kv_occupancy=occupancy + nan,
                  capacity_limited=demand | over_budget, bound=np.broadcast_to(r.bound, load.shape), fits=fits)


def bound_name(i) -> str:
    return engine.BOUNDS[int(i)]
