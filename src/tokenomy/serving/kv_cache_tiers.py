"""KV tiers under load: one replica's HBM prefix cache, host DRAM and local NVMe, each an LRU over cached contexts.

    TierLevel   one tier as one replica sees it: capacity in tokens (tier bytes per chip / KV bytes per token per
                chip, every chip holding its shard), read seconds per token (KV bytes per token per chip x the
                replica's KV slots / the chip's read path: PCIe or NVLink-C2C for DRAM, the node's NVMe rate shared
                by its chips), latency per read
    TierStack   the tiers a policy uses (catalog/kv_tiering: tiers, store "write-through" | "on-evict", load
                "before-prefill" | "layerwise-overlapped")
    TieredCache the cache's state: per tier an LRU (OrderedDict) of objects -> tokens held. An object is an agent's
                own context (serving/sessions.py) or the shared system prompt. ``lookup`` walks a request's prefix
                chain (system prompt, the ancestors' objects up to each fork, its own object) and takes each
                segment from the fastest tier holding it, stopping at the first miss; ``finish`` stores the
                agent's grown object in HBM. write-through: every tier keeps its own LRU copy; on-evict: what HBM
                evicts moves down a tier, and so on (the last tier drops it).
The lecture's rule per request (§2.13): a segment found in a lower tier is read only when reading it is quicker than
recomputing it, latency + h·s_read < h·s_prefill (s_prefill the engine's prefill seconds per token at this
deployment); otherwise the lookup stops there and the rest is prefilled.
HBM's capacity is what the running requests leave of the KV pool (vLLM/SGLang keep cached blocks in the free pool,
evicted LRU when a running request needs them): the simulator sets it each step (``set_hbm_tokens``).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

SYSTEM = -1  # the shared system prompt's object key


@dataclass(frozen=True)
class TierLevel:
    tier: str  # econ.kv_tiers.TIER_ORDER key
    capacity_tokens: float
    read_s_per_token: float  # 0 for HBM
    latency_s: float = 0.0


@dataclass(frozen=True)
class TierStack:
    levels: tuple[TierLevel, ...]  # HBM first
    store: str = "write-through"
    load: str = "before-prefill"
    prefill_s_per_token: float = 0.0  # the recompute side of the rule

    def worth_reading(self, j: int, tokens: float) -> bool:
        """The lecture's rule: read ``tokens`` from tier j when quicker than recomputing them."""
        lv = self.levels[j]
        return j == 0 or lv.latency_s + tokens * lv.read_s_per_token < tokens * self.prefill_s_per_token

    def names(self) -> tuple[str, ...]:
        return tuple(lv.tier for lv in self.levels)


class TieredCache:
    """The tiers' LRU state (module docstring). ``hits[j]``: tokens served from tier j; ``looked``: input tokens."""

    def __init__(self, stack: TierStack):
        self.stack = stack
        self.lru = [OrderedDict() for _ in stack.levels]
        self.used = [0.0] * len(stack.levels)
        self.cap = [float(lv.capacity_tokens) for lv in stack.levels]
        self.through = stack.store == "write-through"
        self.hits = [0.0] * len(stack.levels)
        self.looked = 0.0
        self.skipped = 0.0  # tokens found in a lower tier but recomputed (the rule said so)

    def set_hbm_tokens(self, tokens: float) -> None:
        self.cap[0] = max(float(tokens), 0.0)
        if self.used[0] > self.cap[0]:  # (the common case: nothing to evict)
            self._evict(0)

    def _held(self, key: int, need: float) -> tuple[int, float]:
        """(fastest tier holding key, tokens it holds of the first ``need``); (-1, 0) when none."""
        for j, d in enumerate(self.lru):
            t = d.get(key)
            if t:
                return j, min(t, need)
        return -1, 0.0

    def lookup(self, chain: list[tuple[int, float]], isl: float) -> tuple[float, list[float]]:
        """(hit tokens, tokens read per tier) for a request of ``isl`` input tokens whose reusable prefix is
        ``chain`` [(object, tokens)], root first; touches what it reads (LRU) and brings it into HBM."""
        per = [0.0] * len(self.lru)
        hit = 0.0
        held, touch, worth = self._held, self._touch, self.stack.worth_reading
        for key, need in chain:
            if need <= 0:
                continue
            j, got = held(key, need)
            if j != 0 and (j < 0 or not worth(j, got)):  # (HBM is always worth reading)
                if j > 0:
                    self.skipped += got
                break
            per[j] += got
            hit += got
            touch(key, j)
            if got < need:
                break
        return self._counted(hit, per, isl), per

    def _counted(self, hit: float, per: list[float], isl: float) -> float:
        """A lookup's hit tokens, at most ISL − 1 (the engines compute the last token at least), counted with its
        reads per tier."""
        self.looked += isl
        for j, t in enumerate(per):
            self.hits[j] += t
        return min(hit, max(isl - 1.0, 0.0))

    def probe(self, chain: list[tuple[int, float]]) -> float:
        """The tokens ``lookup`` would serve, without touching anything (a router asking each replica)."""
        hit = 0.0
        for key, need in chain:
            if need <= 0:
                continue
            j, got = self._held(key, need)
            if j < 0 or not self.stack.worth_reading(j, got):
                break
            hit += got
            if got < need:
                break
        return hit

    def _touch(self, key: int, j: int) -> None:
        """A segment read from tier j is recent again; read from below HBM it is brought into HBM (on-evict: it
        leaves the lower tier; write-through: every tier's copy is touched)."""
        if j > 0:
            t = self.lru[j][key]
            if not self.through:
                del self.lru[j][key]
                self.used[j] -= t
            self._put(0, key, t)
        else:
            self.lru[0].move_to_end(key)
        if self.through:
            for d in self.lru[1:]:
                if key in d:
                    d.move_to_end(key)

    def take(self, key: int) -> None:
        """A running request holds its agent's blocks: they leave HBM's free pool until it finishes."""
        t = self.lru[0].pop(key, None)
        if t is not None:
            self.used[0] -= t

    def finish(self, key: int, tokens: float) -> None:
        """Store an object (an agent's context after its turn, or the system prompt) in HBM, and in every lower
        tier under write-through."""
        self._put(0, key, tokens)
        if self.through:
            for j in range(1, len(self.lru)):
                self._put(j, key, tokens)

    def _put(self, j: int, key: int, tokens: float) -> None:
        if tokens > self.cap[j] and j > 0:
            return
        d = self.lru[j]
        old = d.pop(key, None)
        if old is not None:
            self.used[j] -= old
        d[key] = tokens
        self.used[j] += tokens
        if self.used[j] > self.cap[j]:
            self._evict(j)

    def _evict(self, j: int) -> None:
        d = self.lru[j]
        while self.used[j] > self.cap[j] and d:
            key, t = d.popitem(last=False)
            self.used[j] -= t
            if not self.through and j + 1 < len(self.lru):
                self._put(j + 1, key, t)

    def hit_rates(self) -> dict:
        """Token hit rate by tier, of the input tokens looked up."""
        n = self.looked or 1.0
        return {lv.tier: h / n for lv, h in zip(self.stack.levels, self.hits)}
