"""HBM's prefix cache as vLLM's block pool keeps it: shared blocks, hittable once computed, freed tail first.

kv_cache_tiers.TieredCache holds whole objects (an agent's context, the system prompt) in an LRU per tier. vLLM's V1
KV cache manager (vllm/v1/core/block_pool.py, single_type_kv_cache_manager.py) differs in three ways this subclass
models, each from its source:
  shared     a request that hits cached blocks references them (ref_cnt + 1) instead of copying them, so requests
             running on one prefix hold it once; a referenced object is out of the free LRU and cannot be evicted
             (``pinned``, with a reference count per object). vLLM looks the prefix up when it schedules the
             request: what a request read on arrival (``lookup_for``, touching nothing) is looked up again when it
             is admitted (``held_now``) and pinned (``pin_wanted``); a preempted request lets go of its objects
             until admitted again
  computed   a request's prompt blocks are cached (hashed) as they are computed: its prompt is hittable once its
             prefill ends (``register``), not when the request finishes; a request arriving during that prefill
             misses it
  tail first ``free``: "we free the blocks in reverse order so that the tail blocks are evicted first", and the free
             queue evicts least recently freed first: an object leaving HBM loses its tail before its head, so a
             later request still hits the head (``_evict`` trims the least recent object from its end; the objects
             a request releases go to the free LRU deepest first, the system prompt last)
The pool accounting (serving/sim_sessions): a running request's blocks minus the tokens it shares, plus the pinned
objects once, plus the free LRU fill the replica's KV blocks. Only under write-through stores (every catalog
policy): an on-evict tier would need the trimmed tail moved down, which objects do not model.
"""

from __future__ import annotations

from tokenomy.serving.kv_cache_tiers import SYSTEM, TieredCache, TierStack


class SharedPrefixCache(TieredCache):
    """TieredCache with vLLM's HBM pool behaviour (module docstring). ``pinned``: object -> tokens of the objects
    referenced by requests; ``refs``: object -> references; ``held_by``: request -> the objects it references.
    Every count is a whole number of tokens (a float adding whole numbers is exact), so the ledger is the same
    whatever order the session simulator's events add to it."""

    def __init__(self, stack: TierStack):
        super().__init__(stack)
        self.pinned: dict[int, float] = {}
        self.refs: dict[int, int] = {}
        self.held_by: dict[int, list[int]] = {}
        self.wants: dict[int, list[int]] = {}  # request -> the objects its lookup read, pinned at admission
        self.pinned_tokens = 0.0
        self.tail_first = stack.store == "write-through"
        # the rule's terms per tier (TierStack.worth_reading), read per segment
        self._lat = [lv.latency_s for lv in stack.levels]
        self._read = [lv.read_s_per_token for lv in stack.levels]

    # -- lookups ---------------------------------------------------------------------------------------------------
    def lookup_for(self, r: int, chain: list[tuple[int, float]], isl: float) -> tuple[float, list[float]]:
        """TieredCache.lookup on behalf of request r, with the pool's reads: each segment from ``_held``'s tier;
        what r reads is wanted by it (pinned from its admission, ``pin_wanted``, until ``release(r)``). Nothing is
        touched: vLLM looks a prefix up, and takes its blocks out of the free queue, when it schedules the request
        (sim_session_run.admit_blocks looks again then: ``held_now``); the reads below HBM only time the loads.
        A segment pinned whole, the common case, is read without a call."""
        wants = self.wants[r] = []
        lru = self.lru
        per = [0.0] * len(lru)
        hit = 0.0
        pinned, hbm, s_pre = self.pinned, lru[0], self.stack.prefill_s_per_token
        for key, need in chain:
            if need <= 0:
                continue
            t = pinned.get(key)
            if t >= need if t is not None else hbm.get(key, 0.0) >= need:  # whole pinned or in the free LRU
                per[0] += need
                hit += need
                wants.append(key)
                continue
            j, got, _ = self._held(key, need)
            # the rule (TierStack.worth_reading): HBM is always worth reading
            if j != 0 and (j < 0 or not self._lat[j] + got * self._read[j] < got * s_pre):
                if j > 0:
                    self.skipped += got
                break
            per[j] += got
            hit += got
            wants.append(key)
            if got < need:
                break
        self.looked += isl  # TieredCache._counted, inline
        hits = self.hits
        for j, t in enumerate(per):
            hits[j] += t
        return min(hit, max(isl - 1.0, 0.0)), per

    def held_now(self, chain: list[tuple[int, float]]) -> tuple[float, list[float]]:
        """(tokens of the prefix ``chain`` HBM holds now, per tier the tokens beyond them it holds (0 for HBM)),
        touching nothing: what vLLM's scheduler finds when it admits a waiting request (Scheduler.schedule:
        get_computed_blocks, then the connector's get_num_new_matched_tokens; vllm/v1/core/sched/scheduler.py)."""
        pinned, lru = self.pinned, self.lru
        hbm0, hbm, below = lru[0], 0.0, [0.0] * len(lru)
        for key, need in chain:
            if need <= 0:
                continue
            if (pinned.get(key) or hbm0.get(key, 0.0)) >= need:  # (the common case: the segment whole in HBM)
                hbm += need
                continue
            j, got, head = self._held(key, need)
            in_hbm = min(head, got)  # all of it where HBM is its tier, else the head HBM kept
            hbm += in_hbm
            below[max(j, 0)] += got - in_hbm
            if got < need:
                break
        return hbm, below

    def _held(self, key: int, need: float) -> tuple[int, float, float]:
        """(j, tokens, head): the fastest tier j holding the most of the segment (-1: none), the tokens of it read
        there, and the head of it HBM holds: HBM may keep only the head of an object whose whole copy is below
        (tail-first eviction under write-through); then the copy below is read."""
        t = self.pinned.get(key) or self.lru[0].get(key, 0.0)
        if t >= need:
            return 0, need, t
        for j in range(1, len(self.lru)):
            below = self.lru[j].get(key, 0.0)
            if below > t:
                return j, min(below, need), t
        return (0, t, t) if t else (-1, 0.0, 0.0)

    def pin_wanted(self, r: int) -> None:
        """r is admitted: the objects its lookup read are referenced by it (those evicted since are recomputed).
        r references nothing before (its references are dropped when it finishes or is preempted) and a lookup
        reads each object once, so each is referenced once."""
        held, pinned, hbm, refs = self.held_by.setdefault(r, []), self.pinned, self.lru[0], self.refs
        for key in self.wants.pop(r, ()):
            t = pinned.get(key)
            if t is None:
                t = hbm.pop(key, None)
                if t is None:
                    continue
                self.used[0] -= t
                pinned[key] = t
                self.pinned_tokens += t
            held.append(key)
            refs[key] = refs.get(key, 0) + 1

    def unpinned_wanted(self, r: int) -> float:
        """Tokens of the objects r's lookup read that sit in the free LRU: admitting r takes them out of it."""
        lru, pinned = self.lru[0], self.pinned  # a lookup reads each object of its chain once
        tokens = 0
        for k in self.wants.get(r, ()):
            if k not in pinned:
                tokens += lru.get(k, 0.0)
        return tokens

    def unref(self, r: int) -> None:
        """r is preempted: its objects lose its reference (to the free LRU when no one else holds them); it wants
        them again when admitted."""
        keys = self.held_by.get(r, [])
        self.wants[r] = list(keys)
        self._drop(r)

    def _pin(self, key: int, tokens: float, held: list[int]) -> None:
        """``key`` referenced by the request whose objects are ``held`` (once), pinned at ``tokens`` if it was not."""
        if key not in self.pinned:
            self.pinned[key] = tokens
            self.pinned_tokens += tokens
        if key not in held:
            held.append(key)
            self.refs[key] = self.refs.get(key, 0) + 1

    def take(self, key: int) -> None:
        """A request's own object stays cached (pinned when it is read): nothing to take out."""

    # -- a request's prompt computed, a request done ---------------------------------------------------------------
    def register(self, r: int, segments: list[tuple[int, float]]) -> None:
        """r's prompt is computed: each (object, tokens) of it is cached and referenced by r, grown to ``tokens``."""
        held, pinned, hbm, refs = self.held_by.setdefault(r, []), self.pinned, self.lru[0], self.refs
        for key, tokens in segments:
            if tokens <= 0:
                continue
            if key not in held:  # (one r references already is pinned, out of the free LRU: only grown)
                old = hbm.pop(key, None)
                if old is not None:  # an unreferenced copy in the free LRU: referenced again
                    self.used[0] -= old
                    if key not in pinned:
                        pinned[key] = old
                        self.pinned_tokens += old
                elif key not in pinned:
                    pinned[key] = 0.0
                held.append(key)
                refs[key] = refs.get(key, 0) + 1
            t = pinned[key]  # grown to ``tokens``
            if tokens > t:
                pinned[key] = float(tokens)
                self.pinned_tokens += tokens - t

    def release(self, r: int, own: int, own_tokens: float) -> None:
        """r finished: its own object holds ``own_tokens`` (its context after the turn) and is stored write-through
        below HBM; every object r referenced loses a reference, and those referenced by no one join the free LRU,
        deepest first (its tail is the first to go)."""
        pinned = self.pinned
        t = pinned.get(own)
        if t is None:
            self._pin(own, own_tokens, self.held_by.setdefault(r, []))
        elif own_tokens > t:  # grown
            pinned[own] = float(own_tokens)
            self.pinned_tokens += own_tokens - t
        if self.through:
            system = pinned.get(SYSTEM)
            for j in range(1, len(self.lru)):
                self._put(j, own, own_tokens)
                if system is not None:
                    d = self.lru[j]
                    if d.get(SYSTEM) == system:  # put again at its size: only recent again (nothing to evict)
                        d.move_to_end(SYSTEM)
                    else:
                        self._put(j, SYSTEM, system)
        self._drop(r)
        if self.used[0] > self.cap[0]:
            self._evict(0)

    def _drop(self, r: int) -> None:
        """r's references released, the unreferenced objects to the free LRU deepest first, the system prompt last."""
        keys = self.held_by.pop(r, None)
        if not keys:
            return
        if keys[0] != SYSTEM and SYSTEM in keys:  # the system prompt last of all
            keys.remove(SYSTEM)
            keys.insert(0, SYSTEM)
        refs, pinned, lru = self.refs, self.pinned, self.lru[0]
        for key in reversed(keys):  # deepest first (a key is held once)
            left = refs[key] - 1
            if left:
                refs[key] = left
                continue
            del refs[key]
            t = pinned.pop(key)
            self.pinned_tokens -= t
            lru[key] = t
            self.used[0] += t

    def _evict(self, j: int) -> None:
        """HBM (write-through): trim the least recent object from its tail until the free LRU fits (module
        docstring); below HBM, or on-evict, whole objects as TieredCache does."""
        if j > 0 or not self.tail_first:
            super()._evict(j)
            return
        d = self.lru[0]
        while self.used[0] > self.cap[0] and d:
            key, t = next(iter(d.items()))
            cut = self.used[0] - self.cap[0]
            if cut < t:
                d[key] = t - cut
                self.used[0] -= cut
            else:
                del d[key]
                self.used[0] -= t
