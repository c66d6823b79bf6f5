"""Disaggregated validation cases: the sources added for issue 26 load with their stated case counts and ids, and
every disaggregated case is predicted through serving.disagg on its own two pools (not the aggregated path)."""

from __future__ import annotations

import dataclasses
import math
import re

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
    """serving.disagg on the case's pools, each built here from the pool's fields (one TP worker per pool), under
    the chip's calibrated terms with the host overlap of the case's engine at its version."""
    from tokenomy.validation.disagg_cases import case_efficiency

    eff = case_efficiency(c, load.efficiency_for(c.hardware).terms)
    m, hw = loader.model(c.model), loader.hardware(c.hardware)
    deps, profs = [], []
    for pool in (c.prefill, c.decode):
        assert pool.ep == pool.pp == 1 and pool.chips == pool.tp  # the pools of the sources checked here
        deps.append(Deployment(m, hw, Layout(tp=pool.tp, dp=1), c.weight_dtype, c.kv_dtype, eff))
        prof = profile_of(loader.engine_file(c.engine), pool.tp, max_batch=4096, version=c.engine_version)
        profs.append(dataclasses.replace(prof, hbm_fraction=c.kv_free_fraction, fraction_of="free"))
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
