"""HBM's prefix cache as vLLM's block pool keeps it (serving/kv_hbm_pool.py): the tail of an object goes first,
a prompt is hittable once its prefill registered it, requests share what they reference; and the API server's
tokenizer as a per-token host cost (EngineProfile.tokenize_s_per_token) in the session simulator."""

import pytest

from tokenomy.catalog import loader
from tokenomy.serving.kv_cache_tiers import SYSTEM, TieredCache, TierLevel, TierStack
from tokenomy.serving.kv_hbm_pool import SharedPrefixCache
from tokenomy.serving.scheduler import profile_of


def _stack(hbm=100.0, ddr=0.0):
    levels = (TierLevel("hbm", hbm, 0.0),) + ((TierLevel("ddr", ddr, 1e-9, 0.0),) if ddr else ())
    return TierStack(levels, "write-through", prefill_s_per_token=1e-4)


def _run_once(c, r, key, tokens):
    """Request r computes object ``key`` of ``tokens`` tokens and finishes (its blocks freed to the LRU)."""
    c.lookup_for(r, [(key, 0.0)], tokens)
    c.pin_wanted(r)
    c.register(r, [(key, tokens)])
    c.release(r, key, tokens)


def test_a_full_pool_evicts_the_tail_of_an_object_and_keeps_its_head():
    """vLLM frees a request's blocks in reverse order so the tail is evicted first: after the pool shrinks to 60
    tokens, the 100-token context keeps its first 60 and a later request hits them (whole-object LRU: none)."""
    c, whole = SharedPrefixCache(_stack()), TieredCache(_stack())
    _run_once(c, 0, 7, 100.0)
    whole.finish(7, 100.0)
    c.set_hbm_tokens(60.0)
    whole.set_hbm_tokens(60.0)
    assert c.lookup_for(1, [(7, 100.0)], 120.0)[0] == 60.0
    assert whole.lookup([(7, 100.0)], 120.0)[0] == 0.0


def test_the_least_recent_object_loses_its_tail_before_a_newer_one_is_touched():
    c = SharedPrefixCache(_stack(hbm=150.0))
    _run_once(c, 0, 1, 100.0)
    _run_once(c, 1, 2, 100.0)  # 200 tokens in 150: object 1 (older) is cut to 50, object 2 is whole
    assert c.lru[0][1] == 50.0 and c.lru[0][2] == 100.0


def test_a_prompt_is_hittable_once_its_prefill_registered_it_not_before():
    c = SharedPrefixCache(_stack(hbm=1000.0))
    c.lookup_for(0, [(SYSTEM, 0.0), (3, 0.0)], 500.0)
    c.pin_wanted(0)
    assert c.lookup_for(1, [(3, 400.0)], 500.0)[0] == 0.0  # arrives during r0's prefill: a miss
    c.register(0, [(3, 400.0)])
    assert c.lookup_for(2, [(3, 400.0)], 500.0)[0] == 400.0  # after it: r0 is still running, its prompt is shared


def test_referenced_objects_are_held_once_and_cannot_be_evicted():
    c = SharedPrefixCache(_stack(hbm=1000.0))
    _run_once(c, 0, 5, 300.0)
    for r in (1, 2):
        c.lookup_for(r, [(5, 300.0)], 400.0)
        c.pin_wanted(r)
    assert c.pinned_tokens == 300.0 and c.refs[5] == 2  # two running requests, one copy
    c.set_hbm_tokens(0.0)  # no room in the free LRU: a referenced object stays
    assert c.lookup_for(3, [(5, 300.0)], 400.0)[0] == 300.0
    c.release(1, 11, 10.0)
    c.release(2, 12, 10.0)
    assert 5 not in c.pinned and c.pinned_tokens == 0.0


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_each_engine_tokenizes_a_prompt_at_the_measured_rate_on_one_worker(engine):
    """One Hugging Face fast tokenizer on one worker by default in each engine's API server (catalog/engines
    [frontend]: vLLM's ThreadPoolExecutor(max_workers=1), SGLang's tokenizer_worker_num = 1, TensorRT-LLM's
    tokenization inline in generate_async)."""
    f = loader.engine_file(engine)
    assert f.frontend.tokenizer_workers == 1
    # 101,615 tokens in 220.38 ms and 679 in 1.18 ms on one core: 2.17 us per token
    assert profile_of(f).tokenize_s_per_token == pytest.approx((220.38e-3 - 1.18e-3) / (101615 - 679), rel=0.01)


def test_a_lookup_on_arrival_touches_nothing_and_admission_sees_what_is_left():
    """vLLM looks a waiting request's prefix up when it schedules it (Scheduler.schedule -> get_computed_blocks), so
    a lookup on arrival must not make the object recent: object 1, found by request 9 on arrival, is still the least
    recent and loses its tail first when object 2 comes in; at admission ``held_now`` reports the 50 tokens left
    (the lookup that touched it had kept it whole and evicted object 2's tail instead)."""
    c = SharedPrefixCache(_stack(hbm=200.0))
    _run_once(c, 0, 1, 100.0)
    _run_once(c, 1, 3, 50.0)
    assert c.lookup_for(9, [(1, 100.0)], 120.0)[0] == 100.0  # found on arrival
    _run_once(c, 2, 2, 100.0)  # 250 tokens in 200 while 9 waits
    assert c.lru[0][1] == 50.0 and c.lru[0][2] == 100.0
    assert c.held_now([(1, 100.0)]) == (50.0, [0.0])


def test_admission_counts_what_a_lower_tier_still_holds_beyond_hbm():
    c = SharedPrefixCache(_stack(hbm=100.0, ddr=1000.0))
    _run_once(c, 0, 1, 100.0)  # write-through: a copy in DRAM too
    _run_once(c, 1, 2, 100.0)  # HBM keeps only object 2
    assert c.held_now([(1, 100.0), (4, 10.0)]) == (0.0, [0.0, 100.0])


def test_admission_reads_hbms_head_and_the_rest_from_the_copy_below_and_goes_on():
    """HBM kept the head of object 1 (its tail evicted first), DRAM the whole copy: admission finds the head in HBM and
    the rest below, and the next object of the chain whole in HBM (held_now and lookup_for share _held's search)."""
    c = SharedPrefixCache(_stack(hbm=150.0, ddr=1000.0))
    _run_once(c, 0, 1, 100.0)
    _run_once(c, 1, 2, 100.0)  # 200 tokens in 150: object 1 keeps its first 50
    assert c.lru[0][1] == 50.0 and c.lru[1][1] == 100.0
    assert c.held_now([(1, 100.0), (2, 100.0)]) == (150.0, [0.0, 50.0])
    assert c.held_now([(1, 100.0), (3, 10.0), (2, 100.0)]) == (50.0, [0.0, 50.0])  # a gap ends the prefix


def test_admission_reads_a_segment_cut_in_hbm_from_below_up_to_its_need_and_goes_on():
    """HBM keeps 50 of object 1's 100 tokens (tail first), DRAM the whole copy: a chain needing 80 of it finds 50 in
    HBM and 30 more below (not DRAM's 100), goes on to object 2 (whole in HBM) and stops at object 5 (nowhere)."""
    c = SharedPrefixCache(_stack(hbm=150.0, ddr=1000.0))
    _run_once(c, 0, 1, 100.0)
    _run_once(c, 1, 2, 100.0)
    assert c.lru[0][1] == 50.0
    assert c.held_now([(1, 80.0), (2, 100.0), (5, 10.0), (2, 5.0)]) == (150.0, [0.0, 30.0])
