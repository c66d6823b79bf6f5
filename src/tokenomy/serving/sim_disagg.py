"""The iteration-level simulator of disaggregated serving: a prefill pool hands each request's KV to a decode pool.

    prefill pool  its replicas run whole-prompt passes from one FCFS queue under the engine's token budget; a
                  prompt waits for a free replica (serving.sim_prefill)
    hand-off      the prompt's KV crosses the link between the pools: t_kv = alpha + kv(ISL)/beta per request, the
                  analytic model's cost (serving.disagg.kv_handoff), not contended, after the pass
    decode pool   continuous batching of decodes only; a request is admitted when its KV fits the pool's cache and
                  the batch cap allows, else it queues (serving.sim_decode)
    TTFT          arrival → queue → pass → hand-off → admission → the first decode step, + the request overhead
                  (Efficiency.request_overhead_s), as the analytic model counts it; TPOT, e2e as the aggregated
                  simulator's (simulator.request_times)
Every pass and step is one engine call (scheduler.step_time, read off StepTables). The two pools run as one
discrete-event loop: whichever acts first goes — the prefill pool at its next pass start, the decode pool at its
next step — and a decode run never starts a step past the prefill pool's next pass (that pass's prompts land after
it: a pass takes time, the hand-off too, and a step admits only what has landed). The same inputs as the aggregated
simulator (Workload: lengths, closed/open loop, arrivals, trace, seed; deterministic for a seed); closed loop: a
client's next request enters the prefill queue when its last one finishes, the first U at t = 0 ("together") or
spread over U/B lifetimes ("staggered", _first_arrivals).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tokenomy.core.deployment import Deployment
from tokenomy.serving.disagg import crosses, kv_handoff
from tokenomy.serving.scheduler import EngineProfile
from tokenomy.serving.sim_decode import DecodePool
from tokenomy.serving.sim_prefill import PrefillPool
from tokenomy.serving.simulator import Simulation, first_arrivals, request_times
from tokenomy.serving.workload import Workload, prefill_context, prefill_tokens


@dataclass(frozen=True)
class DisaggSimulation(Simulation):
    """The aggregated simulator's record (steps: the decode pool's; KV: the decode pool's cache; max_queue: the
    prefill queue) plus the pools' own counts."""

    prefill_passes: int = 0
    max_decode_queue: int = 0  # requests whose KV had landed, waiting for decode admission
    kv_transfer_s: float = 0.0  # mean hand-off

    def summary(self, chips: int) -> dict:
        return {**super().summary(chips), "prefill_passes": self.prefill_passes,
                "max_decode_queue": self.max_decode_queue}


def simulate_disagg(pre: Deployment, dec: Deployment, prof_p: EngineProfile, prof_d: EngineProfile, w: Workload,
                    n_requests: int, *, crosses_domain: bool | None = None) -> DisaggSimulation:
    """Run ``n_requests`` of workload ``w`` through the two pools (module docstring); deterministic for a seed."""
    req = w.requests(n_requests)
    isl, osl = req.isl.astype(np.int64), req.osl.astype(np.int64)
    need = prefill_tokens(isl, w.cache_hit).astype(np.int64)
    pctx = float(prefill_context(np.mean(isl), w.cache_hit, np.mean(need)))
    t_kv = kv_handoff(pre, isl.astype(float), crosses(pre, dec, crosses_domain))[1].tolist()
    pf, dp = PrefillPool(pre, prof_p, isl, need, pctx), DecodePool(dec, prof_d, isl, osl)
    N, U = len(isl), int(w.concurrency) if w.closed else 0
    arrival = _first_arrivals(w, req.arrival_s, pf, dp, need, osl, float(np.mean(t_kv)))
    issued = min(U, N) if w.closed else N
    for r in range(issued):
        pf.push(arrival[r], r)
    finished = 0
    while finished < N:
        t_p, t_d = pf.next_start(), dp.next_time()
        if t_p == math.inf and t_d == math.inf:
            raise RuntimeError("sim_disagg: requests left but nothing to run")  # a bug, never bad input
        if t_p <= t_d:
            for r, done in pf.start(t_p):
                dp.push(done + t_kv[r], r)
            continue
        for _, t in dp.advance(t_p):
            finished += 1
            if issued < N and w.closed:  # the client sends its next request
                arrival[issued] = t
                pf.push(t, issued)
                issued += 1
    o_req = float(np.asarray(dec.eff.request_overhead_s))
    ttft, tpot, e2e, counted = request_times(arrival, dp.first, dp.finish, osl, o_req, w.closed, U)
    return DisaggSimulation(ttft, tpot, e2e, np.array(arrival, float), np.array(dp.finish, float), counted, dp.S, 0,
                            dp.max_used, dp.kv, pf.max_queue, np.array(pf.qlen, np.int64),
                            np.array(dp.first, float), dp.tokens_out, int(np.sum(need)), pf.passes, dp.max_queue,
                            float(np.mean(t_kv)))


def _first_arrivals(w: Workload, arrival_s, pf: PrefillPool, dp: DecodePool, need, osl, t_kv: float) -> list:
    """simulator.first_arrivals with a disaggregated lifetime: a one-prompt pass + the hand-off + OSL decode steps
    at B = min(U, the decode pool's cap) running."""
    def running_and_lifetime(first: int) -> tuple[int, float]:
        B = max(min(first, dp.cap, dp.kv // int(np.ceil(np.mean(dp.need)))), 1)
        ctx = float(np.mean(dp.isl)) + float(np.mean(osl)) / 2.0
        life = (pf.table(0, 1.0, float(pf.dp) * float(np.mean(need))) + t_kv
                + float(np.mean(osl)) * dp.table(min(B, dp.table.t.shape[0] - 1), ctx, 0.0))
        return B, life

    return first_arrivals(w, arrival_s, running_and_lifetime)
