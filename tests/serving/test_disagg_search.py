"""The disaggregated plan search: the prefill pool sized for the decode pool's request rate, splits balanced, the
best plan reproduced by `tokenomy serve --mode disagg` for its pools, $/Mtok, refusals. The ranking rule and SLOs no
plan meets: tests/cli/test_plan_serving.py (one check for agg and disagg)."""

import json

import numpy as np
import pytest
from cli_runner import CliRunner

from tokenomy.answers.layouts import plan
from tokenomy.answers.resolve import deployment
from tokenomy.answers.workloads import engine_profile, plan_disagg, pool_sizes
from tokenomy.catalog import loader
from tokenomy.cli import commands  # noqa: F401
from tokenomy.cli.app import app
from tokenomy.core.layout import Layout
from tokenomy.answers.pools import prefill_choice
from tokenomy.serving.disagg import prefill_capacity, prefill_table

KW = dict(chips=288, concurrency=[256], isl=4096, osl=1024, engine="sglang", ttft_slo=2.0, tpot_slo=0.05)
PRICE = loader.hardware("gb200-nvl72").usd_per_chip_hour


@pytest.fixture(scope="module")
def ds():
    return plan("deepseek-v3", "gb200-nvl72", mode="disagg", **KW)


def test_best_row_is_what_serve_reports_for_its_pools(ds):
    best = ds.extra["best"]
    r = CliRunner().invoke(app, ["serve", "--model", "deepseek-v3", "--hardware", "gb200-nvl72", "--mode", "disagg",
                                 "--prefill-chips", str(best["prefill_chips"]), "--decode-chips",
                                 str(best["decode_chips"]), "--concurrency", "256", "--isl", "4096", "--osl", "1024",
                                 "--engine", "sglang", "--json"])
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.stdout)
    assert row["plan"] == best["plan"]
    for k in ("ttft_s", "tpot_s", "tokens_per_s_per_chip", "tokens_per_s_per_user", "usd_per_mtok_input",
              "usd_per_mtok_output", "requests_per_s"):
        assert row[k] == pytest.approx(best[k], rel=1e-9), k


def test_usd_per_mtok_pays_every_chip_second(ds):
    for r in ds.rows():  # in·ISL + out·OSL = 1e6·(P + D)·$/chip-s / requests/s
        paid = (r["usd_per_mtok_input"] * 4096 + r["usd_per_mtok_output"] * 1024) / 1e6
        assert paid == pytest.approx((r["prefill_chips"] + r["decode_chips"]) * PRICE / 3600 / r["requests_per_s"],
                                     rel=1e-9)


def test_prefill_pool_keeps_up_with_the_decode_pool_and_no_smaller_one_would(ds):
    best = ds.extra["best"]
    assert best["prefill_utilisation"] <= 1.0 and not best["capacity_limited"]
    x = best["requests_per_s"]
    smaller = [p for p in pool_sizes(288, 72) if p < best["prefill_chips"]]
    if smaller:  # the next smaller prefill pool, on its own best layout for this rate, cannot take the prompts
        dep = deployment("deepseek-v3", "gb200-nvl72", layout=Layout())
        prof = engine_profile("sglang", 1)
        try:
            _, mu = prefill_choice(dep, lambda tp: engine_profile("sglang", tp),
                                   prefill_table(dep, prof, smaller[-1], 4096.0), x, 4096.0)
        except ValueError:
            mu = 0.0
        assert mu < x * 1.5  # within one pool-size step of the rate: the split is not over-provisioned


def test_prefill_layout_follows_the_prompt_rate():
    # Llama-3.1-8B on 8 x H100: few prompts a second -> the fastest pass; many -> the layout with the capacity.
    dep = deployment("llama-3.1-8b", "hgx-h100-8", layout=Layout())
    table = prefill_table(dep, engine_profile("vllm", 1), 8, 2048.0)
    prof = lambda tp: engine_profile("vllm", tp)  # noqa: E731
    caps = {}
    for i in range(np.size(table.b_max)):
        lay = table.layouts.at((np.size(table.b_max),), i)
        try:
            caps[lay.label()] = prefill_capacity(dep.with_(layout=lay), prof(int(lay.tp)), 2048.0)
        except ValueError:
            pass
    top = max(caps.values())
    for rate in (1.0, 0.5 * top, 0.95 * top, 2 * top):
        lay, mu = prefill_choice(dep, prof, table, rate, 2048.0)
        assert mu == pytest.approx(caps[lay.label()], rel=1e-12)
        assert mu >= rate if rate <= top else mu == pytest.approx(top, rel=1e-12)


@pytest.mark.parametrize("kw, words", [
    (dict(prefill_chips=200, decode_chips=144), "prefill_chips: 200 \\+ decode_chips 144"),
    (dict(concurrency=[0]), "concurrency"),
    (dict(concurrency=None, rate=[-1.0]), "rate"),
    (dict(osl=0), "osl"),
])
def test_bad_input_names_the_field(kw, words):
    with pytest.raises(ValueError, match=words):
        plan_disagg("deepseek-v3", "gb200-nvl72", **{**KW, **kw})


def test_a_pool_that_does_not_fit_names_the_pool():
    with pytest.raises(ValueError, match="prefill pool"):
        plan_disagg("deepseek-v3", "gb200-nvl72", **{**KW, "prefill_chips": 1, "decode_chips": 16})
