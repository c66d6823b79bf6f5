"""The session simulator's run (serving/sim_sessions.py's docstring: release, tokenize, lookup, load, register,
store): serving/sim_run._Run whose hooks (sim_loop.run_loop's events) release turns after the turns they follow and
look each prompt's prefix up in the KV tiers (kv_hbm_pool.SharedPrefixCache) when it arrives."""

from __future__ import annotations

import heapq
import math

import numpy as np

from tokenomy.serving.kv_cache_tiers import SYSTEM, TierStack
from tokenomy.serving.kv_hbm_pool import SharedPrefixCache
from tokenomy.serving.sessions import SessionPlan
from tokenomy.serving.sim_run import Capacity, _Run
from tokenomy.serving.sim_session_table import base_tokens


class _SessionRun(_Run):
    """The simulator's run (sim_run._Run) with session release, tier lookups and loads (module docstring): its own
    ``hooks``, the events sim_loop.run_loop calls. ``extra``: the blocks the pool ledger counts twice, int((credit −
    pinned tokens) // b), kept on each change: the loop's free count is the blocks free or in HBM's free
    LRU, the running requests' blocks less what they share, less the pinned objects (each once). ``credit``: the
    decoders' prompts (in pinned objects) and the prefilling requests' ``taken``, the blocks their admission took
    out of the free LRU (in their ledger blocks and, pinned, in the objects: b·blocks tokens, so they cancel)."""

    def __init__(self, cap: Capacity, isl, osl, plan: SessionPlan, stack: TierStack, concurrency, stagger_s=0.0):
        N = len(isl)
        arrival = [math.nan] * N
        super().__init__(cap, isl, osl, isl.copy(), arrival, None)
        self.hooks = self
        self.plan, self.cache, self.stack = plan, SharedPrefixCache(stack), stack
        self.tok_s, self.tok_free = float(cap.prof.tokenize_s_per_token), 0.0  # the tokenizer: s/token, free from
        self.shared = [0.0] * N  # tokens of r's prompt in shared (pinned) objects: its blocks hold the rest
        self.credited = [0.0] * N  # shared tokens a decoding r's ledger blocks count twice
        self.credit, self.extra = 0.0, 0
        self.taken = [0] * N  # tokens (whole blocks) a prefilling r pinned out of the free LRU (ledger and pins count them)
        self.chain_of = [None] * N  # r's prefix chain, from its lookup
        self.agent_chain = _agent_chains(plan)  # per agent: the system prompt and its ancestors' objects
        self.ctx_before = [int(c) for c in plan.ctx_before]
        self.waits, self.succ, self.gap = plan.waits.tolist(), plan.succ, plan.gap_s.tolist()
        self.agent = plan.agent.tolist()
        self.own_after = (plan.isl - base_tokens(plan) + plan.osl).tolist()  # its object after the turn
        self.hit, self.ready, self.looked_up = [0.0] * N, [math.nan] * N, [False] * N
        self.per_tier = [None] * N
        self.found = [None] * N  # r's lookup (hit, per tier) until its admission looks again (admit_blocks)
        self.owed = {}  # r -> [(tier, tokens)] its admission reads below beyond what its arrival read
        self.free_at = [0.0] * len(stack.levels)
        self.read_s = [lv.read_s_per_token for lv in stack.levels]
        self.lat = [lv.latency_s for lv in stack.levels]
        self.layerwise = stack.load == "layerwise-overlapped"
        roots = [r for r in range(N) if plan.waits[r] == 0]
        if concurrency is None:
            for r in roots:
                self._release(r, float(plan.start_s[r]) if np.isfinite(plan.start_s[r]) else 0.0)
        else:
            U = int(concurrency)
            self.queue_roots = roots[U:][::-1]
            for i, r in enumerate(roots[:U]):
                self._release(r, i * stagger_s / U)
        self.warm_s = (min(int(concurrency), len(roots)) - 1) * stagger_s / int(concurrency) if concurrency else 0.0
        self.last_root_s = math.inf
        self.closed_sessions = concurrency is not None
        self.last = plan.last_of_session.tolist()

    def _release(self, r: int, t: float) -> None:
        self.arrival[r] = t
        heapq.heappush(self.pending, (t, r))

    # -- the loop's events (sim_loop.run_loop) ------------------------------------------------------------------
    def arrived(self, r: int, t: float, base_free: int) -> float:
        """r arrives at t (the loop calls this once a request, then ``looked_up[r]``): its prefix is looked up in the
        tiers (``lookup``; HBM holds what is free now: ``base_free``, the loop's free blocks, plus ``extra``) and its
        tokens to compute set; it joins the queue when its loads finish (returned)."""
        self.looked_up[r] = True
        cache = self.cache
        isl = self.isl[r]
        if self.tok_s > 0:  # the tokenizer's FCFS queue: the engine sees r when its tokens are ready
            t = self.tok_free = max(t, self.tok_free) + isl * self.tok_s
        cache.set_hbm_tokens((base_free + self.extra) * self.blk)
        a = self.agent[r]
        chain = self.chain_of[r] = self.agent_chain[a] + [(a, self.ctx_before[r])]  # [(SYSTEM, ·)] + plan.chain(r)
        found = self.found[r] = cache.lookup_for(r, chain, float(isl))
        hit, per = found
        self.shared[r] = float(sum(per))
        self.hit[r], self.per_tier[r] = hit, per
        need = int(isl - hit)
        self.need0[r] = self.need[r] = need if need > 1 else 1
        done = t
        if len(per) > 1:
            free_at, lat, read_s = self.free_at, self.lat, self.read_s
            for j in range(1, len(per)):
                if per[j] > 0:
                    start = t if t > free_at[j] else free_at[j]
                    end = free_at[j] = start + lat[j] + per[j] * read_s[j]
                    if end > done:
                        done = end
            if self.layerwise and done > t:
                done = max(t, done - self.need[r] * self.stack.prefill_s_per_token)
        self.ready[r] = done
        return done

    def admit_blocks(self, r: int, blocks: int) -> int:
        """r's ``blocks`` less the cached objects it references (vLLM allocates only the uncached part), plus the
        objects it will reference that now sit in the free LRU (counted free until r pins them). vLLM looks a
        waiting request's prefix up when it schedules it (vllm/v1/core/sched/scheduler.py, Scheduler.schedule:
        get_computed_blocks), so what its lookup on arrival found and the tiers lost since is computed: hit, need
        and the HBM share it references set from what they hold now (``found``: the lookup's, kept till then)."""
        found, cache = self.found[r], self.cache
        if found is not None:
            hit, per = found
            hbm, below = cache.held_now(self.chain_of[r])
            below_tokens = sum(below)
            hit_now = hbm + below_tokens
            if hit_now > hit:
                hit_now = hit
            shared = hbm if hbm < hit_now else hit_now
            self.hit[r], self.shared[r] = hit_now, shared
            need = int(self.isl[r] - hit_now)
            self.need0[r] = self.need[r] = need if need > 1 else 1
            lower = hit_now - shared  # from below: what its arrival read and, past that, read now on the channel
            tier, owed, d = [hit_now - lower], [], below_tokens if below_tokens > 1.0 else 1.0
            for j in range(1, len(below)):
                b = below[j]
                tier.append(lower * b / d)
                if b > per[j]:
                    owed.append((j, b - per[j]))
            self.per_tier[r], self.owed[r] = tier, owed
        else:  # preempted, admitted again: what it shared is looked again, the part HBM lost since recomputed
            shared = self._readmit(r)
        own = blocks - int(shared // self.blk)
        taken = int(-(-cache.unpinned_wanted(r) // self.blk))
        self.taken[r] = taken * self.blk
        return (own if own > 1 else 1) + taken

    def _readmit(self, r: int) -> float:
        """A preempted r's shared tokens now: those of its chain (as registered, if its prompt was computed) HBM
        still holds; the rest, evicted since it let go of them, is recomputed (``need`` grows by it; vLLM's
        scheduler looks a preempted request's prefix up again: Scheduler.schedule, get_computed_blocks). A decoder's
        prompt is all registered (shared = ISL), so its first admission's own part ``need0`` is in ``had`` already:
        it recomputes ISL − now and its generated tokens, at least one token."""
        had = self.shared[r]
        hbm = self.cache.held_now(self.chain_of[r])[0]
        now = hbm if hbm < had else had
        g = self.gen[r]
        n = (0 if had >= self.isl[r] else self.need0[r]) + int(had - now)
        self.need[r] = (n if n > 1 else 1) + (g - 1 if g > 1 else 0)
        return now

    def admitted(self, rs: list[int], now: float) -> int:
        """The requests admitted at ``now`` reference what their lookups read, and read what they found below beyond
        their arrival's read (``owed``, on each tier's channel from ``now``); ``extra`` recounted (class docstring)."""
        cache = self.cache
        for r in rs:
            cache.pin_wanted(r)
            self.credit += self.taken[r]
            self.found[r] = None
            for j, tokens in self.owed.pop(r, ()):  # found below on admission beyond its arrival's read: read now
                start = now if now > self.free_at[j] else self.free_at[j]
                self.free_at[j] = start + self.lat[j] + tokens * self.read_s[j]
        self.extra = int((self.credit - cache.pinned_tokens) // self.blk)
        return self.extra

    def computed(self, r: int, decodes: bool) -> int:
        """r's prompt is computed: its objects are cached and shared (module docstring, register); a decoding r's
        ledger blocks include the shared prompt (``decodes``: r goes on to decode, not done at its first token)."""
        chain = list(self.chain_of[r])  # its lookup's chain, its own context grown by this turn's input
        chain[-1] = (chain[-1][0], float(self.own_after[r] - self.osl[r]))
        self.chain_of[r] = chain  # (what a preemption's re-admission looks up again)
        self.cache.register(r, chain)
        self.credit -= self.taken[r]  # its prefill's blocks are freed
        self.taken[r] = 0
        self.shared[r] = float(self.isl[r])
        if decodes:
            self.credited[r] = self.shared[r]
            self.credit += self.shared[r]
        self.extra = int((self.credit - self.cache.pinned_tokens) // self.blk)
        return self.extra

    def preempted(self, v: int) -> int:
        """v lets go of its objects and its credit until admitted again."""
        self.credit -= self.credited[v] + self.taken[v]
        self.credited[v], self.taken[v] = 0.0, 0
        self.cache.unref(v)
        self.extra = int((self.credit - self.cache.pinned_tokens) // self.blk)
        return self.extra

    def retired(self, r: int, now: float, base_free: int) -> int:
        """r is done: its object stored (module docstring, store), its references released, HBM's capacity set to
        what is free now, and the turns that waited for it released after their think time."""
        self.credit -= self.credited[r]
        self.credited[r] = 0.0
        cache = self.cache
        cache.release(r, self.agent[r], float(self.own_after[r]))
        extra = self.extra = int((self.credit - cache.pinned_tokens) // self.blk)
        cache.set_hbm_tokens((base_free + extra) * self.blk)
        waits, arrival = self.waits, self.arrival
        for s in self.succ[r]:
            waits[s] -= 1
            if waits[s] == 0:  # (_release)
                t = arrival[s] = now + self.gap[s]
                heapq.heappush(self.pending, (t, s))
        if self.closed_sessions and self.last[r] and self.queue_roots:
            self._release(self.queue_roots.pop(), now)
            if not self.queue_roots:
                self.last_root_s = now
        return extra


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
