"""The iteration-level simulator for sessions: serving/simulator.py's scheduler loop, with turns released by the turns
they follow and each prompt's prefix looked up in the KV tiers when it arrives.

On top of the simulator's steps (its docstring), per request r of a SessionPlan on one replica:
  release   r arrives ``gap_s`` (think time) after the last of its predecessors finishes (the agent's previous turn;
            a parent's turn after its sub-agents, fork-join); a session's first turn at its start time (open loop)
            or, closed loop, when one of the C session slots frees (its session's last turn finished)
  tokenize  the engine's API server first tokenizes the prompt: ISL·s_tok seconds on one worker, first come first
            served (EngineProfile.tokenize_s_per_token, catalog/engines [frontend]); the lookup and loads follow
  lookup    on arrival its prefix chain is looked up in the tiers (kv_hbm_pool.SharedPrefixCache: HBM's capacity is
            what the running requests leave of the KV pool at that moment, the blocks they share counted once);
            what it hits is referenced (pinned) until it finishes; r computes I = ISL − hit tokens
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
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, replace

import numpy as np

from tokenomy.core.deployment import Deployment
from tokenomy.serving.kv_cache_tiers import SYSTEM, TierStack
from tokenomy.serving.kv_hbm_pool import SharedPrefixCache
from tokenomy.serving.scheduler import EngineProfile, pooled_limits, rank_chunk
from tokenomy.serving.sessions import SessionPlan
from tokenomy.serving.sim_table import P_GRID, StepTable
from tokenomy.serving.simulator import EPS_S, Capacity, Simulation, _Run, _result


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


def prefill_s_per_token(table: StepTable, ctx: float) -> float:
    """The engine's prefill seconds per token at context ``ctx``: a full-budget prefill step over its tokens."""
    return table(0, ctx, table.budget) / table.budget


def step_table(dep: Deployment, prof: EngineProfile, plan: SessionPlan, n_max: int, budget: int) -> StepTable:
    isl, osl = plan.isl.astype(float), plan.osl.astype(float)
    chunk = rank_chunk(dep, prof, float(np.mean(new_tokens(plan))))
    cells = P_GRID if chunk is None else max(P_GRID, min(math.ceil(2.0 * budget / float(chunk)), 128))
    tab = StepTable.for_deployment(dep, n_max, budget, float(np.min(isl)), float(np.max(isl + osl)),
                                   prefill_context_tokens(plan), p_cells=cells, chunk_tokens=chunk)
    return StepTable(_extrapolated(tab.t), tab.budget, tab.c_lo, tab.dc)


def new_tokens(plan: SessionPlan) -> np.ndarray:
    """Per request: the tokens it brings, u = ISL − (system prompt + forks above it + its agent's context before
    it), the prompt tokens it computes when everything before them is cached (at least 1)."""
    return np.maximum(plan.isl - _base_tokens(plan) - plan.ctx_before, 1).astype(float)


def prefill_context_tokens(plan: SessionPlan) -> float:
    """The step table's prefill context (the positions a computed prompt token attends): a turn computes its new
    tokens u and finds the rest cached, so they attend ISL − u/2 on average (workload.prefill_context); over the
    plan, weighted by the tokens each turn computes, Σ u·(ISL − u/2) / Σ u. Counting the system prompt and the
    fork as computed ((ISL − ctx)/2 + ctx) put an agentic plan's at 12.5k for 17.8k tokens (the simulator's own
    hits give 17.9k: tests/serving/test_session_solve.py) and its TTFT ~10% under the analytic steady state's."""
    u, isl = new_tokens(plan), plan.isl.astype(float)
    return float(np.sum(u * (isl - u / 2.0)) / np.sum(u))


def _extrapolated(t: np.ndarray) -> np.ndarray:
    """The grid's cells of n decodes at a context whose KV would overflow the pool (the engine answers inf there)
    continued linearly in context from the last two finite cells: sessions mix long and short contexts, so n
    decodes at their MEAN context can sit beside such a cell, and interpolating into inf gives NaN seconds.
    Then the rows of n decodes that overflow at every context — they still run when they share prefixes (the block
    pool counts a shared block once; the engine's pass does not) — continued linearly in n from the last two
    finite rows (a decode step's KV read grows linearly in n); else an infinite step and its NaN slope stop the
    clock (an open loop of agentic sessions waited forever)."""
    return _continued(_continued(np.array(t, float), axis=2), axis=0)


def _continued(t: np.ndarray, axis: int) -> np.ndarray:
    """Non-finite cells along ``axis`` replaced by the linear continuation of the two cells before them (the one
    before, where only one is; the first cell is left as it is)."""
    v = np.moveaxis(t, axis, 0)  # a view: writing it writes t
    for c in range(1, v.shape[0]):
        bad = ~np.isfinite(v[c])
        if not bad.any():
            continue
        slope = 0.0
        if c >= 2:
            with np.errstate(invalid="ignore"):
                slope = np.nan_to_num(v[c - 1] - v[c - 2], nan=0.0, posinf=0.0, neginf=0.0)
        v[c] = np.where(bad, v[c - 1] + slope, v[c])
    return t


def simulate_sessions(dep: Deployment, prof: EngineProfile, plan: SessionPlan, stack: TierStack, kv_blocks: int,
                      concurrency: int | None = None, table: StepTable | None = None,
                      stagger_s: float = 0.0) -> SessionSimulation:
    """Run the plan on one replica (module docstring). ``concurrency``: session slots (closed loop), the first C
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


class _SessionRun(_Run):
    """The simulator's run (serving/simulator._Run) with session release, tier lookups and loads (module docstring)."""

    def __init__(self, cap: Capacity, isl, osl, plan: SessionPlan, stack: TierStack, concurrency, stagger_s=0.0):
        N = len(isl)
        arrival = [math.nan] * N
        super().__init__(cap, isl, osl, isl.copy(), arrival, None)
        self.plan, self.cache, self.stack = plan, SharedPrefixCache(stack), stack
        self.tok_s, self.tok_free = float(cap.prof.tokenize_s_per_token), 0.0  # the tokenizer: s/token, free from
        self.shared = [0.0] * N  # tokens of r's prompt in shared (pinned) objects: its blocks hold the rest
        self.credited = [0.0] * N  # shared tokens a decoding r's ledger blocks count twice (taken off in free())
        self.credit = 0.0
        # extra = int((credit − pinned tokens) // b), kept by _recount on each change: free() counts the blocks free
        # or in HBM's free LRU, the running requests' blocks less what they share, less the pinned objects (each once)
        self.chain_of = [None] * N  # r's prefix chain, from its lookup
        self.agent_chain = _agent_chains(plan)  # per agent: the system prompt and its ancestors' objects
        self.ctx_before = [int(c) for c in plan.ctx_before]
        self.waits, self.succ, self.gap = plan.waits.tolist(), plan.succ, plan.gap_s.tolist()
        self.agent = plan.agent.tolist()
        self.own_after = (plan.isl - _base_tokens(plan) + plan.osl).tolist()  # its object after the turn
        self.hit, self.ready, self.looked_up = [0.0] * N, [math.nan] * N, [False] * N
        self.per_tier = [None] * N
        self.free_at = [0.0] * len(stack.levels)
        self.read_s = [lv.read_s_per_token for lv in stack.levels]
        self.lat = [lv.latency_s for lv in stack.levels]
        self.layerwise = stack.load == "layerwise-overlapped"
        roots = [r for r in range(N) if plan.waits[r] == 0]
        self.pending = []
        if concurrency is None:
            for r in roots:
                self._release(r, float(plan.start_s[r]) if np.isfinite(plan.start_s[r]) else 0.0)
        else:
            C = int(concurrency)
            self.queue_roots = roots[C:][::-1]
            for i, r in enumerate(roots[:C]):
                self._release(r, i * stagger_s / C)
        self.warm_s = (min(int(concurrency), len(roots)) - 1) * stagger_s / int(concurrency) if concurrency else 0.0
        self.last_root_s = math.inf
        self.closed_sessions = concurrency is not None
        self.last = plan.last_of_session.tolist()

    def _release(self, r: int, t: float) -> None:
        self.arrival[r] = t
        heapq.heappush(self.pending, (t, r))

    def _recount(self) -> None:
        """``extra`` after the shared credit or the pinned objects changed (free())."""
        self.extra = int((self.credit - self.cache.pinned_tokens) // self.blk)

    def blocks_to_admit(self, r: int) -> int:
        """r's blocks beyond the cached objects it references (vLLM allocates only the uncached part), plus the
        objects it will reference that now sit in the free LRU (free() counts them free until r pins them)."""
        own = super().blocks_to_admit(r) - int(self.shared[r] // self.blk)
        return max(own, 1) + int(-(-self.cache.unpinned_wanted(r) // self.blk))

    def arrivals(self) -> None:
        pending, waiting, due = self.pending, self.waiting, self.now + EPS_S
        while pending and pending[0][0] <= due:
            t, r = heapq.heappop(pending)
            if not self.looked_up[r]:
                self.looked_up[r] = True
                ready = self.lookup(r, t)
                self.ready[r] = ready
                if ready > t + EPS_S:
                    heapq.heappush(pending, (ready, r))
                    continue
            self.qlen[r] = len(waiting)
            waiting.append(r)

    def lookup(self, r: int, t: float) -> float:
        """r's prefix from the tiers: its computed tokens, and when its loads finish."""
        cache, plan = self.cache, self.plan
        if self.tok_s > 0:  # the tokenizer's FCFS queue: the engine sees r when its tokens are ready
            t = self.tok_free = max(t, self.tok_free) + float(self.isl[r]) * self.tok_s
        cache.set_hbm_tokens(self.free() * self.blk)
        a = self.agent[r]
        chain = self.chain_of[r] = self.agent_chain[a] + [(a, self.ctx_before[r])]  # [(SYSTEM, ·)] + plan.chain(r)
        hit, per = cache.lookup_for(r, chain, float(self.isl[r]))
        self.shared[r] = float(sum(per))
        self.hit[r] = hit
        self.per_tier[r] = per
        self.need0[r] = self.need[r] = max(int(self.isl[r] - hit), 1)
        done = t
        for j in range(1, len(per)):
            if per[j] > 0:
                start = max(t, self.free_at[j])
                self.free_at[j] = start + self.lat[j] + per[j] * self.read_s[j]
                done = max(done, self.free_at[j])
        if self.layerwise and done > t:
            done = max(t, done - self.need[r] * self.stack.prefill_s_per_token)
        return done

    def prefilled(self, r: int) -> None:
        """r's prompt is computed: its objects are cached and shared (module docstring, register)."""
        chain = list(self.chain_of[r])  # its lookup's chain, its own context grown by this turn's input
        chain[-1] = (chain[-1][0], float(self.own_after[r] - self.osl[r]))
        self.cache.register(r, chain)
        self._recount()
        self.shared[r] = float(self.isl[r])
        super().prefilled(r)
        if r in self.running:  # decoding: its ledger blocks include the shared prompt
            self.credited[r] = self.shared[r]
            self.credit += self.shared[r]
            self._recount()

    def admit(self) -> None:
        if not self.waiting:  # nothing to admit (the common step): skip the scheduler's admission
            return
        n0 = self.serials
        super().admit()
        k = self.serials - n0
        if k:  # the requests admitted now (the last k of the running set) reference what their lookups read
            for r in list(self.running)[-k:]:
                self.cache.pin_wanted(r)
            self._recount()

    def preempt(self, v: int) -> int:
        self.credit -= self.credited[v]
        self.credited[v] = 0.0
        self.cache.unref(v)
        self._recount()
        return super().preempt(v)

    def retire(self, r: int) -> None:
        del self.running[r]
        self.reserved -= self.full[r] if self.reserve else 0
        self.finish[r] = self.now
        self.finished += 1
        self.credit -= self.credited[r]
        self.credited[r] = 0.0
        cache = self.cache
        cache.release(r, self.agent[r], float(self.own_after[r]))
        self._recount()
        cache.set_hbm_tokens(self.free() * self.blk)
        for s in self.succ[r]:
            self.waits[s] -= 1
            if self.waits[s] == 0:
                self._release(s, self.now + self.gap[s])
        if self.closed_sessions and self.last[r] and self.queue_roots:
            self._release(self.queue_roots.pop(), self.now)
            if not self.queue_roots:
                self.last_root_s = self.now


def _agent_chains(plan: SessionPlan) -> list[list]:
    """Per agent a: [(SYSTEM, system tokens)] + each ancestor's (object, tokens up to its child's fork), root first —
    plan.chain(r) for a request of a, less a's own object, built once per agent."""
    parent, fork = [int(p) for p in plan.parent], [int(f) for f in plan.fork_tokens]
    out = []
    for a in range(len(parent)):
        up = []
        while parent[a] >= 0:
            up.append((parent[a], fork[a]))
            a = parent[a]
        out.append([(SYSTEM, plan.system_tokens)] + up[::-1])
    return out


def _base_tokens(plan: SessionPlan) -> np.ndarray:
    """Per request: the tokens before its agent's own object (system prompt + the forks above it)."""
    base = np.zeros(len(plan.parent), np.int64)
    for a in range(len(plan.parent)):
        p = plan.parent[a]
        base[a] = (base[p] + plan.fork_tokens[a]) if p >= 0 else 0
    return plan.system_tokens + base[plan.agent]
