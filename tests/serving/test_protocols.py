"""Benchmark protocols as workloads (serving/protocol.py, serving/protocol_run.py): a closed loop started as the tools
start it, each metric reduced as the tool's code reduces it."""

import dataclasses

import numpy as np
import pytest

import tokenomy as tk
from tokenomy.answers.engines import benchmark_protocol, engine_profile
from tokenomy.answers.resolve import deployment
from tokenomy.core.layout import Layout
from tokenomy.serving.protocol_run import run_protocol
from tokenomy.serving.scheduler import step_time
from tokenomy.serving.simulator import simulate
from tokenomy.serving.workload import Lengths, Workload


@pytest.fixture(scope="module")
def h100_8b():
    """Llama-3.1-8B on one H100 under TensorRT-LLM's profile (whole prompts, 8,192-token budget)."""
    dep = deployment("llama-3.1-8b", "h100-sxm", layout=Layout(tp=1), serving_engine="trtllm")
    return dep, engine_profile("trtllm", 1)


@pytest.mark.parametrize("name", ["trtllm-bench", "vllm-bench"])
def test_eight_users_wait_for_eight_prefills_back_to_back(h100_8b, name):
    """8 clients at t = 0 with fixed 1024/128: the 8 prompts share one 8,192-token step and finish together, so
    every wave comes back together: TTFT = the engine's step of 8 prompts (+ the request overhead), ~5-8x one
    prompt's prefill; the steady state (staggered clients) sees about one prefill."""
    dep, prof = h100_8b
    run = run_protocol(dep, prof, benchmark_protocol(name), 1024, 128, concurrency=8, prompts=80)
    ttft = run.summary(1)["ttft_s"]
    o_req = float(dep.eff.request_overhead_s)
    eight = float(step_time(dep, 0, 1.0, 8 * 1024, 512)) + o_req
    one = float(step_time(dep, 0, 1.0, 1024, 512)) + o_req
    assert ttft == pytest.approx(eight, rel=0.05)
    assert ttft > 4.0 * one
    steady = tk.serve("llama-3.1-8b", "h100-sxm", concurrency=8, isl=1024, osl=128, engine="trtllm", tp=1)
    assert steady.rows()[0]["ttft_s"] < 0.5 * ttft


def test_prompt_count_ten_per_client_completes_exactly(h100_8b):
    dep, prof = h100_8b
    p = benchmark_protocol("inferencex")
    assert p.prompt_count(16) == 160
    run = run_protocol(dep, prof, p, 1024, 128, concurrency=16)
    assert len(run.ttft_s) == 160 and np.all(np.isfinite(run.finish_s)) and np.all(np.isfinite(run.ttft_s))
    assert run.summary(1)["sim_requests"] == 160
    # InferenceX draws both lengths from [int(0.8 L), L]
    lo = p.lengths(128, output=True)
    assert (lo.kind, lo.a, lo.b) == ("uniform", 102.0, 128.0)
    assert np.all((run.osl >= 102) & (run.osl <= 128)) and len(set(run.osl)) > 5


def test_length_draws_as_each_tool_draws_them():
    v, s = benchmark_protocol("vllm-bench"), benchmark_protocol("sglang-bench")
    v8 = dataclasses.replace(v, range_ratio=0.8)
    assert (v8.lengths(1000, False).a, v8.lengths(1000, False).b) == (199.0, 1800.0)  # [floor(L(1-r)), ceil(L(1+r))]
    assert (s.lengths(1024, False).a, s.lengths(1024, False).b) == (1.0, 1024.0)  # default r = 0: [max(0, 1), L]
    assert v.lengths(1024, False).kind == "fixed"


def test_each_tools_statistic_changes_the_figure_as_its_code_does(h100_8b):
    """A skewed run (64 clients: a first wave of 8 prefill steps, then waves of one step): the mean TTFT is pulled up
    by the first wave, the median is not; trtllm-bench's p50 is sorted[int(n/2)]; GuideLLM's TPOT counts the first
    token (latency/out), the others do not ((latency - TTFT)/(out - 1))."""
    dep, prof = h100_8b
    base = benchmark_protocol("vllm-bench")
    run = run_protocol(dep, prof, base, 1024, 128, concurrency=64, prompts=320)
    mean = run.summary(1)["ttft_s"]
    median = dataclasses.replace(run, protocol=dataclasses.replace(base, ttft_statistic="median")).summary(1)["ttft_s"]
    lower = dataclasses.replace(run, protocol=dataclasses.replace(base, ttft_statistic="p50-index")).summary(1)
    assert mean > 1.2 * median
    assert median == pytest.approx(float(np.median(run.ttft_s)))
    assert lower["ttft_s"] == float(np.sort(run.ttft_s)[len(run.ttft_s) // 2])
    guide = dataclasses.replace(run, protocol=benchmark_protocol("guidellm")).summary(1)["tpot_s"]
    assert guide == pytest.approx(float(np.mean(run.e2e_s / run.osl)))
    decode = run.summary(1)["tpot_s"]
    assert decode == pytest.approx(float(np.mean((run.e2e_s - run.ttft_s) / (run.osl - 1))))
    assert guide != pytest.approx(decode, rel=0.01)


def test_throughput_counts_the_ramp_and_the_drain(h100_8b):
    dep, prof = h100_8b
    run = run_protocol(dep, prof, benchmark_protocol("vllm-bench"), 1024, 128, concurrency=32, prompts=96)
    s = run.summary(1)
    assert s["output_tokens_per_s"] == pytest.approx(96 * 128 / (np.max(run.finish_s) - np.min(run.arrival_s)))


def test_whole_sequence_reservation_never_preempts(h100_8b):
    """TensorRT-LLM admits a request only when its whole sequence's KV fits (GUARANTEED_NO_EVICT): 3,000 requests
    queued at once never preempt; the same run under a prompt-only admission (vLLM's) does."""
    dep, prof = h100_8b
    assert prof.reserve_output and not engine_profile("vllm", 1).reserve_output
    w = Workload(Lengths("fixed", 128), Lengths("fixed", 2048), concurrency=3000, arrivals="together")
    kept = simulate(dep, prof, w, 3000)
    evicting = simulate(dep, dataclasses.replace(prof, reserve_output=False), w, 3000)
    assert kept.preemptions == 0 and np.all(np.isfinite(kept.finish_s))
    assert evicting.preemptions > 0


def test_default_stays_the_steady_state():
    kw = dict(concurrency=[4, 32], isl=1024, osl=256, engine="vllm", tp=1)
    plain = tk.serve("llama-3.1-8b", "h100-sxm", **kw).rows()
    steady = tk.serve("llama-3.1-8b", "h100-sxm", protocol="steady", **kw).rows()
    assert plain == steady


def test_bad_protocol_name_is_a_value_error_naming_protocol():
    with pytest.raises(ValueError, match=r"^protocol: 'bogus' is not allowed; allowed: steady, .*inferencex"):
        tk.serve("llama-3.1-8b", "h100-sxm", concurrency=8, protocol="bogus")
