"""Routing session traffic across data-parallel replicas: the hit rate and the load imbalance each router gives.

Each replica has its own KV tiers (kv_cache_tiers.TieredCache: a prefix cached on one replica is no use on another).
A plan's requests (serving/sessions.py) are replayed in arrival order, a turn arriving its think time after its
predecessors finish, each request taking ``e2e_s`` (the steady state's end-to-end time at the load), its context
stored on the replica that served it when it finishes; the router picks a replica per request:
    round-robin      the next replica in turn (what a plain HTTP load balancer does)
    session-sticky   the session's replica (hash of its id: AIPerf sends X-Session-Affinity for this)
    prefix-aware     the replica holding the longest prefix of the request, ties to the least-loaded (the KV-aware
                     routers of llm-d and Dynamo score overlap against load the same way)
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

import numpy as np

from tokenomy.serving.kv_cache_tiers import SYSTEM, TieredCache, TierStack
from tokenomy.serving.sessions import SessionPlan, generate

ROUTERS = ("round-robin", "session-sticky", "prefix-aware")
KEY_ROUTERS = ("random", "round-robin", "group-sticky")


def assign(router: str, replicas: int, key: np.ndarray, rng=None) -> np.ndarray:
    """Replica per request from its key alone (module docstring); ``rng`` draws the random router's choices."""
    if router == "random":
        return rng.integers(0, replicas, len(key))
    if router == "round-robin":
        return np.arange(len(key)) % replicas
    if router == "group-sticky":
        return np.asarray(key, np.int64) % replicas
    raise ValueError(f"routing: {router!r}; allowed: {', '.join(KEY_ROUTERS)}")


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


def route(plan: SessionPlan, arrival: np.ndarray, stack: TierStack, replicas: int, router: str, e2e_s: float) -> dict:
    """Replay the plan through ``replicas`` tier caches under ``router`` (module docstring)."""
    caches = [TieredCache(stack) for _ in range(replicas)]
    work = np.zeros(replicas)
    hits = 0.0
    pending: list[tuple[float, int, int]] = []  # (finish, request, replica)
    order = np.argsort(arrival, kind="stable")
    fixed = None  # the key routers' choices, in arrival order
    if router != "prefix-aware":
        fixed = assign("group-sticky" if router == "session-sticky" else router, replicas, plan.session[plan.agent][order])
    for i, r in enumerate(order):
        while pending and pending[0][0] <= arrival[r]:
            _, q, k = heapq.heappop(pending)
            caches[k].finish(SYSTEM, plan.system_tokens)
            caches[k].finish(int(plan.agent[q]), float(plan.ctx_before[q] + _own_new(plan, q) + plan.osl[q]))
        chain = [(SYSTEM, plan.system_tokens)] + plan.chain(int(r))
        if fixed is not None:
            k = int(fixed[i])
        else:
            got = np.array([c.probe(chain) for c in caches])
            best = np.flatnonzero(got == got.max())
            k = int(best[np.argmin(work[best])])
        hit, _ = caches[k].lookup(chain, float(plan.isl[r]))
        caches[k].take(int(plan.agent[r]))
        hits += hit
        work[k] += plan.isl[r] - hit
        heapq.heappush(pending, (arrival[r] + e2e_s, int(r), k))
    return {"routing": router, "hit_rate": hits / float(np.sum(plan.isl)),
            "load_imbalance": float(np.max(work) / np.mean(work)) if np.mean(work) > 0 else 1.0}


def _own_new(plan: SessionPlan, r: int) -> float:
    """The tokens r appends to its agent's own object: its input beyond the prefix it was given."""
    chain = plan.chain(r)
    prefix = plan.system_tokens + sum(t for _, t in chain[:-1])
    return float(plan.isl[r] - prefix - plan.ctx_before[r])


def compare_routing(w, stack: TierStack, replicas: int, row: dict, seed: int = 0) -> list[dict]:
    """Each router's hit rate and load imbalance at the row's load (concurrency sessions over the replicas)."""
    from dataclasses import replace

    C = int(row.get("concurrency") or max(replicas, 1))
    e2e = float(row.get("e2e_s") or 1.0)
    hbm = float(row.get("hbm_cache_tokens") or 0.0)
    levels = (replace(stack.levels[0], capacity_tokens=hbm),) + stack.levels[1:]
    st = replace(stack, levels=levels)
    plan = generate(w, max(3 * C, 2 * replicas), seed)
    t = arrivals(plan, C, e2e, w.turns * (w.think_s + e2e))
    return [route(plan, t, st, max(replicas, 1), r, e2e) for r in ROUTERS]
