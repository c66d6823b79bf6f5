"""The simulator's invariants on the engine (Llama-3.1-70B on 8 x H100, vLLM profile) and its closed forms."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenomy.answers.workloads import engine_profile
from tokenomy.serving.sim_blocks import DecodeBlocks
from tokenomy.serving.sim_table import C_GRID, P_GRID, StepTable
from tokenomy.serving.simulator import simulate
from tokenomy.serving.workload import Lengths, Requests, Workload, prefill_tokens




def _fields(s):
    return [s.ttft_s, s.tpot_s, s.e2e_s, s.arrival_s, s.finish_s, s.queue_len, s.first_token_s]


WORKLOADS = [
    Workload(Lengths("uniform", 64, 4096), Lengths("lognormal", 5.0, 0.8), concurrency=48, seed=1),
    Workload(Lengths("fixed", 2048), Lengths("fixed", 256), concurrency=64, arrivals="together"),
    Workload(Lengths("lognormal", 6.5, 0.7), Lengths("uniform", 1, 600), rate=8.0, cache_hit=0.3, seed=2),
]


@pytest.mark.parametrize("w", WORKLOADS)
def test_every_request_finishes_and_tokens_are_conserved(dep, prof, w):
    s = simulate(dep, prof, w, 400)
    req = w.requests(400)
    assert np.all(np.isfinite(s.finish_s)) and np.all(s.finish_s >= s.first_token_s)
    assert np.all(s.first_token_s > s.arrival_s)
    assert s.tokens_out == int(np.sum(req.osl))
    assert s.prefill_tokens == int(np.sum(prefill_tokens(req.isl, w.cache_hit)))  # nothing recomputed
    assert s.preemptions == 0 and 0 < s.max_blocks_used <= s.kv_blocks


@pytest.mark.parametrize("w", WORKLOADS)
def test_the_same_seed_gives_the_same_run_bit_for_bit(dep, prof, w):
    a, b = simulate(dep, prof, w, 300), simulate(dep, prof, w, 300)
    assert all(np.array_equal(x, y, equal_nan=True) for x, y in zip(_fields(a), _fields(b)))
    assert (a.steps, a.max_blocks_used, a.max_queue) == (b.steps, b.max_blocks_used, b.max_queue)


def test_another_seed_gives_another_run(dep, prof):
    w = WORKLOADS[2]
    a, c = simulate(dep, prof, w, 300), simulate(dep, prof, replace(w, seed=3), 300)
    assert not np.array_equal(a.ttft_s, c.ttft_s)


def test_a_tiny_cache_preempts_and_every_request_still_finishes(dep):
    prof = replace(engine_profile("vllm", 8, max_batch=1024), hbm_fraction=0.22)
    w = Workload(Lengths("uniform", 1024, 4096), Lengths("uniform", 256, 1024), concurrency=200, seed=5)
    s = simulate(dep, prof, w, 500)
    req = w.requests(500)
    assert s.kv_blocks < 200 * 4096 / prof.block_size  # the cache holds far fewer than the clients' prompts
    assert s.preemptions > 0 and s.max_blocks_used <= s.kv_blocks
    assert np.all(np.isfinite(s.finish_s)) and s.tokens_out == int(np.sum(req.osl))
    assert s.prefill_tokens > int(np.sum(req.isl))  # recompute prefills again what preempted requests had cached
    assert s.max_queue > 0


def test_open_loop_above_capacity_the_queue_grows_with_simulated_time(dep, prof):
    w = Workload(Lengths("fixed", 1024), Lengths("fixed", 1024), rate=40.0)  # far above 8 x H100 at 1k/1k
    s = simulate(dep, prof, w, 3000)
    thirds = np.array_split(np.argsort(s.arrival_s), 3)
    q = [float(np.mean(s.queue_len[i])) for i in thirds]
    t = [float(np.mean(s.ttft_s[i])) for i in thirds]
    assert q[0] < q[1] < q[2] and q[2] > 1.5 * q[1]
    assert t[0] < t[1] < t[2]
    served = len(s.finish_s) / float(np.max(s.finish_s))
    assert served < 0.5 * 40.0  # the requests/s it finishes fall far short of those that arrive


def test_a_burst_in_a_trace_queues_then_drains(dep, prof):
    n = 300
    arrival = np.r_[np.zeros(n), np.full(n, 1e4)]  # two identical bursts, far enough apart to drain in between
    tr = Requests(arrival, np.full(2 * n, 1024), np.full(2 * n, 128))
    s = simulate(dep, prof, Workload(Lengths("fixed", 1), Lengths("fixed", 1), trace=tr), 2 * n)
    first, second = s.ttft_s[:n], s.ttft_s[n:]
    assert s.queue_len[:n].tolist() == list(range(n))  # everyone arrives at once: each sees those before it
    assert np.all(np.diff(first) >= 0) and first[-1] > 10 * first[0]
    assert second == pytest.approx(first, rel=1e-9)  # the system was empty again: the same burst, the same times


def _grid_table(seed, budget=64.0, n_max=6, c_lo=100.0, dc=37.0):
    t = 0.01 + 0.01 * np.random.default_rng(seed).random((n_max + 1, P_GRID + 1, C_GRID + 1))
    return StepTable(t, budget, c_lo, dc)


@given(st.integers(0, 6), st.floats(1.0, 600.0), st.integers(1, 400), st.integers(0, 3))
def test_a_decode_run_is_the_sum_of_its_steps(n, ctx, k, seed):
    tb = _grid_table(seed)
    steps = [tb(n, ctx + j, 0.0) for j in range(k)]
    assert tb.decode_run_s(n, ctx, k) == pytest.approx(sum(steps), rel=1e-12)
    T = sum(steps) * 0.37
    m = tb.steps_to_reach(n, ctx, T, k)
    assert sum(steps[:m]) >= T * (1 - 1e-12) and (m == 1 or sum(steps[:m - 1]) < T * (1 + 1e-12))


@given(st.lists(st.integers(1, 500), min_size=0, max_size=40), st.integers(1, 32), st.integers(0, 300),
       st.integers(0, 60), st.integers(1, 100))
def test_decoder_blocks_in_closed_form_equal_the_direct_count(K, b, S, free, k_max):
    d = DecodeBlocks(b)
    for x in K:
        d.add(x - S)  # offsets: K cached tokens at step S
    direct = lambda S2: sum(-(-(x + S2 - S) // b) for x in K)  # noqa: E731
    assert d.held(S) == direct(S) and d.held(S + 7) == direct(S + 7)
    k = d.steps_within(S, free, k_max)
    assert direct(S + k) - direct(S) <= free and (k == k_max or direct(S + k + 1) - direct(S) > free)


def test_a_staggered_closed_loop_starts_in_its_steady_state(dep, prof):
    """64 clients, 2048 in / 256 out: a request's prompt has its step to itself (one arrival per ~4 steps). Spread
    over a lifetime without the prefill share, the first prompts queued into convoys that fixed lengths keep in
    lockstep for the whole run (median TTFT 2.6 x this)."""
    from tokenomy.serving.scheduler import step_time

    s = simulate(dep, prof, Workload(Lengths("fixed", 2048), Lengths("fixed", 256), concurrency=64), 1280)
    alone = float(step_time(dep, 63, 2048 + 128, 2048, 1024)) + float(np.asarray(dep.eff.request_overhead_s))
    assert float(np.median(s.ttft_s[s.counted])) == pytest.approx(alone, rel=0.01)


def test_an_engine_that_does_not_chunk_takes_a_prompt_longer_than_max_num_tokens_whole(dep):
    """TensorRT-LLM's profile: no chunked prefill, so the budget is sized to the longest prompt beside the batch
    (scheduler.step_budget) and a 10,000-token prompt is one step; a chunking engine takes two."""
    from tokenomy.serving.scheduler import step_time

    w = Workload(Lengths("fixed", 10_000), Lengths("fixed", 4), concurrency=1)
    trt = engine_profile("trtllm", 8)
    assert not trt.chunked_prefill and trt.max_num_tokens < 10_000
    s = simulate(dep, trt, w, 3)
    one = float(step_time(dep, 0, 1.0, 10_000, 5_000)) + float(np.asarray(dep.eff.request_overhead_s))
    assert np.all(np.isfinite(s.finish_s)) and s.ttft_s[0] == pytest.approx(one, rel=0.02)
    v = simulate(dep, engine_profile("vllm", 8), w, 3)
    assert v.steps == s.steps + 3  # one more prefill step per request
