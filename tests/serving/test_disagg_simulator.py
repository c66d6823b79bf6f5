"""The disaggregated simulator (serving.sim_disagg) against the analytic disaggregated model (serving.disagg), and
its own invariants: Llama-3.1-70B, a prefill pool and a decode pool of 4 x H100 each (tp4), vLLM's profile."""

from dataclasses import replace

import numpy as np
import pytest

from tokenomy.answers.resolve import deployment
from tokenomy.answers.workloads import engine_profile, serve
from tokenomy.core.layout import Layout
from tokenomy.serving.disagg import DisaggLoad, disagg
from tokenomy.serving.sim_disagg import simulate_disagg
from tokenomy.serving.workload import Lengths, Requests, Workload, prefill_tokens


@pytest.fixture(scope="module")
def pools():
    base = deployment("llama-3.1-70b", "hgx-h100-8", layout=Layout())
    return base.with_(layout=Layout(4)), base.with_(layout=Layout(4)), engine_profile("vllm", 4)


def _sim(pools, w, n):
    pre, dec, prof = pools
    return simulate_disagg(pre, dec, prof, prof, w, n)


def _analytic(pools, isl, osl, **load):
    pre, dec, prof = pools
    return disagg(pre, dec, prof, prof, DisaggLoad(isl, osl, **{k: [v] for k, v in load.items()}))


# Below saturation, closed and open loop, the prefill pool from idle to ~60% busy. Tolerance: TTFT 10%, TPOT 5%.
# TPOT is the decode pool's engine step in both (measured within 3%: the simulator's batch varies about its mean
# while the analytic model times the mean). TTFT's prefill queue is closed-form in the analytic model — the busy
# share times half a pass, an M/D/1 term against the pool's full-pass capacity (open loop), a pass grown by the
# prompts that arrive while one waits (closed loop) — and exact for the simulated arrivals: measured within 7%.
# OSL uniform within ±5% of its mean: fixed lengths phase-lock a closed loop (tests/serving/test_serve_steady_and_sim).
GRID = [(1024, 1024, dict(concurrency=4)), (1024, 1024, dict(concurrency=32)), (1024, 1024, dict(concurrency=128)),
        (1024, 1024, dict(rate=1.0)), (1024, 1024, dict(rate=4.0)), (2048, 256, dict(concurrency=32)),
        (2048, 256, dict(rate=4.0)), (4096, 512, dict(concurrency=4)), (4096, 512, dict(concurrency=32)),
        (4096, 512, dict(rate=1.0))]


@pytest.mark.parametrize("isl,osl,load", GRID)
def test_simulator_and_analytic_agree_below_saturation(pools, isl, osl, load):
    a = _analytic(pools, isl, osl, **load)
    w = Workload(Lengths("fixed", isl), Lengths("uniform", round(0.95 * osl), round(1.05 * osl)), **load)
    s = _sim(pools, w, 1000).summary(8)
    assert not a.capacity_limited[0]
    assert s["ttft_s"] == pytest.approx(float(a.ttft_s[0]), rel=0.10)
    assert s["tpot_s"] == pytest.approx(float(a.tpot_s[0]), rel=0.05)
    assert s["ttft_p99_s"] >= s["ttft_p50_s"] and s["tpot_p99_s"] >= s["tpot_p50_s"]


@pytest.mark.parametrize("isl,osl,rate,pool", [(4096, 512, 6.0, "prefill"), (256, 2048, 20.0, "decode")])
def test_above_saturation_the_queue_grows_where_the_analytic_model_is_capacity_limited(pools, isl, osl, rate, pool):
    a = _analytic(pools, isl, osl, rate=rate)
    assert a.capacity_limited[0] and np.isinf(a.ttft_s[0])
    assert (a.prefill_capacity < rate) == (pool == "prefill")  # the pool that binds
    w = Workload(Lengths("fixed", isl), Lengths("fixed", osl), rate=rate)
    few, many = _sim(pools, w, 300), _sim(pools, w, 1200)
    queue = (lambda s: s.max_queue) if pool == "prefill" else (lambda s: s.max_decode_queue)
    assert queue(many) > 3 * queue(few) > 0
    assert many.summary(8)["ttft_s"] > 3 * few.summary(8)["ttft_s"]


def test_seeded_runs_are_identical_and_another_seed_differs(pools):
    w = Workload(Lengths("uniform", 256, 4096), Lengths("lognormal", 5.5, 0.6), rate=3.0, seed=7)
    a, b = _sim(pools, w, 400), _sim(pools, w, 400)
    for x, y in zip((a.ttft_s, a.tpot_s, a.e2e_s, a.finish_s, a.queue_len), (b.ttft_s, b.tpot_s, b.e2e_s, b.finish_s,
                                                                             b.queue_len)):
        assert np.array_equal(x, y, equal_nan=True)
    assert (a.steps, a.prefill_passes, a.max_blocks_used) == (b.steps, b.prefill_passes, b.max_blocks_used)
    assert not np.array_equal(a.ttft_s, _sim(pools, replace(w, seed=8), 400).ttft_s)


@pytest.mark.parametrize("w", [
    Workload(Lengths("uniform", 64, 4096), Lengths("lognormal", 5.0, 0.8), concurrency=48, seed=1),
    Workload(Lengths("fixed", 2048), Lengths("fixed", 256), concurrency=64, arrivals="together"),
    Workload(Lengths("lognormal", 6.5, 0.7), Lengths("uniform", 1, 600), rate=6.0, cache_hit=0.3, seed=2),
])
def test_every_request_finishes_in_order_of_its_stages_and_tokens_are_conserved(pools, w):
    s = _sim(pools, w, 400)
    req = w.requests(400)
    assert np.all(s.first_token_s > s.arrival_s) and np.all(s.finish_s >= s.first_token_s)
    assert np.all(s.ttft_s > s.kv_transfer_s)
    assert s.tokens_out == int(np.sum(req.osl)) and s.prefill_tokens == int(np.sum(prefill_tokens(req.isl,
                                                                                                   w.cache_hit)))
    assert 0 < s.max_blocks_used <= s.kv_blocks and s.preemptions == 0
    sm = s.summary(8)
    assert sm["ttft_p99_s"] >= sm["ttft_p50_s"] and sm["tpot_p99_s"] >= sm["tpot_p50_s"]


def test_a_small_decode_cache_queues_admissions_and_never_overfills(pools):
    pre, dec, prof = pools
    small = replace(prof, hbm_fraction=0.6)  # the decode pool's cache holds a few dozen 8k-token sequences
    w = Workload(Lengths("fixed", 4096), Lengths("fixed", 4096), concurrency=128)
    s = simulate_disagg(pre, dec, prof, small, w, 400)
    per_seq = -(-(4096 + 4096 - 1) // small.block_size)
    assert s.kv_blocks < 128 * per_seq  # fewer than the clients' sequences fit
    assert s.max_decode_queue > 0 and s.max_blocks_used <= s.kv_blocks
    assert s.max_blocks_used > s.kv_blocks - per_seq  # admission fills the cache up to the last whole sequence


def test_a_trace_runs_as_its_arrivals_say(pools, tmp_path):
    t = np.arange(50) * 0.5
    req = Requests(t, np.full(50, 1000, np.int64), np.full(50, 100, np.int64))
    w = Workload(Lengths("fixed", 1), Lengths("fixed", 1), trace=req)
    s = _sim(pools, w, 50)
    assert np.array_equal(s.arrival_s, t) and np.all(np.isfinite(s.finish_s))


def test_serve_disagg_simulate_gives_percentiles_from_the_requests():
    kw = dict(mode="disagg", rate=[2.0], isl=2048, osl=256,
              pools=dict(prefill_chips=4, decode_chips=4, prefill_tp=4, decode_tp=4))
    an = serve("llama-3.1-70b", "hgx-h100-8", **kw).rows()[0]
    sim = serve("llama-3.1-70b", "hgx-h100-8", method="simulate", requests=500, seed=1, **kw).rows()[0]
    assert an["ttft_p99_s"] == an["ttft_s"]  # the analytic model has means only
    assert sim["ttft_p99_s"] > sim["ttft_p50_s"] and sim["sim_requests"] == 500
    assert sim["ttft_s"] == pytest.approx(an["ttft_s"], rel=0.10)
    assert "simulate" in serve("llama-3.1-70b", "hgx-h100-8", method="simulate", requests=100, **kw).title
