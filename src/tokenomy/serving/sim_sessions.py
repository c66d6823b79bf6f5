"""The iteration-level simulator for sessions: serving/simulator.py's scheduler loop, with turns released by the turns
they follow and each prompt's prefix looked up in the KV tiers when it arrives.

On top of the simulator's steps (its docstring), per request r of a SessionPlan on one replica:
  release   r arrives ``gap_s`` (think time) after the last of its predecessors finishes (the agent's previous turn;
            a parent's turn after its sub-agents, fork-join); a session's first turn at its start time (open loop)
            or, closed loop, when one of the U session slots frees (its session's last turn finished)
  tokenize  the engine's API server first tokenizes the prompt: ISL·s_tok seconds on one worker, first come first
            served (EngineProfile.tokenize_s_per_token, catalog/engines [frontend]); the lookup and loads follow
  lookup    on arrival its prefix chain is looked up in the tiers (kv_hbm_pool.SharedPrefixCache: HBM's capacity is
            what the running requests leave of the KV pool at that moment, the blocks they share counted once),
            touching nothing; the scheduler looks again when it admits r (vLLM's lookup is at scheduling:
            sim_session_run.admit_blocks), what the tiers lost meanwhile is computed and what it hits is referenced
            (pinned) until it finishes; r computes I = ISL − hit tokens (a preempted r, admitted again, looks again:
            what HBM evicted since it let go is recomputed, sim_session_run._readmit)
  load      tokens found below HBM are read over their tier's channel (one per tier and replica: DRAM over the chips'
            host links, NVMe over the node's drives), first come first served, so concurrent loads queue behind each
            other: finish_j = max(now, free_j) + latency_j + h_j·s_j. "before-prefill": r joins the scheduler's
            queue when its loads finish; "layerwise-overlapped": when they finish less the prefill seconds of its
            own I tokens (the loads hide under its layers' compute, I·s_prefill). TTFT counts from arrival.
  register  when r's prefill ends its prompt's objects (system prompt, the forks above it, its own context) are
            cached in HBM and shared: a request arriving after that hits them, one arriving during it misses
  store     when r finishes, its agent's object (its context after the turn) joins HBM's free LRU (and, write-
            through, every lower tier); HBM evicts the least recent object tail first (kv_hbm_pool).
PCIe is full duplex: the stores (device to host) do not slow the loads (host to device); the decode's own KV traffic
stays in HBM. The NVMe and DRAM channels are the replica's share of the node (chips per replica / chips per node).
The run is sim_session_run.py's ``_SessionRun``, its step table sim_session_table.py's; this module sets a run up
and reads its times and hits.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from tokenomy.core.deployment import Deployment
from tokenomy.serving.kv_cache_tiers import TierStack
from tokenomy.serving.batch_wait_gate import gate_for
from tokenomy.serving.scheduler import EngineProfile, pooled_limits
from tokenomy.serving.sessions import SessionPlan
from tokenomy.serving.sim_run import Capacity
from tokenomy.serving.sim_session_run import _SessionRun
from tokenomy.serving.sim_session_table import (  # noqa: F401  (re-exported: the step table's callers import it here)
    _extrapolated, prefill_context_tokens, prefill_s_per_token, step_table)
from tokenomy.serving.sim_table import StepTable
from tokenomy.serving.simulator import Simulation, _result


@dataclass(frozen=True)
class SessionSimulation:
    sim: Simulation
    hit_tokens: np.ndarray  # per request
    load_wait_s: np.ndarray  # per request: arrival to its loads done (0 without a lower-tier read)
    hit_rate: float  # hit tokens / input tokens
    hit_by_tier: dict  # tier -> share of input tokens served from it
    skipped_share: float  # share of input tokens found below HBM but recomputed (the rule)
    isl: np.ndarray

    def summary(self, chips: int) -> dict:
        out = self.sim.summary(chips)
        out.update({"hit_rate": self.hit_rate, "load_wait_s": float(np.mean(self.load_wait_s[self.sim.counted])),
                    **{f"hit_{k}": v for k, v in self.hit_by_tier.items()}})
        return out


def simulate_sessions(dep: Deployment, prof: EngineProfile, plan: SessionPlan, stack: TierStack, kv_blocks: int,
                      concurrency: int | None = None, table: StepTable | None = None,
                      stagger_s: float = 0.0) -> SessionSimulation:
    """Run the plan on one replica (module docstring). ``concurrency``: session slots (closed loop), the first U
    sessions started evenly over ``stagger_s`` (one session's duration puts them at random phases, as in the steady
    state); statistics from the requests arriving after the last of those starts and before the last session
    starts (warm-up and drain left out). None: the plan's own start times, every request counted. ``kv_blocks``:
    the replica's KV pool."""
    isl, osl = plan.isl.astype(np.int64), plan.osl.astype(np.int64)
    blk = int(prof.block_size)
    need = -(-(isl + osl - 1) // blk)
    if int(np.max(need)) > kv_blocks:
        i = int(np.argmax(need))
        raise ValueError(f"workload: a turn of {int(isl[i])} + {int(osl[i])} tokens needs {int(need[i])} KV blocks "
                         f"of {blk} tokens; the replica's cache holds {kv_blocks}")
    max_batch = int(pooled_limits(prof, dep.layout, 0.0, 0.0)[0])
    n_max = int(max(min(max_batch, len(isl), kv_blocks), 1))
    budget = int(pooled_limits(prof, dep.layout, float(np.max(isl)), float(n_max))[1])
    if table is None:
        table = step_table(dep, prof, plan, n_max, budget)
    if stack.prefill_s_per_token <= 0:
        stack = replace(stack, prefill_s_per_token=prefill_s_per_token(table, float(np.mean(isl))))
    run = _SessionRun(Capacity(prof, budget, max_batch, table, int(kv_blocks)), isl, osl, plan, stack, concurrency,
                      stagger_s)
    run.gate = gate_for(prof, dep.layout)  # TensorRT-LLM's delayed batching: the engine's counter, step by step
    run.loop()
    res = _result(run, isl, osl, float(np.asarray(dep.eff.request_overhead_s)))
    arrival = np.array(run.arrival, float)
    counted = np.ones(len(isl), bool)
    if concurrency is not None and run.last_root_s > run.warm_s:
        counted = (arrival >= run.warm_s) & (arrival < run.last_root_s)
    res = replace(res, counted=counted)
    hit, per = np.array(run.hit, float), np.array(run.per_tier, float)
    wait = np.maximum(np.array(run.ready, float) - arrival, 0.0)
    n_in = float(np.sum(isl[counted]))
    by_tier = {lv.tier: float(np.sum(per[counted, j])) / n_in for j, lv in enumerate(stack.levels)}
    return SessionSimulation(res, hit, wait, float(np.sum(hit[counted])) / n_in, by_tier,
                             run.cache.skipped / max(run.cache.looked, 1.0), isl)
