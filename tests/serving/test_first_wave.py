"""The first wave of a benchmark at request rate inf (serving/first_wave.py): C prompts queued at once on an idle
engine. TensorRT-LLM, which does not chunk prefill, packs floor(N_tok/I) whole prompts a step, so C prompts each
longer than half the budget first-token one step apart: their mean TTFT is (C + 1)/2 prefills. Checked by hand from
the engine's own prefill time and against the iteration-level simulator (an independent implementation: it admits
prompt by prompt)."""

import numpy as np
import pytest

from tokenomy.answers.engines import benchmark_protocol, engine_profile
from tokenomy.answers.resolve import deployment
from tokenomy.core.layout import Layout
from tokenomy.serving import first_wave
from tokenomy.serving.protocol_run import run_protocol
from tokenomy.serving.protocol_waves import estimate
from tokenomy.serving.scheduler import step_time
from tokenomy.serving.simulator import simulate
from tokenomy.serving.steady import Sending, engine_problem, steady
from tokenomy.serving.workload import Lengths, Workload, prefill_context


@pytest.fixture(scope="module")
def trt():
    dep = deployment("llama-3.1-8b", "h100-sxm", layout=Layout(tp=1), serving_engine="trtllm")
    return dep, engine_profile("trtllm", 1)


def _prefill_s(dep, isl, osl, tokens):
    """One prefill-only step of ``tokens`` prompt tokens, as the engine times it (no decodes beside it)."""
    return float(step_time(dep, 0, isl + osl / 2.0, tokens, prefill_context(isl, 0.0, isl)))


def test_whole_prompts_one_a_step_average_c_plus_one_over_two_prefills(trt):
    dep, prof = trt
    C, isl, osl = 8, 5000, 64
    budget = float(engine_problem(dep, prof, isl=isl, osl=osl, load=[C]).points.budget[0])
    assert not prof.chunked_prefill and budget < 2 * isl  # one 5,000-token prompt a step
    o_req = float(np.asarray(dep.eff.request_overhead_s))
    hand = (C + 1) / 2.0 * _prefill_s(dep, isl, osl, isl) + o_req  # prompt j waits j prefills: mean (C + 1)/2
    got = float(steady(dep, prof, isl=isl, osl=osl, concurrency=[C], sending=Sending("together")).ttft_s[0])
    assert got == pytest.approx(hand, rel=1e-6)
    # a chunked count of the same tokens (8 x 5,000 in 8,192-token steps: 5 steps) would give 3 prefills, not 4.5
    assert got > 1.4 * (3.0 * _prefill_s(dep, isl, osl, isl) + o_req)
    sim = simulate(dep, prof, Workload(Lengths("fixed", isl), Lengths("fixed", osl), concurrency=C,
                                       arrivals="together"), C)
    assert float(np.mean(sim.ttft_s)) == pytest.approx(hand, rel=0.05)


def test_whole_prompts_pack_floor_budget_over_prompt_a_step():
    """1,600-token prompts under an 8,192-token budget: 5 a step, so 8 prompts take 2 steps, mean 11/8."""
    assert first_wave.per_step(1600, 8192, True) == 5
    assert first_wave.mean_steps(8, 1600, 8192, True) == pytest.approx((5 * 1 + 3 * 2) / 8)
    assert first_wave.step_tokens(8, 1600, 8192, True) == 8000
    assert first_wave.quantile_steps(0.75, 8, 1600, 8192, True) == 2  # prompt 6 of 8 is in the second step
    # chunked, the same 12,800 tokens fill 2 steps of 8,192: (2 + 1)/2, and a step carries the whole budget
    assert first_wave.mean_steps(8, 1600, 8192, False) == pytest.approx(1.5)
    assert first_wave.step_tokens(8, 1600, 8192, False) == 8192
    # a prompt longer than the budget runs alone: one a step
    assert first_wave.per_step(10_000, 8192, True) == 1 and first_wave.mean_steps(4, 10_000, 8192, True) == 2.5


def test_llmperf_median_ttft_is_the_first_wave(trt):
    """LLMPerf's default 10 requests at 8 clients: 8 are the first wave, so its p50 TTFT sits on the wave's
    staircase (the closed form within 10% of the simulator's run, and well above one prompt alone)."""
    dep, prof = trt
    p = benchmark_protocol("llmperf")
    assert p.prompt_count(8) == 10 and p.ttft_statistic == "median"
    sim = run_protocol(dep, prof, p, 1600, 600, concurrency=8).summary(1)
    est = estimate(dep, prof, p, 1600, 600, [8])
    assert est.ttft_s[0] == pytest.approx(sim["ttft_s"], rel=0.10)
    alone = estimate(dep, prof, p, 1600, 600, [1]).ttft_s[0]
    assert sim["ttft_s"] > 2.0 * alone
