"""The session simulator's run (serving/sim_sessions.py's docstring: release, tokenize, lookup, load, register,
store): serving/sim_run._Run with turns released by the turns they follow and each prompt's prefix looked up in the
KV tiers (kv_hbm_pool.SharedPrefixCache) when it arrives."""

from __future__ import annotations

import heapq
import math

import numpy as np

from tokenomy.serving.kv_cache_tiers import SYSTEM, TierStack
from tokenomy.serving.kv_hbm_pool import SharedPrefixCache
from tokenomy.serving.sessions import SessionPlan
from tokenomy.serving.sim_run import EPS_S, Capacity, _Run
from tokenomy.serving.sim_session_table import base_tokens


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
        self.own_after = (plan.isl - base_tokens(plan) + plan.osl).tolist()  # its object after the turn
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
        self.shared[r] = float(self.isl[r])
        super().prefilled(r)  # (reads no free blocks before it retires r, and retire recounts them first)
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
