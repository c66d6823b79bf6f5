"""Each validation case's KV cache under its engine's own memory rule (case_setup.case_profile): TensorRT-LLM's
free_gpu_memory_fraction is a share of the HBM left after weights and activations, vLLM's --gpu-memory-utilization
and SGLang's --mem-fraction-static shares of the total for weights, activations and KV. Every aggregated case once
took TensorRT-LLM's 0.9 of free, which gives a vLLM or SGLang cache 0.1 x the weights more than the engine has."""

from __future__ import annotations

import pytest

from tokenomy.validation.case_setup import capacity_batch, case_deployment, case_profile
from tokenomy.validation.load import cases


@pytest.fixture(scope="module")
def by_id():
    return {k.case.id: k.case for k in cases() if k.kind == "serving"}


@pytest.mark.parametrize("case_id,rule", [
    ("trtllm014-llama-3-1-70b-h200-tp4-467-256-qps32-itl", (0.9, "free")),  # stated kv_free_fraction 0.9
    ("inferencex-vllm-mm25-b200-nvfp4-tp1-8k1k-c256-tpot", (0.9, "total")),  # recipe --gpu-memory-utilization 0.90
    ("inferencex-sglang0512-glm5-b200-tp8-8k1k-c256-tpot", (0.85, "total")),  # recipe --mem-fraction-static 0.85
    ("inferencex-sglang0512-dsr1-b200-tp4-8k1k-c1-tpot", (0.95, "total")),  # the TP4 recipe's 0.95 (TP8: 0.82)
])
def test_each_case_takes_its_engines_rule(by_id, case_id, rule):
    p = case_profile(by_id[case_id])
    assert (p.hbm_fraction, p.fraction_of) == rule


@pytest.mark.parametrize("source,rule", [("vllm-perf-ci-latency-2024", (0.9, "total")),  # vLLM's default
                                         ("inferencex-sglang-0.5.7-h200", (0.81, "total"))])  # SGLang's at TP 8
def test_a_case_stating_no_fraction_takes_its_engines_default(source, rule):
    c = next(k.case for k in cases() if k.kind == "serving" and k.source.id == source)
    assert c.gpu_memory_utilization is None and c.kv_free_fraction is None
    p = case_profile(c)
    assert (p.hbm_fraction, p.fraction_of) == rule


def test_minimax_nvfp4_on_one_b200_holds_what_the_measurement_shows(by_id):
    """MiniMax-M2.5 NVFP4 on one B200 (130 GB of weights in 192 GB) at 8k/1k: the measured TPOT at 256 clients
    (22.58 ms) equals the one at 32 (22.6 ms) and the throughput is flat (1,330 vs 1,300 tok/s/GPU), so vLLM ran
    ~32-35 sequences. 0.9 of the total leaves ~42 GB for KV and activations (~1 GB a sequence): under 40 held;
    TensorRT-LLM's rule (0.9 of the free 62 GB, 56 GB) held 49."""
    c = by_id["inferencex-vllm-mm25-b200-nvfp4-tp1-8k1k-c256-tpot"]
    held = capacity_batch(case_deployment(c), c)
    assert 30 <= held < 40
    as_free = capacity_batch(case_deployment(c), c.model_copy(update={"gpu_memory_utilization": None,
                                                                        "kv_free_fraction": 0.9}))
    assert as_free > held + 8
