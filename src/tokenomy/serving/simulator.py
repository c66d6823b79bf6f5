"""The iteration-level simulator: a loop over scheduler steps, each timed by the one engine.

Each step, as vLLM, SGLang and TensorRT-LLM schedule one:
  1. arrivals due by now join the FCFS queue;
  2. admission, in queue order, while the running set is under max_batch and the head's KV blocks fit:
     ceil((ISL + max(g − 1, 0)) / b) blocks of b tokens (g tokens it generated before a preemption); an engine
     that reserves the whole sequence (EngineProfile.reserve_output: TensorRT-LLM's GUARANTEED_NO_EVICT) admits
     only while the running requests' ceil((ISL + OSL − 1)/b) blocks, its own included, fit the cache, so its
     decodes never preempt;
  3. every running decode takes one token of the budget and caches one token: a decode holding K tokens
     (ISL + g − 1) needs a new block when K is a multiple of b; when none is free the latest-admitted request is
     preempted (recompute: its blocks are freed, it re-queues at the front and later prefills its uncached
     prompt and the g − 1 tokens it had cached, then decodes on from g);
  4. prefill chunks fill the rest of the budget in admission order (whole prompts only, when the engine does
     not chunk: its budget is then at least the longest prompt beside max_batch decodes, scheduler.step_budget);
     TensorRT-LLM's delayed batching, where on, holds them while others decode (batch_wait_gate.py);
     a prompt's last chunk emits its first token (time to first token);
  5. the step takes t(n decodes at their mean context, P prefill tokens), the engine on a grid
     (sim_table.StepTable); requests that reached their OSL finish and free their blocks.
Runs of pure-decode steps up to the next event (a completion, an arrival, the step that would need more blocks
than are free) are taken at once: the blocks in closed form (sim_blocks.DecodeBlocks), the seconds in closed
form (StepTable.decode_run), the same as stepping them one by one; a run goes on past each event after which the
next step would again be pure decode (an arrival that cannot be admitted, a completion that frees nothing the
queue's head can use), checked as the loop checks it (tests/serving/test_simulator_stepwise.py and
test_session_stepwise.py: against ``_Run.stepwise``, one step per loop turn).
Closed loop: each of U clients sends its next request when its last completes (all at t = 0 "together", or
spread over one steady-state lifetime "staggered", _lifetime_s); open loop: the workload's Poisson arrivals or a trace's.
Statistics skip the first and last U requests of a closed loop (warm-up and drain) when there are > 3·U.
TTFT and end-to-end times add the request overhead outside the engine (Efficiency.request_overhead_s).
The scheduler's state is sim_run.py's ``_Run``, its loop sim_loop.py's; this module sets a run up and reads its times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tokenomy.core.deployment import Deployment
from tokenomy.serving.batch_wait_gate import gate_for
from tokenomy.serving.scheduler import (EngineProfile, kv_tokens, pooled_limits, rank_chunk,
                                        step_budget)
from tokenomy.serving.sim_run import EPS_S, Capacity, _Run  # noqa: F401  (re-exported: sim_sessions)
from tokenomy.serving.sim_table import C_GRID, P_GRID, StepTable
from tokenomy.serving.workload import Workload, prefill_context, prefill_tokens

__all__ = ["C_GRID", "P_GRID", "Simulation", "StepTable", "simulate"]
MAX_P_CELLS = 128  # prefill cells at most where a kept-whole chunk bends the step (16 attention ranks of 8,192: 1,024)

# measured: peak RSS grows 408-434 B per simulated request (llama-3.1-8b on h100-sxm, ISL 512 / OSL 64, 1e5 -> 4e5
# requests, open loop at 50 requests/s and closed loop at U = 64; ru_maxrss), rounded up: what a run of n needs
BYTES_PER_REQUEST = 512


@dataclass(frozen=True)
class Simulation:
    ttft_s: np.ndarray
    tpot_s: np.ndarray
    e2e_s: np.ndarray
    arrival_s: np.ndarray
    finish_s: np.ndarray
    counted: np.ndarray  # bool: in the statistics window
    steps: int
    preemptions: int
    max_blocks_used: int  # peak KV blocks in use over the steps, each shared prefix block once (<= kv_blocks)
    kv_blocks: int
    max_queue: int
    queue_len: np.ndarray  # waiting requests seen by each request at arrival
    first_token_s: np.ndarray  # absolute time of each request's first token (engine only, no request overhead)
    tokens_out: int  # tokens generated: first tokens plus one per decode per step
    prefill_tokens: int  # prompt (and recomputed) tokens prefilled

    def summary(self, chips: int) -> dict:
        c = self.counted
        t, p, e = self.ttft_s[c], self.tpot_s[c], self.e2e_s[c]
        span = float(np.max(self.finish_s) - np.min(self.arrival_s))
        return {"ttft_s": float(np.mean(t)), "tpot_s": float(np.nanmean(p)), "e2e_s": float(np.mean(e)),
                "ttft_p50_s": float(np.percentile(t, 50)), "ttft_p99_s": float(np.percentile(t, 99)),
                "tpot_p50_s": float(np.nanpercentile(p, 50)), "tpot_p99_s": float(np.nanpercentile(p, 99)),
                "requests_per_s": len(self.ttft_s) / span if span > 0 else None, "sim_steps": self.steps,
                "preemptions": self.preemptions, "max_queue": self.max_queue, "sim_requests": len(self.ttft_s)}

    def goodput(self, ttft_slo, tpot_slo) -> float:
        ok = within_slos(self.ttft_s, self.tpot_s, ttft_slo, tpot_slo)
        span = float(np.max(self.finish_s) - np.min(self.arrival_s))
        return float(np.sum(ok)) / span if span > 0 else 0.0


def within_slos(ttft_s, tpot_s, ttft_slo, tpot_slo) -> np.ndarray:
    """Per request: TTFT within its SLO and TPOT within its own (a request without a TPOT, one token, meets it)."""
    ok = np.ones(len(ttft_s), bool)
    if ttft_slo:
        ok &= ttft_s <= ttft_slo
    if tpot_slo:
        ok &= ~(tpot_s > tpot_slo)
    return ok


def simulate(dep: Deployment, prof: EngineProfile, w: Workload, n_requests: int, *, table: StepTable | None = None,
             kv_blocks: int | None = None) -> Simulation:
    """Run ``n_requests`` of workload ``w`` (module docstring); deterministic for a seed. ``table`` and
    ``kv_blocks`` replace the engine's step times and the KV cache's size (tests, what-ifs)."""
    req = w.requests(n_requests)
    isl, osl = req.isl.astype(np.int64), req.osl.astype(np.int64)
    need0 = prefill_tokens(isl, w.cache_hit).astype(np.int64)
    blk = int(prof.block_size)
    if kv_blocks is None:
        tok = kv_tokens(dep, prof, float(np.ceil(np.mean(isl + osl) / blk) * blk)).tokens
        kv_blocks = int(float(tok) * float(dep.layout.dp) // blk)
    _check_fits(isl, osl, blk, int(kv_blocks))
    max_batch = int(pooled_limits(prof, dep.layout, 0.0, 0.0)[0]) if dep is not None else int(prof.max_batch)
    n_max = int(max(min(max_batch, len(isl), kv_blocks), 1))
    # whole prompts (an engine that does not chunk): the longest fits beside the decodes
    budget = (int(pooled_limits(prof, dep.layout, float(np.max(need0)), float(n_max))[1]) if dep is not None
              else int(step_budget(prof, float(np.max(need0)), float(n_max))))
    if table is None:
        chunk = rank_chunk(dep, prof, float(np.mean(need0)))
        # a chunk kept whole (pipeline, attention-DP) bends t(P) at one chunk: cells no wider than half a chunk there
        cells = P_GRID if chunk is None else max(P_GRID, min(math.ceil(2.0 * budget / float(chunk)), MAX_P_CELLS))
        table = StepTable.for_deployment(dep, n_max, budget, float(np.min(isl)),
                                         float(np.max(isl + osl)),
                                         float(prefill_context(np.mean(isl), w.cache_hit, np.mean(need0))),
                                         p_cells=cells, chunk_tokens=chunk)
    arrival = _first_arrivals(w, req.arrival_s, isl, osl, need0, table, n_max, int(kv_blocks), blk)
    run = _Run(Capacity(prof, budget, max_batch, table, int(kv_blocks)), isl, osl, need0, arrival,
               int(w.concurrency) if w.closed else None)
    run.gate = gate_for(prof, dep.layout if dep is not None else None)  # delayed batching: the engine's counter
    run.loop()
    return _result(run, isl, osl, float(np.asarray(dep.eff.request_overhead_s)) if dep is not None else 0.0)


def _check_fits(isl, osl, blk, kv_blocks) -> None:
    """A request that cannot finish even alone: its last step's KV over the whole cache."""
    need_blocks = -(-(isl + osl - 1) // blk)
    i = int(np.argmax(need_blocks))
    if need_blocks[i] > kv_blocks:
        raise ValueError(f"isl, osl: a request of {int(isl[i])} + {int(osl[i])} tokens needs {int(need_blocks[i])} "
                         f"KV blocks of {blk} tokens; the cache holds {kv_blocks}")


def _first_arrivals(w: Workload, arrival_s, isl, osl, need0, table: StepTable, n_max: int, kv_blocks: int,
                    blk: int) -> list:
    """Arrival times: the open loop's (or trace's); a closed loop's first U at 0 or spread over one lifetime."""
    def running_and_lifetime(first: int) -> tuple[int, float]:
        B = max(min(first, n_max, kv_blocks // math.ceil(float(np.mean(isl + osl)) / blk)), 1)
        return B, _lifetime_s(B, isl, osl, need0, table)

    return first_arrivals(w, arrival_s, running_and_lifetime)


def first_arrivals(w: Workload, arrival_s, running_and_lifetime) -> list:
    """Arrival times: the open loop's (or trace's); a closed loop's first U at t = 0 ("together") or spread evenly
    over U/B lifetimes ("staggered"), (B, lifetime) = ``running_and_lifetime(U)``: the requests the deployment runs
    at once and the seconds each holds its place, so B finish per lifetime and the loop starts near its steady
    state. The later requests' arrivals are set when a client's last request finishes."""
    arrival = np.array(arrival_s, float)
    if w.closed:
        first = min(int(w.concurrency), len(arrival))
        if w.arrivals == "together":
            arrival[:first] = 0.0
        else:
            B, life = running_and_lifetime(first)
            arrival[:first] = np.arange(first) * (life / B)
    return arrival.tolist()


def _lifetime_s(B, isl, osl, need0, table: StepTable) -> float:
    """A request's lifetime in the steady state of B running requests (the analytic model's, on the table):
    L = c + OSL − 1 steps (c = ceil(I / (N − B)) prefill chunks), n = B·(OSL − 1)/L decodes and P = B·I/L prefill
    tokens a step, lifetime = c·t(n, min(I, N − n)) + (OSL − 1)·t(n, P). U clients finish B per lifetime, so
    their first arrivals spread over U/B lifetimes start the loop in its steady state; over a shorter time (the
    pure-decode lifetime, without the prefill share) the first prompts queue behind each other and, with fixed
    lengths, stay in lockstep convoys for the whole run."""
    I, O, N = float(np.mean(need0)), float(np.mean(osl)), table.budget
    chunks = math.ceil(I / max(N - B, 1.0))
    L = chunks + O - 1.0
    n = int(round(B * (O - 1.0) / L))
    ctx = float(np.mean(isl + osl / 2))
    return chunks * table(n, ctx, min(I, max(N - n, 0.0))) + (O - 1.0) * table(n, ctx, B * I / L)


def request_times(arrival, first, finish, osl, o_req: float, closed: bool, U: int):
    """(TTFT, TPOT, end-to-end, counted) per request from the absolute times of its arrival, first token and last:
    TTFT = first − arrival + o_req, e2e = finish − arrival + o_req, TPOT = (e2e − TTFT)/(OSL − 1) (NaN at OSL 1);
    counted: a closed loop's statistics window (module docstring)."""
    arrival, first, finish = (np.array(x, float) for x in (arrival, first, finish))
    ttft, e2e = first - arrival + o_req, finish - arrival + o_req
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(osl > 1, (e2e - ttft) / (osl - 1), np.nan)
    N = len(arrival)
    counted = np.ones(N, bool)
    if closed and N > 3 * U:
        counted[:U] = False
        counted[N - U:] = False
    return ttft, tpot, e2e, counted


def _result(run: _Run, isl, osl, o_req: float) -> Simulation:
    ttft, tpot, e2e, counted = request_times(run.arrival, run.first, run.finish, osl, o_req, run.closed, run.U)
    return Simulation(ttft, tpot, e2e, np.array(run.arrival, float), np.array(run.finish, float), counted, run.S,
                      run.preemptions, run.max_used, run.kv, run.max_q, np.array(run.qlen, np.int64),
                      np.array(run.first, float), run.tokens_out, run.prefilled_tokens)
