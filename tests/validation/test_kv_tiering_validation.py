"""The tiered-KV validation (validation/kv_tiering.py): every published case gets a prediction through the session
simulator, the physics orders the single-request tiers as a cache must, and the report shows every case."""

import dataclasses

import numpy as np
import pytest

from tokenomy.catalog import loader
from tokenomy.validation import kv_tiering as kt
from tokenomy.validation.kv_tier_plans import replays

# kv_tiering.scored() simulates every case once per process (~40 CPU-s, lru_cache): both files that read it run in one
# xdist worker (make test: --dist loadgroup), so the suite pays it once
pytestmark = pytest.mark.xdist_group("kv_tiering_scored")


def _case(cid):
    for f in loader.kv_tier_validation():
        for c in f.case:
            if c.id == cid:
                return f.source, c
    raise KeyError(cid)


def _predict(cid):
    src, c = _case(cid)
    return kt.predict(c, src)


def test_a_prefix_read_from_hbm_beats_dram_beats_recomputing_it():
    """One 64k-token prompt on one H20: a hit in HBM costs a one-token prefill, a hit in DRAM adds the prefix's
    bytes over PCIe (6.4 GB at 64 GB/s ~ 0.1 s), a miss the whole prefill (seconds)."""
    hbm, _ = _predict("kvc-h20-l64k-hbm")
    dram, dram_hit = _predict("kvc-h20-l64k-dram")
    miss, miss_hit = _predict("kvc-h20-l64k-miss")
    assert dram_hit > 0.99 and miss_hit == 0.0
    assert hbm < dram < miss
    kv_bytes = 65536 * 48 * 4 * 128 * 2 * 2  # layers x KV heads x head dim x (K, V) x bf16
    assert dram - hbm == pytest.approx(kv_bytes / loader.hardware("hgx-h20-8").host.dram_to_chip_bytes_per_s, rel=0.2)


def test_the_lower_tier_raises_the_hit_rate_of_a_capped_pool():
    """MiniMax-M3's paired runs: the same load with LMCache's DRAM tier reads more prompt tokens from cache."""
    on, _ = _predict("atom-m3-prefix-lmcache-hit")
    off, _ = _predict("atom-m3-prefix-hbm-hit")
    assert 0 < off < on <= 1
    # each prefix must be computed once: the recipe's ceiling prefix/ISL - pool x prefix / (ISL x requests)
    assert on <= 80896 / 90166 - 4 * 80896 / (90166 * 32) + 1e-9


def test_prefix_aware_routing_keeps_a_group_on_one_replica():
    _, c = _case("llmd73-precise-qps3-ttft")
    for rp in replays(c):
        roots = rp.plan.parent < 0
        assert len(set(np.flatnonzero(roots))) <= 150 // 8 + 1  # one root agent per group on the replica


def test_the_report_lists_every_case_with_a_finite_prediction():
    rows = kt.scored()
    assert len(rows) == sum(len(f.case) for f in loader.kv_tier_validation())
    assert all(np.isfinite(r.predicted) and r.predicted > 0 for r in rows)
    table = kt.table_lines(rows)
    assert len(table) == 2 + len(rows)
    assert {s["metric"] for s in kt.summary(rows)} == {r.case.metric for r in rows}


def test_a_long_prompt_hit_in_hbm_pays_its_tokenization():
    """The API server tokenizes the whole prompt before the engine looks it up (vLLM: one tokenizer worker, 2.17 us
    per token): a 64k-token HBM hit takes at least 63k tokens' tokenization longer than a 1k-token one."""
    long, _ = _predict("kvc-h20-l64k-hbm")
    short, _ = _predict("kvc-h20-l1k-hbm")
    assert long - short >= 0.9 * (65536 - 1024) * 2.17e-6


def test_a_capped_hbm_pool_keeps_the_heads_of_the_prefixes_it_cannot_hold():
    """MiniMax-M3 without LMCache: four 80,896-token prefixes in a 262,144-token pool beside two running requests.
    Evicting whole prefixes LRU left 6% of prompt tokens hit; freed tail first, the heads stay (measured 55%)."""
    off, _ = _predict("atom-m3-prefix-hbm-hit")
    assert off > 0.3


def test_a_users_repeated_question_hits_once_its_first_prefill_is_done():
    """llm-d, precise routing at 3 QPS: the warm-up seated every prompt once, so the stage's requests hit their
    whole prefix + question (a request that arrived during the prefill of its group's first would miss)."""
    _, hit = _predict("llmd73-precise-qps3-ttft")
    assert hit > 0.95


def test_the_replay_testers_ramp_settles_where_ttft_leaves_less_than_20_percent_headroom(monkeypatch):
    """kv-cache-tester adds users while its rolling TTFT average stays under 0.8 x --max-ttft: with TTFT = users
    seconds and a 60 s gate the load settles at the first ladder count >= 48 (64 users past the 32 cap: 32)."""
    from types import SimpleNamespace

    src, c = _case("atom-m25-stress-hbm-ttft")
    tried = []

    def fake(case, source, users):
        tried.append(users)
        n = 4
        sim = SimpleNamespace(sim=SimpleNamespace(ttft_s=np.full(n, 0.0), e2e_s=np.full(n, float(users)),
                                                  arrival_s=np.zeros(n)))
        return [(sim, SimpleNamespace(measured=np.ones(n, bool), streamed=np.zeros(n, bool)))]

    monkeypatch.setattr(kt, "_run_at", fake)
    kt._run(c, src)
    assert tried[-1] == 32 and tried == [u for u in kt.USER_LADDER if u < 32] + [32]
    gate = c.model_copy(update={"workload": c.workload.model_copy(update={"max_ttft_s": 20.0})})
    tried.clear()
    kt._run(gate, src)
    assert tried[-1] == 16  # 16 s >= 0.8 x 20 s: no more users


def test_a_non_streamed_request_counts_its_whole_response_as_the_testers_ttft():
    from types import SimpleNamespace

    src, c = _case("atom-m25-stress-hbm-ttft")
    sim = SimpleNamespace(sim=SimpleNamespace(ttft_s=np.array([1.0, 1.0]), e2e_s=np.array([5.0, 9.0]),
                                              arrival_s=np.zeros(2)))
    rp = SimpleNamespace(measured=np.ones(2, bool), streamed=np.array([True, False]))
    assert kt._tester_ttft(c, [(sim, rp)]) == pytest.approx((1.0 + 9.0) / 2)


def test_bench_serving_sends_every_shared_prefix_prompt_once_in_a_shuffled_order():
    """SGLang bench_serving's generated-shared-prefix set: groups x prompts_per_group prompts, each sent once."""
    _, c = _case("gke-t2-p10k-cpu-ttft")
    (rp,) = replays(c)
    w = c.workload
    assert len(rp.plan.isl) == w.groups * w.prompts_per_group
    assert set(rp.plan.isl) == {w.prefix_tokens + w.unique_tokens}
    roots = rp.plan.parent < 0  # the first request of each group computes its prefix, the rest fork from it
    assert roots.sum() == w.groups and set(rp.plan.fork_tokens[~roots]) == {w.prefix_tokens}


def test_a_dram_tier_over_a_working_set_larger_than_hbm_cuts_ttft_and_raises_throughput():
    """LMCache on 8 x H100, Test 2 (4.2M tokens of prefixes and answers over a 1.4M-token HBM pool, under 1 TiB of
    DRAM): the paired arm with the DRAM tier hits more, so its TTFT ratio to HBM only is below 1, its throughput's
    above."""
    src, c = _case("gke-t2-p10k-cpu-ttft")
    ttft, hit = kt.predict(c, src)
    base = c.model_copy(update={"metric": "ttft_mean_s", "policy": "hbm", "dram_bytes": None})
    _, base_hit = kt.predict(base, src)
    assert hit > base_hit and ttft < 1.0
    tput, _ = _predict("gke-t2-p10k-cpu-input")
    assert tput > 1.0


@pytest.mark.parametrize("metric", ["ttft_mean_s", "input_tokens_per_s", "hit_rate"])
def test_a_replica_without_a_measured_request_counts_for_nothing(metric):
    """A replica none of whose requests is measured (a router sending a short run's measured set elsewhere) adds
    nothing to the metric, and is no error (np.min over its empty mask raised)."""
    src, c = _case("llmd73-precise-qps3-ttft")
    case = c.model_copy(update={"metric": metric})
    runs = kt._run(case, src)
    sim, rp = runs[0]
    idle = (sim, dataclasses.replace(rp, measured=np.zeros_like(rp.measured)))
    assert len(runs) > 1 and kt._metric(case, [*runs, idle]) == kt._metric(case, runs)


def test_each_agents_last_request_ends_its_session():
    from tokenomy.validation.kv_tier_plans import _rows_plan

    agent = [0, 1, 0, 2, 1, 0]
    plan = _rows_plan(agent, [8] * 6, [1] * 6, [0] * 6, [0.0] * 6, [-1] * 6, [-1, -1, -1], [0, 0, 0])
    assert plan.last_of_session.tolist() == [False, False, False, True, True, True]
