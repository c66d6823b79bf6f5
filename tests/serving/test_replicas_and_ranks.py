"""A request lives on one DP replica and, under attention-DP, its prompt on one attention rank: latencies are one
replica's at its share of the load, never a prompt spread over every replica (serving/replicas.py). Each test
here failed before: tp1 dp4 put an 8,000-token prompt of Qwen3-32B at 0.20 s against 0.53 s of one H100's FLOPs;
DeepSeek on 16 ranks had TTFT fall 5x from 1 to 16 users; a pipeline with fewer users than stages returned
nothing; the default search picked a layout that cannot hold one sequence."""

from __future__ import annotations

import numpy as np
import pytest
from cli_runner import CliRunner

from tokenomy.answers.workloads import serve
from tokenomy.arch.params import count_params
from tokenomy.catalog import loader
from tokenomy.cli import serve as _serve_command  # noqa: F401  (registers `serve`)
from tokenomy.cli.app import app


def _rows(*args, **kw):
    return serve(*args, **kw).rows()


def test_dp_replicas_serve_as_copies_of_one():
    kw = dict(isl=1000, osl=1000)
    one = _rows("llama-3.1-8b", "h100-sxm", chips=1, tp=1, concurrency=[1, 16, 128], **kw)
    eight = _rows("llama-3.1-8b", "h100-sxm", chips=8, tp=1, dp=8, concurrency=[8, 128, 1024], **kw)
    for a, b in zip(one, eight):
        for k in ("ttft_s", "tpot_s", "tokens_per_s_per_chip", "usd_per_mtok_output"):
            assert b[k] == pytest.approx(a[k], rel=1e-9), k
        assert b["requests_per_s"] == pytest.approx(8 * a["requests_per_s"], rel=1e-9)
        assert b["b_kv"] == 8 * a["b_kv"]


def test_fewer_users_than_replicas_leave_replicas_idle_and_paid_for():
    one = _rows("llama-3.1-8b", "h100-sxm", chips=1, tp=1, concurrency=[1])[0]
    four = _rows("llama-3.1-8b", "h100-sxm", chips=4, tp=1, dp=4, concurrency=[1])[0]
    assert four["ttft_s"] == pytest.approx(one["ttft_s"]) and four["tpot_s"] == pytest.approx(one["tpot_s"])
    assert four["requests_per_s"] == pytest.approx(one["requests_per_s"])
    assert four["usd_per_mtok_output"] == pytest.approx(4 * one["usd_per_mtok_output"])


def test_a_prompt_on_one_replica_takes_at_least_that_chips_flops():
    active = count_params(loader.model("qwen3-32b")).matmul_active
    r = _rows("qwen3-32b", "h100-sxm", chips=4, tp=1, dp=4, concurrency=[1], isl=8000, osl=500)[0]
    floor_s = 2.0 * active * 8000 / loader.hardware("h100-sxm").chip.peak_flops_per_s["bf16"]  # 0.53 s
    assert r["ttft_s"] > floor_s


@pytest.mark.parametrize("concurrency", [[8, 64], [6, 10, 14]])  # divisible by dp, and not (C = q·dp + r)
def test_simulated_replicas_agree_with_the_analytic_ones(concurrency):
    dp = 8 if concurrency[0] == 8 else 4
    kw = dict(chips=dp, tp=1, dp=dp, concurrency=concurrency, isl=1000, osl=1000)
    a = _rows("llama-3.1-8b", "h100-sxm", **kw)
    s = _rows("llama-3.1-8b", "h100-sxm", method="simulate", requests=600, **kw)
    for x, y in zip(a, s):
        assert y["ttft_s"] == pytest.approx(x["ttft_s"], rel=0.1)
        assert y["requests_per_s"] == pytest.approx(x["requests_per_s"], rel=0.05)  # C = 6 on 4 had read +32%


def test_attention_dp_time_to_first_token_does_not_fall_with_load():
    rows = _rows("deepseek-v3", "h200", chips=16, tp=1, ep=16, concurrency=[1, 2, 4, 16, 128], isl=8000, osl=500)
    ttft = [r["ttft_s"] for r in rows]
    assert all(b >= a * 0.999 for a, b in zip(ttft, ttft[1:])), ttft
    # the simulator's step table keeps a prompt's chunk on one rank too (it had 0.16 s at 16 users: 5x under)
    sim = _rows("deepseek-v3", "h200", chips=16, tp=1, ep=16, concurrency=[16], isl=8000, osl=500,
                method="simulate", requests=300)[0]
    assert sim["ttft_s"] == pytest.approx(rows[3]["ttft_s"], rel=0.1)


def test_a_pipeline_with_fewer_users_than_stages_still_answers():
    rows = _rows("llama-3.1-405b", "h100-sxm", chips=16, tp=8, pp=2, concurrency=[1, 2, 16])
    assert all(r["tpot_s"] is not None and np.isfinite(r["tpot_s"]) for r in rows)
    assert rows[0]["tpot_s"] == pytest.approx(rows[1]["tpot_s"], rel=0.02)  # one sequence per micro-batch
    rate = _rows("llama-3.1-405b", "h100-sxm", chips=16, tp=8, pp=2, rate=[0.1, 1.0])
    assert all(r["ttft_s"] is not None for r in rate)


def test_the_default_layout_holds_a_sequence_of_the_workload():
    r = _rows("llama-3.1-70b", "h100-sxm", chips=4, concurrency=[1, 16, 128], isl=8000, osl=500)
    assert "dp1" in r[0]["plan"] and all(x["ttft_s"] is not None for x in r)  # tp1 dp4 holds none: it had errored


def test_the_search_skips_ranked_layouts_its_caller_cannot_use():
    from tokenomy.answers.resolve import deployment
    from tokenomy.core.layout import Layout
    from tokenomy.answers.layout_search import best_layout, ranked_layouts

    dep = deployment("llama-3.1-70b", "h100-sxm", layout=Layout())
    ranked = ranked_layouts(dep, 8, 64.0, 2048.0)
    top = ranked[0].label()
    lay, rule = best_layout(dep, 8, 64.0, 2048.0, usable=lambda x: x.label() != top)
    assert lay.label() == ranked[1].label() and "holds a sequence" in rule


def test_serve_keeps_dp_layouts_in_the_running():
    # scoring at one sequence as well had made every dp > 1 layout invalid (B < dp): tp8 for 8 H100 of Llama-8B
    r = _rows("llama-3.1-8b", "h100-sxm", chips=8, concurrency=[256])[0]
    assert "dp1" not in r["plan"]


def test_disagg_prefill_pool_runs_a_prompt_on_one_replica():
    from tokenomy.answers.resolve import deployment
    from tokenomy.core.layout import Layout
    from tokenomy.serving.disagg import prefill_table
    from tokenomy.answers.workloads import engine_profile

    dep = deployment("llama-3.1-8b", "h100-sxm", layout=Layout())
    t1, t4 = (prefill_table(dep, engine_profile("vllm"), n, 4000.0) for n in (1, 4))
    one = float(t1.pass_s[0, 0])  # tp1, one prompt
    i4 = [i for i in range(np.size(t4.layouts.tp)) if int(np.ravel(t4.layouts.dp)[i]) == 4][0]
    assert float(t4.pass_s[i4, 0]) == pytest.approx(one, rel=1e-6)  # one prompt on a dp4 pool: one replica's pass


@pytest.mark.parametrize("pp", [2, 8])
def test_a_pipeline_runs_a_prompt_in_one_micro_batch(pp):
    # pp8 had put an 8,000-token prompt at 0.05 s: split over 8 micro-batches, under one chip's FLOP floor (0.13 s)
    one = _rows("llama-3.1-8b", "h100-sxm", chips=1, tp=1, concurrency=[1], isl=8000, osl=500)[0]
    rows = _rows("llama-3.1-8b", "h100-sxm", chips=pp, tp=1, pp=pp, concurrency=[1, 16], isl=8000, osl=500)
    assert all(r["ttft_s"] >= one["ttft_s"] * 0.98 for r in rows)
    sim = _rows("llama-3.1-8b", "h100-sxm", chips=pp, tp=1, pp=pp, concurrency=[1], isl=8000, osl=500,
                method="simulate", requests=200)[0]
    assert sim["ttft_s"] == pytest.approx(rows[0]["ttft_s"], rel=0.05)


def test_simulated_attention_dp_times_a_short_prompt_as_the_analytic_model_does():
    # the simulator's prefill grid had 8,192-token cells over 16 ranks: a 1,000-token prompt read half its time
    kw = dict(chips=16, tp=1, ep=16, concurrency=[1], isl=1000, osl=1000)
    a = _rows("deepseek-v3", "h200", **kw)[0]
    s = _rows("deepseek-v3", "h200", method="simulate", requests=200, **kw)[0]
    assert s["ttft_s"] == pytest.approx(a["ttft_s"], rel=0.05)


def test_an_overloaded_simulated_open_loop_answers():
    rows = _rows("gemma-4-26b-a4b", "h100-sxm", chips=1, isl=1000, osl=1000, rate=[1.0, 4.0], method="simulate",
                 requests=300)
    assert rows[1]["capacity_limited"]  # it had raised "cannot convert float NaN to integer"


def test_the_default_layout_runs_the_load_its_batch_caps_allow():
    # tp4 dp2 holds 2 x 256 of 1,024 users and queued them 15 s; replicas enough to run them all come first
    r = _rows("llama-3.1-8b", "h100-sxm", chips=8, concurrency=[1024])[0]
    assert r["ttft_s"] < 1.0 and not r["capacity_limited"]


def test_disagg_time_to_first_token_runs_a_prompt_on_one_prefill_replica():
    kw = dict(mode="disagg", concurrency=[1], isl=8000, osl=500)
    one = _rows("qwen3-32b", "h100-sxm", pools=dict(prefill_chips=1, prefill_tp=1, decode_chips=4, decode_tp=4), **kw)
    four = _rows("qwen3-32b", "h100-sxm", pools=dict(prefill_chips=4, prefill_tp=1, prefill_dp=4, decode_chips=4,
                                                     decode_tp=4), **kw)
    assert four[0]["ttft_s"] == pytest.approx(one[0]["ttft_s"], rel=0.01)  # it had read 0.23 s against 0.80 s


def test_disagg_under_an_open_loop_picks_decode_pools_that_fit():
    # the open loop's Little's-law batch is fractional: no layout scored it and the search fell back to tp1 dp8
    rows = _rows("deepseek-r1", "h200", mode="disagg", pools=dict(prefill_chips=8, decode_chips=8),
                 rate=[0.1, 1.0, 4.0], isl=1000, osl=1000)
    assert all("decode tp8" in r["plan"] and r["tpot_s"] > 0 for r in rows)


@pytest.mark.parametrize("args, field", [
    (["--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--chips", "1", "--concurrency", "1", "--isl", "200000",
      "--osl", "100"], "--isl"),
    (["--model", "deepseek-v3", "--hardware", "h200", "--chips", "8", "--tp", "8", "--ep", "8", "--concurrency", "1"],
     "--chips"),
    (["--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--chips", "1", "--concurrency", "1", "--isl-dist",
      "uniform:1000:200000", "--osl", "100"], "--isl"),
    (["--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--chips", "1", "--concurrency", "1", "--kv-dtype", "fp7"],
     "auto"),
])
def test_bad_serving_inputs_say_why_in_one_line(args, field):
    """As the ``tokenomy`` process answers (tests/cli_runner; the process itself: tests/cli/test_serving.py's
    test_entry_point_subprocess)."""
    r = CliRunner().invoke(app, ["serve", *args])
    assert r.exit_code == 2 and field in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_simulated_row_prices_the_simulated_rate():
    # tokens per chip and $ per token had stayed the analytic model's beside the simulated request rate
    r = _rows("llama-3.1-8b", "h100-sxm", chips=1, concurrency=[64], isl=1000, osl=1000, method="simulate",
              requests=400)[0]
    assert r["tokens_per_s_per_chip"] == pytest.approx(r["requests_per_s"] * 1000, rel=1e-9)
    a = _rows("llama-3.1-8b", "h100-sxm", chips=1, concurrency=[64], isl=1000, osl=1000)[0]
    assert r["usd_per_mtok_output"] * r["tokens_per_s_per_chip"] == pytest.approx(
        a["usd_per_mtok_output"] * a["tokens_per_s_per_chip"], rel=1e-9)


def test_an_overloaded_open_loop_of_long_prompts_reports_its_capacity():
    # the wait behind full-room chunks is unbounded past capacity and had made the served rate 0
    kw = dict(chips=1, rate=[0.2, 1.0], isl=100000, osl=72)
    a = _rows("llama-3.1-8b", "h100-sxm", **kw)
    s = _rows("llama-3.1-8b", "h100-sxm", method="simulate", requests=300, **kw)
    for x, y in zip(a, s):
        assert x["capacity_limited"] and x["requests_per_s"] > 0
        assert x["requests_per_s"] == pytest.approx(y["requests_per_s"], rel=0.15)


@pytest.mark.parametrize("kw, others", [
    # the decode step alone had ranked tp1 pp4 first at 128 users: e2e 270 s against tp4's 105 s
    (dict(model="llama-3.1-70b", chips=4, concurrency=[128], isl=8000, osl=500), [dict(tp=4), dict(tp=1, pp=4),
                                                                                 dict(tp=2, pp=2)]),
    # open loop at 50 requests/s: tp4 dp2 (first by decode step) cannot serve it; enough replicas can
    (dict(model="llama-3.1-8b", chips=8, rate=[5.0, 50.0]), [dict(tp=4, dp=2), dict(tp=1, dp=8), dict(tp=8)]),
])
def test_the_default_layout_serves_the_workload_as_well_as_any_layout_given(kw, others):
    def score(rows):  # points served (a closed loop queues its clients; an open loop beyond capacity is not), then
        ok = [r for r in rows if not (r["capacity_limited"] and r["rate"])]  # the geometric-mean e2e over them
        return len(ok), -sum(np.log(r["e2e_s"]) for r in ok)

    best = score(_rows(hardware="h100-sxm", **kw))
    for deg in others:
        alt = score(_rows(hardware="h100-sxm", **kw, **deg))
        assert best[0] > alt[0] or (best[0] == alt[0] and best[1] >= alt[1] - 1e-9), (deg, best, alt)


def test_the_default_layout_meets_the_slo_another_layout_meets():
    # a TPOT SLO at 2 requests/s that only the fastest-stepping layout meets (tp8; the decode search's first at its
    # batch of 64, tp4 dp2, had been served and missed it)
    kw = dict(model="llama-3.1-8b", hardware="h100-sxm", chips=8, rate=[2.0])
    tpot = sorted(_rows(**kw, **deg)[0]["tpot_s"] for deg in (dict(tp=8), dict(tp=4, dp=2), dict(tp=2, dp=4),
                                                               dict(tp=1, dp=8)))
    slo = (tpot[0] * tpot[1]) ** 0.5  # between the best and the next
    assert _rows(**kw, tpot_slo=slo)[0]["tpot_s"] <= slo


def test_an_overloaded_open_loop_gets_the_layout_that_serves_the_most():
    # every layout is overloaded at 1,000 req/s: e2e ties (inf) and the decode search's order had picked tp4 dp2
    # (34.5 req/s served) over tp1 dp8 (53-56 req/s)
    kw = dict(model="llama-3.1-8b", hardware="h100-sxm", chips=8, rate=[1000.0])
    best = _rows(**kw)[0]
    for deg in (dict(tp=4, dp=2), dict(tp=2, dp=4), dict(tp=1, dp=8), dict(tp=8)):
        assert best["requests_per_s"] >= _rows(**kw, **deg)[0]["requests_per_s"] * (1 - 1e-9), deg


def test_the_layouts_that_hold_an_open_loop_are_searched_past_the_decode_front():
    # Qwen3-30B-A3B on 8 H100 at 32 req/s: the decode search's first eight and its front leave it capacity-limited;
    # tp2 ep4 attention-DP (11th) holds the load
    rows = _rows("qwen3-30b-a3b", "h100-sxm", chips=8, rate=[1.0, 32.0])
    assert not rows[1]["capacity_limited"]
    assert not _rows("qwen3-30b-a3b", "h100-sxm", chips=8, rate=[32.0], tp=2, ep=4)[0]["capacity_limited"]


def test_a_plan_mode_rate_sweep_takes_serves_layout_at_every_point():
    from tokenomy.answers.sweeps import sweep

    rates = [1.0, 20.0, 50.0, 200.0]
    ds = sweep(model="llama-3.1-8b", hardware="h100-sxm", chips=8, rate=rates, isl=1024, osl=1024)
    for x in rates:
        r = serve("llama-3.1-8b", "h100-sxm", chips=8, rate=[x])
        pt = ds.sel(rate=x)
        assert (int(pt.plan_tp), int(pt.plan_dp)) == (r.extra["plan"]["tp"], r.extra["plan"]["dp"]), x
