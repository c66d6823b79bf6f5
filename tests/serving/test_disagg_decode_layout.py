"""The disaggregated decode pool's default layout: serve's rule on the pool alone — the layouts that hold the load
first, then the shortest time in the pool, then the most requests/s (answers.workloads._decode_choice) — and the
pool alone at a load (serving.disagg.decode_load), its batch cap under the token budget (decode_slots)."""

import numpy as np
import pytest

from tokenomy.answers.resolve import deployment
from tokenomy.answers.workloads import engine_profile, plan_disagg, serve
from tokenomy.core.layout import Layout
from tokenomy.serving.disagg import decode_load, decode_pool
from tokenomy.serving.scheduler import scheduler_ranks

V3_GB200 = dict(model="deepseek-v3", hardware="gb200-nvl72", isl=4096, osl=1024, mode="disagg")


def _row(rate, **decode):
    pools = dict(prefill_chips=8, decode_chips=16, **decode)
    return serve(rate=[rate], pools=pools, **V3_GB200).rows()[0]


def test_the_open_loop_decode_pool_is_one_that_holds_the_rate():
    # DeepSeek-V3 on 8 + 16 GB200, 10 req/s of 4096/1024 (vLLM profile): tp16 has the shorter step at the ranking
    # batches but holds 6.97 req/s; tp1 ep16 attention-DP holds the rate. The default must hold it too and serve the
    # whole rate. (EP16's KV under attention-DP: serving.scheduler.kv_tokens.)
    tp16, ep16, auto = _row(10.0, decode_tp=16), _row(10.0, decode_ep=16), _row(10.0)
    assert tp16["capacity_limited"] and tp16["decode_capacity_requests_per_s"] < 10.0
    assert not ep16["capacity_limited"] and ep16["decode_capacity_requests_per_s"] > 10.0
    assert not auto["capacity_limited"] and auto["decode_capacity_requests_per_s"] > 10.0
    assert auto["goodput_requests_per_s"] == pytest.approx(10.0)


def test_where_no_layout_holds_the_rate_the_pool_serving_the_most_is_chosen():
    # 100 req/s is beyond every 16-chip decode pool here: the default serves at least what tp16 and ep16 serve
    auto, tp16, ep16 = _row(100.0), _row(100.0, decode_tp=16), _row(100.0, decode_ep=16)
    assert auto["capacity_limited"]
    assert auto["decode_capacity_requests_per_s"] >= max(tp16["decode_capacity_requests_per_s"],
                                                         ep16["decode_capacity_requests_per_s"]) * (1 - 1e-9)


def test_plan_disagg_chooses_the_decode_pool_at_each_load_point_and_survives_pools_too_small():
    # each point is a plan of its own; a budget of 24 chips tries decode pools of 1-4 GB200 that hold no DeepSeek-V3
    # (the open loop's batch-1 step was NaN there and the search failed on it)
    r = plan_disagg("deepseek-v3", "gb200-nvl72", chips=24, rate=[2, 10], isl=4096, osl=1024, top=0)
    rows = [x for x in r.rows() if x["prefill_chips"] == 8 and x["decode_chips"] == 16]
    assert {x["rate"] for x in rows} == {2.0, 10.0}
    assert not any(x["capacity_limited"] for x in rows)
    assert "decode 1" in r.notes[0] and "decode 4" in r.notes[0]


@pytest.fixture(scope="module")
def pool():
    dec = deployment("llama-3.1-8b", "hgx-h100-8", layout=Layout(2))
    prof = engine_profile("vllm", 2)
    return decode_pool(dec, prof, 2048.0, 512.0)


def test_open_loop_batch_is_littles_law_on_the_pools_table(pool):
    R = np.array([0.5, 2.0, 0.5 * pool.capacity, 0.99 * pool.capacity, 1.5 * pool.capacity])
    d = decode_load(pool, 512.0, rate=R)
    assert np.all(np.diff(pool.step_s) > 0)
    B = np.interp(d.tpot_s, pool.step_s, pool.batches)  # the batch whose step is this TPOT
    held = R < pool.capacity
    assert np.array_equal(d.holds, held)
    # B = X·OSL·t(B) where held (at least one sequence); the pool full where not
    assert np.allclose(B[held], np.maximum(R[held] * 512.0 * d.tpot_s[held], 1.0), rtol=1e-6)
    assert np.allclose(d.tpot_s[~held], np.interp(pool.cap, pool.batches, pool.step_s))
    assert np.allclose(d.requests_per_s, np.minimum(R, pool.capacity))
    assert np.allclose(d.decode_s[held], 512.0 * d.tpot_s[held]) and np.all(np.isinf(d.decode_s[~held]))


def test_closed_loop_time_in_the_pool_is_littles_law(pool):
    C = np.array([1.0, 16.0, pool.cap, 4.0 * pool.cap])
    d = decode_load(pool, 512.0, concurrency=C)
    assert np.array_equal(d.holds, C <= pool.cap)
    assert np.allclose(d.decode_s, C / d.requests_per_s)
    assert np.allclose(d.decode_s[:3], 512.0 * d.tpot_s[:3])  # every user runs: no wait for a slot
    assert d.requests_per_s[3] == pytest.approx(pool.capacity)


def test_the_token_budget_caps_the_decode_batch():
    # a decode-only step carries one token a sequence: 512 tokens a step run at most 512 sequences per scheduler,
    # whatever max_batch allows (the analytic pool and the simulator's admission alike)
    from tokenomy.serving.sim_decode import DecodePool

    dec = deployment("llama-3.1-8b", "hgx-h100-8", layout=Layout(1, dp=2))
    prof = engine_profile("vllm", 1, max_num_tokens=512, max_batch=4096)
    p = decode_pool(dec, prof, 128.0, 128.0)
    assert float(scheduler_ranks(dec.layout)) == 2.0
    assert p.cap == pytest.approx(2 * 512.0)
    sim = DecodePool(dec, prof, np.full(4, 128), np.full(4, 128))
    assert sim.cap == 2 * 512
