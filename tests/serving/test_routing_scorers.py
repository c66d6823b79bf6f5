"""serving/routing: the prefix-aware router is llm-d's default scorer set and the kv-router Dynamo's cost, each
weighing the prefix a replica holds against its load (the published formulas, worked by hand), and on the audit's
agentic layout (llama-3.1-8b, hgx-h100-8 at tp1 dp8, 64 sessions) neither piles the sessions on a few replicas as
the most-overlap-first router did (load imbalance 2.67)."""

import numpy as np
import pytest

from tokenomy.serving.kv_cache_tiers import TierLevel, TierStack
from tokenomy.serving.routing import compare_routing, dynamo_logits, llmd_scores
from tokenomy.serving.sessions import workload_of


def test_llmd_score_is_three_prefix_two_queue_two_free_kv():
    # replica 0 holds 90% of the prompt but has 3 waiting and half its KV used; replica 1 holds 10%, none waiting
    s = llmd_scores(np.array([0.9, 0.1]), np.array([3.0, 0.0]), np.array([0.5, 0.2]))
    assert s == pytest.approx([3 * 0.9 + 2 * 0.0 + 2 * 0.5, 3 * 0.1 + 2 * 1.0 + 2 * 0.8])
    assert np.argmax(s) == 1  # the load outweighs the prefix here
    # equal queues score 1 everywhere (queue-scorer's neutral case); usage above 1 counts as full
    s = llmd_scores(np.array([0.5, 0.0]), np.array([2.0, 2.0]), np.array([1.7, 0.0]))
    assert s == pytest.approx([1.5 + 2.0 + 0.0, 0.0 + 2.0 + 2.0])


def test_dynamo_logit_is_prefill_to_do_plus_active_blocks():
    # a 10k-token prompt: replica 0 holds 8k of it but has 30k tokens active and 4k queued prefill
    lg = dynamo_logits(10_000.0, np.array([8_000.0, 0.0]), np.array([4_000.0, 0.0]), np.array([30_000.0, 5_000.0]))
    assert lg == pytest.approx([1.0 * (4_000 + 2_000) + 30_000, 1.0 * 10_000 + 5_000])
    assert np.argmin(lg) == 1


@pytest.fixture(scope="module")
def compared():
    w = workload_of("agentic")
    row = {"concurrency": 64, "ttft_s": 2.30, "e2e_s": 17.7, "hbm_cache_tokens": 265_798.0}  # the steady state's
    stack = TierStack((TierLevel("hbm", 0.0, 0.0),))
    return {r["routing"]: r for r in compare_routing(w, stack, (8, 450_000.0), row, seed=0)}


def test_load_aware_routers_keep_the_replicas_even_and_beat_round_robin_on_hits(compared):
    assert compared["prefix-aware"]["load_imbalance"] < 1.5
    assert compared["kv-router"]["load_imbalance"] < 1.1
    for r in ("prefix-aware", "kv-router"):
        assert compared[r]["hit_rate"] > compared["round-robin"]["hit_rate"] + 0.05


def test_an_unknown_router_is_refused_by_name_not_run_as_the_kv_router():
    from tokenomy.serving.routing import ROUTERS, arrivals, route
    from tokenomy.serving.sessions import generate

    plan = generate(workload_of("multiturn"), 4, seed=0)
    t = arrivals(plan, 2, 10.0, 20.0)
    stack = TierStack((TierLevel("hbm", 1e6, 0.0),))
    with pytest.raises(ValueError, match=r"^routing: 'kv_router'; allowed: " + ", ".join(ROUTERS) + "$"):
        route(plan, t, stack, "kv_router", (2, 1e5, 1.0, 10.0))
    assert route(plan, t, stack, "kv-router", (2, 1e5, 1.0, 10.0))["routing"] == "kv-router"
