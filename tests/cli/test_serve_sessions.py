"""tokenomy serve --workload multiturn|agentic: the $/Mtok split, tier sweeps, routing, traces, and bad input as one
line naming the field (exit 2); the same answer through tk.serve with a workload object."""

import json

import pytest
from cli_runner import CliRunner

from tokenomy.cli import commands  # noqa: F401
from tokenomy.cli.app import app

R = CliRunner()
BASE = ["serve", "--model", "llama-3.1-8b", "--hardware", "hgx-h100-8", "--tp", "1", "--dp", "8"]


def _ok(args):
    r = R.invoke(app, BASE + args + ["--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def _bad(args, words):
    r = R.invoke(app, BASE + args)
    assert r.exit_code == 2, r.output
    assert len(r.output.strip().splitlines()) == 1 and words in r.output, r.output


def test_the_split_of_dollars_and_more_dram_never_lowers_the_hit_rate():
    rows = _ok(["--workload", "multiturn", "--concurrency", "2048", "--think-s", "10", "--kv-tiering", "lmcache",
                "--nvme-bytes", "0", "--dram-bytes", "0,2e11,1e12"])
    assert [r["dram_bytes"] for r in rows] == [0, 2e11, 1e12]
    hits = [r["hit_rate"] for r in rows]
    assert hits == sorted(hits) and hits[-1] > hits[0]
    for r in rows:
        assert r["usd_per_mtok_input_miss"] > 0 and r["usd_per_mtok_output"] > 0
        assert r["hit_rate"] == pytest.approx(r["hit_hbm"] + r.get("hit_ddr", 0.0))
    # DRAM costs money: the tokens it serves are priced, above zero
    assert rows[-1]["usd_per_mtok_input_hit"] > 0


def test_think_time_axis_lowers_the_hit_rate_at_a_fixed_session_rate():
    """Sessions arriving at 2/s: a longer think keeps more sessions alive at once, and their contexts age out of
    HBM before their next turn."""
    rows = _ok(["--workload", "multiturn", "--rate", "2", "--think-s", "5,60,300"])
    hits = [r["hit_rate"] for r in rows]
    assert hits[0] > hits[1] > hits[2]


def test_routing_compares_four_routers(tmp_path):
    r = R.invoke(app, BASE + ["--workload", "multiturn", "--concurrency", "256", "--routing", "prefix-aware"])
    assert r.exit_code == 0, r.output
    for name in ("round-robin", "session-sticky", "prefix-aware", "kv-router"):
        assert f"routing {name}: hit rate" in r.output


def test_one_replica_has_nothing_to_route():
    r = R.invoke(app, ["serve", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--workload", "multiturn",
                       "--concurrency", "8", "--routing", "kv-router"])
    assert r.exit_code == 0, r.output
    assert "one replica (dp 1)" in r.output and "nothing to choose" in r.output
    assert "routing round-robin: hit rate" not in r.output


def test_a_session_trace_replays(tmp_path):
    f = tmp_path / "s.jsonl"
    rows = [{"session_id": "a", "input_length": 2000, "output_length": 50, "timestamp": 0},
            {"session_id": "a", "input_length": 300, "output_length": 50, "delay": 1000},
            {"session_id": "b", "input_length": 1000, "output_length": 20, "timestamp": 200}]
    f.write_text("\n".join(json.dumps(x) for x in rows) + "\n")
    row, = _ok(["--workload", "multiturn", "--trace", str(f), "--method", "simulate"])
    assert row["hit_rate"] > 0  # a's second turn reuses its first turn's 2,050 tokens


@pytest.mark.parametrize("args,words", [
    (["--workload", "agentic", "--concurrency", "8", "--think-s=-2"], "--think-s:"),
    (["--workload", "agentic", "--concurrency", "8", "--kv-tiering", "lmcache", "--dram-bytes", "5e12"],
     "--dram-bytes: 5e+12 B per node is more than hgx-h100-8's"),
    (["--workload", "agentic", "--concurrency", "8", "--kv-tiering", "lmcache", "--nvme-bytes", "1e15"],
     "--nvme-bytes:"),
    (["--workload", "chat", "--concurrency", "8"], "--workload: 'chat' is not allowed; allowed: steady, multiturn, agentic"),
    (["--concurrency", "8", "--think-s", "3"], "--think-s: for a session workload"),
    (["--workload", "agentic", "--concurrency", "8", "--routing", "random"], "--routing: 'random' is not allowed; allowed"),
    (["--workload", "agentic", "--concurrency", "8", "--dram-bytes", "1e11"], "--dram-bytes: a tier below HBM"),
])
def test_bad_input_names_the_field(args, words):
    _bad(args, words)


def test_a_trace_turn_whose_parent_does_not_exist(tmp_path):
    f = tmp_path / "bad.csv"
    f.write_text("session_id,parent_id,timestamp_s,new_input_tokens,output_tokens\nx,nobody,0,10,10\n")
    _bad(["--workload", "agentic", "--trace", str(f), "--method", "simulate"],
         "--trace: bad.csv line 2: parent_id 'nobody' names no earlier session")


def test_python_takes_a_workload_object_and_simulates():
    import tokenomy as tk
    from tokenomy.serving.sessions import MultiTurn

    res = tk.serve("llama-3.1-8b", "h100-sxm", workload=MultiTurn(turns=4, think_s=5.0), concurrency=16,
                   method="simulate", requests=40)
    row, = res.rows()
    assert row["method"] == "simulate" and row["sim_requests"] > 0
    assert row["ttft_p99_s"] >= row["ttft_p50_s"] > 0
    assert row["hit_rate"] == pytest.approx(row["analytic_hit_rate"], abs=0.05)


def test_tk_sweep_over_think_time_and_dram_bytes():
    import tokenomy as tk

    ds = tk.sweep("llama-3.1-8b", "hgx-h100-8", tp=1, dp=8, workload="multiturn", concurrency=[256, 2048],
                  think_s=[5, 30], dram_bytes=[0, 5e11], kv_tiering="lmcache", nvme_bytes=0)
    assert dict(ds.sizes) == {"concurrency": 2, "think_s": 2, "dram_bytes": 2, "nvme_bytes": 1}
    h = ds.hit_rate.sel(nvme_bytes=0)
    # the busy point (2,048 sessions, 5 s think) is where HBM runs short and the DRAM tier pays
    assert float(h.sel(concurrency=2048, think_s=5, dram_bytes=5e11)) > float(h.sel(concurrency=2048, think_s=5,
                                                                                      dram_bytes=0)) + 0.1


def test_simulate_runs_each_replica_at_its_share_and_prices_the_simulated_throughput():
    """8 replicas of Llama-3.1-8B (tp1 dp8): the simulator runs one replica at 64/8 sessions, as the analytic row
    (it ran all 64 on one replica: 8x the load); its throughput is the simulated one, near the analytic's at this
    light load, and the $ columns move with it (the output price x analytic / simulated throughput)."""
    import tokenomy as tk
    from tokenomy.serving.sessions import MultiTurn

    w = MultiTurn(turns=4, think_s=5.0)
    kw = dict(tp=1, dp=8, workload=w, concurrency=64)
    a, = tk.serve("llama-3.1-8b", "hgx-h100-8", **kw).rows()
    s, = tk.serve("llama-3.1-8b", "hgx-h100-8", method="simulate", requests=40, **kw).rows()
    assert s["analytic_requests_per_s"] == pytest.approx(a["requests_per_s"])
    assert s["requests_per_s"] == pytest.approx(a["requests_per_s"], rel=0.15)
    assert s["ttft_s"] == pytest.approx(a["ttft_s"], rel=0.5)
    assert s["usd_per_mtok_output"] == pytest.approx(
        a["usd_per_mtok_output"] * a["requests_per_s"] / s["requests_per_s"], rel=1e-6)


def test_the_split_is_shown_beside_published_prices():
    from tokenomy.catalog import loader

    r = R.invoke(app, ["serve", "--model", "deepseek-v3", "--hardware", "gb200-nvl72", "--workload", "agentic",
                       "--concurrency", "64"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("$/Mtok input miss / input hit / output: this workload"))
    p = loader.price_file("deepseek-v3")  # the model served leads: miss / cached / output as published
    assert lines[at + 1].strip().startswith(f"{p.provider} {p.model}: 0.27 / 0.07 / 1.1 ({p.source}")
