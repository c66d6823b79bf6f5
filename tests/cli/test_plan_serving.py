"""`tokenomy plan` for a serving workload (agg and --mode disagg): the best plan is what `tokenomy serve` reports
for its layout, the ranking rule holds over the table, $/Mtok in + out pays every chip-second, bad input is one
line with exit 2, and SLOs no plan meets give the closest plan (exit 0)."""

import json

import pytest
from cli_runner import CliRunner

from tokenomy.catalog import loader
from tokenomy.cli import commands  # noqa: F401
from tokenomy.cli.app import app

R = CliRunner()
LLAMA = ["plan", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--concurrency", "64", "--isl", "1024",
         "--osl", "1024", "--ttft-slo", "1", "--tpot-slo", "0.05"]
DS = ["plan", "--model", "deepseek-v3", "--hardware", "gb200-nvl72", "--chips", "288", "--mode", "disagg",
      "--concurrency", "256", "--isl", "4096", "--osl", "1024", "--engine", "sglang", "--ttft-slo", "2",
      "--tpot-slo", "0.05"]


def _json(args):
    r = R.invoke(app, args + ["--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def llama():
    return _json(LLAMA)


def test_agg_best_row_equals_serve_for_its_layout(llama):
    best = llama["best"]
    assert "goodput per dollar" in llama["rule"] and llama["front"][0]["plan"] == best["plan"]
    args = ["serve", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--concurrency", "64", "--isl", "1024",
            "--osl", "1024", "--chips", str(best["chips"])]
    for k in ("tp", "ep", "pp", "dp"):
        args += [f"--{k}", str(best[k])]
    (row,) = _json(args)
    assert row["plan"] == best["plan"]
    for k in ("ttft_s", "tpot_s", "tokens_per_s_per_chip", "tokens_per_s_per_user", "usd_per_mtok_input",
              "usd_per_mtok_output", "requests_per_s"):
        assert row[k] == pytest.approx(best[k], rel=1e-9), k


DS_TWO_LOADS = [*DS[:DS.index("--concurrency") + 1], "256,1024", *DS[DS.index("--concurrency") + 2:]]


@pytest.mark.parametrize("args", [LLAMA, DS_TWO_LOADS], ids=["agg", "disagg"])
def test_the_rule_holds_over_the_table_and_top_1_is_the_best(args):
    """The one check of a plan search's ranking, agg and disaggregated (over two load points): the best meets the
    SLOs and heads the table; every row meets them, none has more goodput per dollar, none is beaten on both
    tokens/s per chip and per user (a front) and none matches or beats the best on both; a disaggregated best fits
    its chips with neither pool capacity-limited; a second search for the top 1 gives the best row, field for field.
    (tk.plan and serving's plan_disagg are this answer; serve --search's door: test_serve.py.)"""
    d = _json(args)
    rows, best = d["front"], d["best"]
    ttft_slo, tpot_slo = (float(args[args.index(k) + 1]) for k in ("--ttft-slo", "--tpot-slo"))
    assert "goodput per dollar" in d["rule"]
    assert rows[0]["best"] and rows[0]["plan"] == best["plan"] and best["meets_slos"]
    for r in rows:
        assert r["ttft_s"] <= ttft_slo and r["tpot_s"] <= tpot_slo
        assert r["goodput_requests_per_usd"] <= best["goodput_requests_per_usd"]
        assert not any(x["tokens_per_s_per_chip"] > r["tokens_per_s_per_chip"]
                       and x["tokens_per_s_per_user"] > r["tokens_per_s_per_user"] for x in rows)
    assert not [x for x in rows[1:] if x["tokens_per_s_per_chip"] >= best["tokens_per_s_per_chip"]
                and x["tokens_per_s_per_user"] >= best["tokens_per_s_per_user"]]
    if best["mode"] == "disagg":
        assert best["prefill_chips"] + best["decode_chips"] <= 288 and not best["capacity_limited"]
    (top,) = _json(args + ["--top", "1"])["front"]
    assert top == best


def test_usd_per_mtok_in_and_out_pay_the_chips(llama):
    price = loader.hardware("hgx-h100-8").usd_per_chip_hour
    for r in llama["front"]:
        paid = (r["usd_per_mtok_input"] * 1024 + r["usd_per_mtok_output"] * 1024) / 1e6
        assert paid == pytest.approx(r["chips"] * price / 3600 / r["requests_per_s"], rel=1e-9)


def test_table_shows_cost_beside_throughput():
    r = R.invoke(app, LLAMA)
    assert r.exit_code == 0, r.output
    for col in ("$/Mtok", "tok/s/chip", "TTFT", "TPOT"):  # people's headers (tokenomy.headers)
        assert col in r.stdout
    assert "goodput per dollar" in " ".join(r.stdout.split())


@pytest.mark.parametrize("args", [LLAMA, DS])
def test_slos_no_plan_meets_say_so_with_the_closest(args):
    d = _json(args + ["--tpot-slo", "1e-5"])
    assert d["best"] is None and d["closest"] is not None and d["misses_by"]["tpot_over"] > 1
    r = R.invoke(app, args + ["--tpot-slo", "1e-5"])
    assert r.exit_code == 0 and "no plan meets the SLOs; closest:" in r.stdout and "% over" in r.stdout


@pytest.mark.parametrize("extra, words", [
    (["--concurrency", "0"], "--concurrency"),
    (["--rate", "-2"], "--rate"),
    (["--osl", "0"], "--osl"),
    (["--mode", "x"], "--mode"),
    (["--prefill-chips", "8"], "--prefill-chips"),  # only with --mode disagg
])
def test_agg_bad_input_is_one_line_exit_2(extra, words):
    r = R.invoke(app, LLAMA + extra)
    assert r.exit_code == 2, r.output
    (line,) = r.output.strip().splitlines()
    assert words in line and "Traceback" not in r.output


@pytest.mark.parametrize("extra, words", [
    (["--prefill-chips", "200", "--decode-chips", "144"], "--prefill-chips: 200 + decode_chips 144"),
    (["--prefill-chips", "1", "--decode-chips", "16"], "prefill pool"),
    (["--prefill-chips", "16", "--decode-chips", "1"], "decode pool"),
    (["--osl", "0"], "--osl"),
])
def test_disagg_bad_input_is_one_line_exit_2(extra, words):
    r = R.invoke(app, DS + extra)
    assert r.exit_code == 2, r.output
    (line,) = r.output.strip().splitlines()
    assert words in line and "Traceback" not in r.output


def test_disagg_without_a_workload_says_what_to_add():
    r = R.invoke(app, ["plan", "--model", "deepseek-v3", "--hardware", "gb200-nvl72", "--mode", "disagg"])
    assert r.exit_code == 2 and "--concurrency: mode disagg plans" in r.output and len(r.output.strip().splitlines()) == 1
