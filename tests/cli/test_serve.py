"""tokenomy serve: the README example, JSON fields, and bad input as one line with exit code 2."""

import json

from cli_runner import CliRunner

from tokenomy.cli import commands  # noqa: F401
from tokenomy.cli.app import app

R = CliRunner()
BASE = ["serve", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8"]
FIELDS = ("plan", "mode", "concurrency", "rate", "ttft_s", "tpot_s", "e2e_s", "ttft_p50_s", "ttft_p99_s",
          "tpot_p50_s", "tpot_p99_s", "requests_per_s", "tokens_per_s_per_chip", "tokens_per_s_per_user",
          "usd_per_mtok_input", "usd_per_mtok_output", "kv_occupancy", "capacity_limited", "bound",
          "goodput_requests_per_s")


def test_readme_example_70b_8xh100_64_users():
    r = R.invoke(app, BASE + ["--concurrency", "64", "--isl", "1024", "--osl", "1024", "--json"])
    assert r.exit_code == 0, r.output
    row, = json.loads(r.output)
    assert all(k in row for k in FIELDS)
    assert row["mode"] == "agg" and 0 < row["ttft_s"] < 1 and 0.005 < row["tpot_s"] < 0.1
    assert row["usd_per_mtok_output"] > 0 and not row["capacity_limited"]


def test_sweep_and_simulate():
    r = R.invoke(app, BASE + ["--concurrency", "1,16", "--osl", "128", "--method", "simulate", "--requests", "100",
                              "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    assert [x["concurrency"] for x in rows] == [1, 16] and rows[0]["tpot_s"] < rows[1]["tpot_s"]


def _bad(args, words):
    r = R.invoke(app, BASE + args)
    assert r.exit_code == 2, r.output
    assert len(r.output.strip().splitlines()) == 1 and words in r.output, r.output


def test_bad_input(tmp_path):
    _bad(["--concurrency", "0"], "--concurrency")
    _bad(["--rate", "-1"], "--rate")
    _bad(["--concurrency", "4", "--osl", "0"], "--osl")
    _bad(["--concurrency", "4", "--mode", "disagg"], "--prefill-chips")
    _bad(["--concurrency", "4", "--mode", "disagg", "--prefill-chips", "1", "--decode-chips", "4"],
         "does not fit: prefill pool")
    p = tmp_path / "t.csv"
    p.write_text("0.0,100,10\n0.5,100\n")
    _bad(["--trace", str(p)], "line 2")


DS = ["serve", "--model", "deepseek-v3", "--hardware", "gb200-nvl72", "--mode", "disagg", "--isl", "4096", "--osl",
      "1024", "--engine", "sglang"]


def test_disagg_pools_json():
    r = R.invoke(app, DS + ["--prefill-chips", "72", "--decode-chips", "144", "--concurrency", "256", "--json"])
    assert r.exit_code == 0, r.output
    row, = json.loads(r.output)
    assert all(k in row for k in FIELDS) and row["mode"] == "disagg" and row["chips"] == 216
    assert row["kv_link"] == "scale-out" and row["ttft_s"] > row["kv_transfer_s"] > 0


def test_disagg_search_top1_is_the_best_plan():
    r = R.invoke(app, DS + ["--search", "--chips", "288", "--concurrency", "256,1024", "--ttft-slo", "2",
                            "--tpot-slo", "0.05", "--top", "1", "--json"])
    assert r.exit_code == 0, r.output
    row, = json.loads(r.output)
    assert row["best"] and row["ttft_s"] <= 2 and row["tpot_s"] <= 0.05
