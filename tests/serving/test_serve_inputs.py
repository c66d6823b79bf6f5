"""Inputs that the analytic path used to pass through: a running batch below the replicas, a cache-hit fraction or
an arrival pattern out of range, a length distribution with an absurd mean, and the layout batch of an engine."""

import math

import numpy as np
import pytest

from tokenomy.answers.workloads import engine_profile, serve
from tokenomy.serving.workload import Lengths


def test_fewer_running_sequences_than_replicas_still_gets_times():
    # tp4 dp2 on 8 H100s at 0.1 req/s: about one request running, fewer than the 2 replicas; the busiest replica
    # runs it (the other idles) — times, not blanks beside a goodput
    r = serve("llama-3.1-8b", "hgx-h100-8", rate=[0.1], tp=4, dp=2, isl=1024, osl=256).rows()[0]
    assert r["ttft_s"] is not None and r["tpot_s"] is not None
    assert 0 < r["tpot_s"] < r["ttft_s"] and r["goodput_requests_per_s"] == pytest.approx(0.1)
    one = serve("llama-3.1-8b", "hgx-h100-8", rate=[0.1], tp=4, isl=1024, osl=256).rows()[0]  # one replica of tp4
    assert r["tpot_s"] == pytest.approx(one["tpot_s"], rel=0.05)


@pytest.mark.parametrize("hit", [1.0, 1.5, -0.1, math.nan])
def test_cache_hit_outside_zero_one_is_refused_for_every_method(hit):
    for kw in ({}, {"method": "simulate", "requests": 50}):
        with pytest.raises(ValueError, match=r"^cache_hit: .* is out of range \[0, 0.99\]"):
            serve("llama-3.1-8b", "h100-sxm", concurrency=[4], cache_hit=hit, **kw)


def test_unknown_arrival_pattern_is_refused():
    with pytest.raises(ValueError, match="^arrivals: 'foo' is not allowed; allowed: staggered, together"):
        serve("llama-3.1-8b", "h100-sxm", concurrency=[4], arrivals="foo")


@pytest.mark.parametrize("text", ["lognormal:100:1", "lognormal:1000:1", "uniform:1:1e9"])
def test_length_distributions_with_absurd_means_are_refused(text):
    with pytest.raises(ValueError, match="^isl: .* tokens; at most 16,777,216"):
        Lengths.parse("isl", text)


def test_the_layout_batch_is_the_engines_own_cap():
    # 1,024 users on TensorRT-LLM (max batch 2,048): the layout is chosen for 1,024 running, as with an explicit cap
    a = serve("llama-3.1-8b", "hgx-h100-8", concurrency=[1024], engine="trtllm").rows()[0]
    b = serve("llama-3.1-8b", "hgx-h100-8", concurrency=[1024], engine="trtllm",
              max_batch=engine_profile("trtllm").max_batch).rows()[0]
    assert a["plan"] == b["plan"] and a["tokens_per_s_per_chip"] == pytest.approx(b["tokens_per_s_per_chip"])


@pytest.mark.parametrize("kw", [{"context": 4096}, {"min_tokens_per_user": 20.0}, {"max_ttft": 1.0},
                                {"hop_latency": 1e-3}])
def test_plan_with_a_workload_refuses_the_bare_searchs_knobs(kw):
    from tokenomy.answers.layouts import plan
    name = next(iter(kw))
    with pytest.raises(ValueError, match=f"^{name}: not used with a workload"):
        plan("llama-3.1-70b", "hgx-h100-8", concurrency=[16], **kw)
