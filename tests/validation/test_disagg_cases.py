"""The sources added for issue 26 load with their stated case counts and ids, and every disaggregated case is
predicted through serving.disagg on its own two pools (not the aggregated path)."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest

from tokenomy.catalog import loader
from tokenomy.core.deployment import Deployment
from tokenomy.core.layout import Layout
from tokenomy.serving.disagg import DisaggLoad, disagg
from tokenomy.serving.scheduler import profile_of
from tokenomy.validation import load, run
from tokenomy.validation.schema import ServingCase

# source id -> (serving cases, the pattern every id follows)
NEW_SOURCES = {
    "inferencex-dynamo-sglang-0.5.14-gb300-qwen35-disagg":
        (21, r"inferencex-dynsglang0514-qwen35-gb300-1p1d-tp4-8k1k-c\d+-(tpot|ttft|tput)"),
    "inferencex-blog-dsv4pro-nvl72-dynamo-vllm-disagg":
        (28, r"inferencex-dynvllm0200-dsv4pro-gb[23]00-[a-z0-9-]+-8k1k-c\d+-(tpot|tput)"),
    "inferencex-blog-minimax-m25-vllm-h100-b200":
        (54, r"inferencex-vllm-mm25-(h100|b200)-(fp8|nvfp4)-(tp|tep)\d-8k1k-c\d+-(tpot|tput)"),
    "inferencex-sglang-0.5.12-b300-dsr1-fp4":
        (24, r"inferencex-sglang0512-dsr1fp4-b300-tep[48]-1k1k-c\d+-(tpot|tput)"),
    "inferencex-blog-kimik25-mi355x-vllm":
        (14, r"inferencex-vllm0180-kimik25-mi355x-tp[48]-8k1k-c\d+-(tpot|tput)"),
    "inferencex-blog-llama70b-best-gpu":
        (20, r"inferencex-llama70b-(b200|h200|h100|mi300x|mi355x)-fp[48]-(trt|vllm)-tp[124]-(8k1k|1k1k)-c\d+-(tpot|tput)"),
    "inferencex-blog-gptoss120b-best-gpu":
        (16, r"inferencex-gptoss120b-(b200|h200|h100|mi300x)-(trt|vllm)-tp[12]-(8k1k|1k1k)-c\d+-(tpot|tput)"),
    "inferencex-blog-qwen35-best-gpu-sglang":
        (24, r"inferencex-sglang-qwen35-(b200|h200|mi355x|mi300x)-(fp8|bf16)-(tp8|tep4)-(8k1k|1k1k)-c\d+-(tpot|tput)"),
}


def _disagg_cases() -> list[load.Case]:
    return [c for c in load.cases() if c.kind == "serving" and c.case.mode == "disagg"]


@pytest.mark.parametrize("source", sorted(NEW_SOURCES))
def test_new_source_loads_its_cases(source):
    n, pattern = NEW_SOURCES[source]
    cases = load.cases((source,))
    assert len(cases) == n
    assert all(re.fullmatch(pattern, c.id) for c in cases)


def test_disaggregated_cases_exist_and_are_held_out():
    cases = _disagg_cases()
    assert len(cases) >= 21
    assert all(c.split == "test" for c in cases)
    assert all(c.case.chips == c.case.prefill.chips + c.case.decode.chips for c in cases)


def _by_hand(c: ServingCase):
    """serving.disagg on the case's pools, each built here from the pool's fields (workers side by side as dp,
    attention-DP over the EP ranks where stated), under the chip's calibrated terms with the host overlap of the
    case's engine at its version, the scheduler caps and memory share the pool states (else the case's, else its
    engine's own rule) and the case's scheduler receive interval (the decode side's receive delays the prefill's
    start: serving/disagg.py, bootstrap)."""
    from tokenomy.validation.disagg_cases import case_efficiency

    eff = case_efficiency(c, load.efficiency_for(c.hardware).terms)
    m, hw = loader.model(c.model), loader.hardware(c.hardware)
    weights = None if c.weight_dtype == "checkpoint" else c.weight_dtype
    deps, profs = [], []
    for pool in (c.prefill, c.decode):
        layout = Layout(tp=pool.tp, ep=pool.ep, dp=pool.chips // (pool.tp * pool.ep),
                        attn_dp=pool.attn_dp if pool.ep > 1 else None)
        deps.append(Deployment(m, hw, layout, weights, c.kv_dtype, eff))
        prof = profile_of(loader.engine_file(c.engine), pool.tp, max_num_tokens=pool.max_num_tokens,
                          max_batch=pool.max_batch or 4096, version=c.engine_version)
        share = ((pool.gpu_memory_utilization, "total") if pool.gpu_memory_utilization else
                 (c.gpu_memory_utilization, "total") if c.gpu_memory_utilization else
                 (c.kv_free_fraction, "free") if c.kv_free_fraction else (prof.hbm_fraction, prof.fraction_of))
        profs.append(dataclasses.replace(prof, hbm_fraction=share[0], fraction_of=share[1],
                                         recv_interval=c.scheduler_recv_interval or prof.recv_interval))
    return disagg(deps[0], deps[1], profs[0], profs[1], DisaggLoad(c.isl, c.osl, concurrency=c.concurrency))


def test_every_disaggregated_case_is_predicted_through_the_disagg_path():
    cases = _disagg_cases()
    p = run.prepare(tuple({c.source.id for c in cases}))
    assert len(p.serving.cases) == 0  # none of them went to the aggregated (vectorised) path
    rows = {r["id"]: r for r in run.rows(p)}
    assert set(rows) == {c.id for c in cases}
    for c in cases:
        r = rows[c.id]
        assert r["mode"] == "disagg" and math.isfinite(r["calibrated"]) and r["calibrated"] > 0
        s = _by_hand(c.case)
        want = {"tpot_s": s.tpot_s, "ttft_s": s.ttft_s, "throughput_per_chip": s.tokens_per_s_per_chip}[c.case.metric]
        assert r["calibrated"] == pytest.approx(float(want[0]), rel=1e-9)


def test_a_closed_loop_point_obeys_littles_law():
    """At one load point the three metrics are one steady state: C = X·(TTFT + (OSL − 1)·TPOT), X the requests/s
    (tokens/s per chip · chips / OSL) — what a per-metric path that ignored the others would break."""
    cases = [c for c in _disagg_cases() if c.case.concurrency == 16]
    rows = {r["metric"]: r for r in run.rows(run.prepare(tuple({c.source.id for c in cases})))
            if r["id"] in {c.id for c in cases}}
    c = cases[0].case
    X = rows["throughput_per_chip"]["calibrated"] * c.chips / c.osl
    cycle = rows["ttft_s"]["calibrated"] + (c.osl - 1) * rows["tpot_s"]["calibrated"]
    assert X * cycle == pytest.approx(c.concurrency, rel=0.02)


BASE = dict(id="x", model="qwen3.5-397b-a17b", hardware="gb300", chips=8, tp=4, weight_dtype="nvfp4",
            kv_dtype="fp8", scenario="concurrency", metric="tpot_s", isl=1000, osl=100, concurrency=4, value=0.01,
            published="-", engine="sglang")


@pytest.mark.parametrize("extra, words", [
    (dict(mode="disagg"), "needs both 'prefill' and 'decode'"),
    (dict(mode="disagg", prefill=dict(chips=4, tp=4), decode=dict(chips=2, tp=2)), "prefill.chips + decode.chips"),
    (dict(prefill=dict(chips=4, tp=4), decode=dict(chips=4, tp=4)), "need mode = 'disagg'"),
    (dict(mode="disagg", prefill=dict(chips=4, tp=4), decode=dict(chips=4, tp=4), scenario="max_throughput"),
     "concurrency or request_rate"),
    (dict(mode="disagg", prefill=dict(chips=6, tp=4), decode=dict(chips=2, tp=2)), "multiple of tp*ep*pp"),
])
def test_disaggregated_case_schema_says_what_is_wrong(extra, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        ServingCase(**{**BASE, **extra})


def test_an_aggregated_case_states_expert_parallelism():
    """tp 1, ep 4 on 8 chips: two replicas whose experts are spread 4 ways, attention over the 4 ranks (vLLM TP4 +
    --enable-expert-parallel); chips must be a multiple of tp*ep."""
    from tokenomy.validation.case_setup import case_layout

    layout = case_layout(ServingCase(**{**BASE, "tp": 1, "ep": 4}))
    assert (layout.tp, layout.ep, layout.dp, layout.attn_dp) == (1, 4, 2, False)
    assert case_layout(ServingCase(**{**BASE, "tp": 1, "ep": 8, "attn_dp": True})).attn_dp is True
    with pytest.raises(ValueError, match=re.escape("chips must be a multiple of tp*ep")):
        ServingCase(**{**BASE, "tp": 2, "ep": 8})


def test_the_point_key_joins_only_a_points_measurements():
    """point_key: the cases of one point (a source's metrics at one load) share a key; a field of the point run
    (the load, a pool's layout) parts them."""
    from tokenomy.validation.disagg_cases import point_key

    c = _disagg_cases()[0].case
    other_metric = c.model_copy(update={"id": c.id + "-x", "metric": "ttft_s", "value": c.value * 2})
    assert point_key(other_metric) == point_key(c)
    assert point_key(c.model_copy(update={"concurrency": (c.concurrency or 1) + 1})) != point_key(c)
    pool = c.decode.model_copy(update={"tp": c.decode.tp * 2})
    assert point_key(c.model_copy(update={"decode": pool})) != point_key(c)


def test_the_point_cache_changes_no_prediction(monkeypatch):
    """predict_disagg solves each point once (point_key): the same predictions as solving every case on its own."""
    from tokenomy.validation import disagg_cases as dc

    every = _disagg_cases()
    keys = list(dict.fromkeys(dc.point_key(k.case) for k in every))[:2]  # two points, each with several metrics
    cases = [k for k in every if dc.point_key(k.case) in keys]
    assert len(cases) > len(keys)  # cases share a point: the cache is used
    shared = dc.predict_disagg(cases, None)
    monkeypatch.setattr(dc, "point_key", lambda c: c.id)  # no two cases share a key: each solved alone
    alone = dc.predict_disagg(cases, None)
    np.testing.assert_array_equal(shared.value, alone.value)
    np.testing.assert_array_equal(shared.batch, alone.batch)
    np.testing.assert_array_equal(shared.capacity_limited, alone.capacity_limited)
    assert shared.bound == alone.bound
