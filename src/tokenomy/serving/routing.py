"""Routing session traffic across data-parallel replicas: the hit rate and the load imbalance each router gives.

Each replica has its own KV tiers (kv_cache_tiers.TieredCache: a prefix cached on one replica is no use on another).
A plan's requests (serving/sessions.py) are replayed in arrival order, a turn arriving its think time after its
predecessors finish, each request taking ``ttft_s`` to its first token and ``e2e_s`` to its end (the steady
state's at the load), its context stored on the replica that served it when it finishes; the router picks a
replica per request:
    round-robin      the next replica in turn (what a plain HTTP load balancer does)
    session-sticky   the session's replica (hash of its id: AIPerf sends X-Session-Affinity for this)
    prefix-aware     llm-d's default scheduler (the Gateway API Inference Extension's endpoint picker: the
                     InferencePool chart's default-plugins.yaml, weights 3 / 2 / 2, max-score-picker):
                         score = 3·m/n + 2·(q_max − q)/(q_max − q_min) + 2·(1 − u)
                     m/n the request's prefix blocks the replica holds over its blocks (prefix-cache-scorer,
                     plugins/multi/prefix/plugin.go), q the replica's waiting requests (queue-scorer,
                     plugins/scorer/queue.go: 1 for every replica when all queues are equal), u its KV-cache usage
                     (kv-cache-utilization-scorer, plugins/scorer/kvcache_utilization.go; kubernetes-sigs/
                     gateway-api-inference-extension at 02308be3); the highest wins
    kv-router        Dynamo's KV router (ai-dynamo/dynamo docs/router/README.md "Cost Function", Dynamo 0.6, and
                     lib/llm/src/kv_router/scheduler.rs DefaultWorkerSelector): in blocks of the engine's size b,
                         logit = w·(P + I − overlap)/b + A/b,  w = --kv-overlap-score-weight = 1.0 (default),
                     P the prefill tokens already queued on the worker, I − overlap this request's uncached input,
                     A the active sequences' blocks; the lowest wins (--router-temperature 0, the default: no
                     sampling)
The replay has no scheduler: the requests before their first token stand for the waiting queue q and the queued
prefill P (vLLM reports num_requests_waiting, Dynamo counts prefill tokens until the first token); q counts the one
prefill running too, which the queue scorer's min-max normalisation cancels. Every request in flight holds its
input's KV (A; u = A over the replica's KV pool, capped at 1). The routers see this state at once.
What balancing buys is not in these figures: every router's requests take the steady state's ttft_s and e2e_s, so
a router that keeps the replicas even shows only what it costs in hits (session-sticky, blind to load, keeps most).
Without cache state, ``assign`` places requests tagged by a key (a session, a prefix group) the same way:
    random           uniform over the replicas (llm-d's random scheduler)
    round-robin      in turn (llm-d's load scheduler at a balanced load: no affinity)
    group-sticky     key mod replicas: every request of a key on one replica, keys spread evenly (session-sticky
                     routing; a prefix-aware router once it has learned where each group's prefix lives, llm-d's
                     precise and approximate prefix scorers on a warm cluster)
Load imbalance: the busiest replica's prefill tokens (the work a miss makes) over the replicas' mean.
A cache-level replay: the timing is the steady state's, not re-simulated per router.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from tokenomy.serving.kv_cache_tiers import SYSTEM, TieredCache, TierStack
from tokenomy.serving.sessions import SessionPlan, generate

ROUTERS = ("round-robin", "session-sticky", "prefix-aware", "kv-router")
KEY_ROUTERS = ("random", "round-robin", "group-sticky")
LLMD_WEIGHTS = (3.0, 2.0, 2.0)  # prefix-cache, queue, kv-cache-utilization scorers (module docstring)
DYNAMO_OVERLAP_WEIGHT = 1.0  # --kv-overlap-score-weight's default (module docstring)


def assign(router: str, replicas: int, key: np.ndarray, rng=None) -> np.ndarray:
    """Replica per request from its key alone (module docstring); ``rng`` draws the random router's choices."""
    if router == "random":
        return rng.integers(0, replicas, len(key))
    if router == "round-robin":
        return np.arange(len(key)) % replicas
    if router == "group-sticky":
        return np.asarray(key, np.int64) % replicas
    raise ValueError(f"routing: {router!r}; allowed: {', '.join(KEY_ROUTERS)}")


def llmd_scores(hit_share: np.ndarray, waiting: np.ndarray, kv_usage: np.ndarray) -> np.ndarray:
    """llm-d's weighted score per replica (module docstring): higher is better."""
    w_prefix, w_queue, w_kv = LLMD_WEIGHTS
    lo, hi = float(np.min(waiting)), float(np.max(waiting))
    queue = np.ones_like(hit_share) if hi == lo else (hi - waiting) / (hi - lo)
    return w_prefix * hit_share + w_queue * queue + w_kv * (1.0 - np.minimum(kv_usage, 1.0))


def dynamo_logits(isl: float, overlap: np.ndarray, prefill_tokens: np.ndarray, active_tokens: np.ndarray) -> np.ndarray:
    """Dynamo's KV-router cost per replica, in tokens (the blocks' size b cancels): lower is better."""
    return DYNAMO_OVERLAP_WEIGHT * (prefill_tokens + isl - overlap) + active_tokens


@dataclass
class _Load:
    """What the routers see of each replica: requests before their first token, their uncached input, the input
    held by every request in flight, and the prefill tokens served so far (the imbalance)."""

    replicas: int
    waiting: np.ndarray = field(init=False)
    queued_tokens: np.ndarray = field(init=False)
    active_tokens: np.ndarray = field(init=False)
    work: np.ndarray = field(init=False)

    def __post_init__(self):
        self.waiting, self.queued_tokens, self.active_tokens, self.work = (np.zeros(self.replicas) for _ in range(4))


def arrivals(plan: SessionPlan, concurrency: int, e2e_s: float, stagger_s: float) -> np.ndarray:
    """Arrival times of a closed loop of ``concurrency`` session slots, each request lasting ``e2e_s``: requests
    in creation order are topological (a turn after its predecessors)."""
    n = len(plan)
    t, done = np.full(n, np.nan), np.full(n, np.nan)
    preds: list[list[int]] = [[] for _ in range(n)]
    for r, ss in enumerate(plan.succ):
        for s in ss:
            preds[s].append(r)
    roots = [r for r in range(n) if plan.waits[r] == 0]
    slot_free = [i * stagger_s / concurrency for i in range(concurrency)]
    heapq.heapify(slot_free)
    for r in range(n):
        if preds[r]:
            t[r] = max(done[p] for p in preds[r]) + plan.gap_s[r]
        else:
            t[r] = heapq.heappop(slot_free) if r in roots else 0.0
        done[r] = t[r] + e2e_s
        if plan.last_of_session[r]:
            heapq.heappush(slot_free, done[r])
    return t


def route(plan: SessionPlan, arrival: np.ndarray, stack: TierStack, router: str, replica: tuple) -> dict:
    """Replay the plan through tier caches under ``router`` (module docstring); ``replica`` = (replicas, the KV pool's
    tokens of one, ttft_s, e2e_s)."""
    if router not in ROUTERS:  # refused by name: an unknown router is no kv-router
        raise ValueError(f"routing: {router!r}; allowed: {', '.join(ROUTERS)}")
    replicas, pool_tokens, ttft_s, e2e_s = replica
    caches = [TieredCache(stack) for _ in range(replicas)]
    load, hits = _Load(replicas), 0.0
    events: list[tuple[float, int, int, int, float]] = []  # (time, 0 first token | 1 finish, request, replica, miss)
    order = np.argsort(arrival, kind="stable")
    fixed = None  # the key routers' choices, in arrival order
    if router in ("round-robin", "session-sticky"):
        key = plan.session[plan.agent][order]
        fixed = assign("group-sticky" if router == "session-sticky" else router, replicas, key)
    for i, r in enumerate(order):
        while events and events[0][0] <= arrival[r]:
            _release(heapq.heappop(events), plan, caches, load)
        chain = [(SYSTEM, plan.system_tokens)] + plan.chain(int(r))
        isl = float(plan.isl[r])
        if fixed is not None:
            k = int(fixed[i])
        else:
            got = np.array([c.probe(chain) for c in caches])
            if router == "prefix-aware":
                k = int(np.argmax(llmd_scores(got / isl, load.waiting, load.active_tokens / pool_tokens)))
            else:  # kv-router (the others refused above)
                k = int(np.argmin(dynamo_logits(isl, got, load.queued_tokens, load.active_tokens)))
        hit, _ = caches[k].lookup(chain, isl)
        caches[k].take(int(plan.agent[r]))
        hits += hit
        load.work[k] += isl - hit
        load.waiting[k] += 1
        load.queued_tokens[k] += isl - hit
        load.active_tokens[k] += isl
        heapq.heappush(events, (arrival[r] + min(ttft_s, e2e_s), 0, int(r), k, isl - hit))
        heapq.heappush(events, (arrival[r] + e2e_s, 1, int(r), k, isl - hit))
    w = load.work
    return {"routing": router, "hit_rate": hits / float(np.sum(plan.isl)),
            "load_imbalance": float(np.max(w) / np.mean(w)) if np.mean(w) > 0 else 1.0}


def _release(event: tuple, plan: SessionPlan, caches: list[TieredCache], load: _Load) -> None:
    """A request's first token leaves the waiting queue; its end frees its KV and stores its context."""
    _, kind, q, k, miss = event
    if kind == 0:
        load.waiting[k] -= 1
        load.queued_tokens[k] -= miss
        return
    load.active_tokens[k] -= float(plan.isl[q])
    caches[k].finish(SYSTEM, plan.system_tokens)
    caches[k].finish(int(plan.agent[q]), float(plan.ctx_before[q] + _own_new(plan, q) + plan.osl[q]))


def _own_new(plan: SessionPlan, r: int) -> float:
    """The tokens r appends to its agent's own object: its input beyond the prefix it was given."""
    chain = plan.chain(r)
    prefix = plan.system_tokens + sum(t for _, t in chain[:-1])
    return float(plan.isl[r] - prefix - plan.ctx_before[r])


def compare_routing(w, stack: TierStack, replicas: tuple, row: dict, seed: int = 0) -> list[dict]:
    """Each router's hit rate and load imbalance at the row's load (concurrency sessions over the replicas);
    ``replicas`` = (how many, the KV pool's tokens of one: what llm-d's usage u is a share of)."""
    replicas, pool_tokens = replicas
    from dataclasses import replace

    U = int(row.get("concurrency") or max(replicas, 1))
    e2e = float(row.get("e2e_s") or 1.0)
    ttft = float(row.get("ttft_s") or 0.0)
    hbm = float(row.get("hbm_cache_tokens") or 0.0)
    levels = (replace(stack.levels[0], capacity_tokens=hbm),) + stack.levels[1:]
    st = replace(stack, levels=levels)
    plan = generate(w, max(3 * U, 2 * replicas), seed)
    t = arrivals(plan, U, e2e, w.turns * (w.think_s + e2e))
    return [route(plan, t, st, r, (max(replicas, 1), max(pool_tokens, 1.0), ttft, e2e)) for r in ROUTERS]
