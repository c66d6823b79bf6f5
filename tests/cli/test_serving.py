"""Serving-economics commands through the typer app (and one through the installed entry point)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runner import CliRunner

import tokenomy.cli.commands  # noqa: F401  (registers the commands)
from tokenomy.cli import app

BIN = Path(sys.executable).parent / "tokenomy"
DS = ("--model", "deepseek-v3", "--hardware", "hgx-h200-8", "--kv-dtype", "fp8")


def run(*args):
    return CliRunner().invoke(app, list(args))


def js(*args):
    r = run(*args, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_batch_json():
    d = js("batch", *DS, "--batch", "1,64,512")
    assert {"balance_batch", "balance_batch_with_kv", "unbatched_penalty", "operating_batch", "max_batch_fit",
            "memory_binds", "lecture_ratio"} <= set(d["summary"])
    rows = d["rows"]
    assert [r["batch"] for r in rows] == [1, 64, 512]
    assert {"step_s", "roofline_step_s", "matmul_s", "weights_s", "kv_s", "comms_s", "tokens_per_s_per_chip",
            "tokens_per_s_per_user", "usd_per_mtok", "mfu", "memory_per_chip_bytes", "fits"} <= set(rows[0])
    assert rows[0]["usd_per_mtok"] > rows[2]["usd_per_mtok"]
    # the default: calibrated on the best real layout over the 8 chips, its rule stated, the roofline beside it
    assert d["efficiency"] == "calibrated" and d["plan"]["chips"] == 8 and "valid layout" in d["layout_rule"]
    assert all(r["roofline_step_s"] < r["step_s"] for r in rows)
    big = js("batch", *DS, "--batch", "100000", "--ep", "8")["rows"][0]
    assert not big["fits"] and big["step_s"] is None and "HBM" in big["why"]
    ideal = js("batch", *DS, "--batch", "64", "--layout", "ideal", "--efficiency", "roofline")
    assert ideal["plan"]["ideal"] and ideal["rows"][0]["step_s"] == ideal["rows"][0]["roofline_step_s"]


def test_batch_price_override_scales_cost():
    a = js("batch", *DS, "--batch", "64")["rows"][0]["usd_per_mtok"]
    b = js("batch", *DS, "--batch", "64", "--usd-per-chip-hour", "7.18")["rows"][0]["usd_per_mtok"]
    assert b == pytest.approx(2 * a)


def test_latency_json_and_drain_table():
    d = js("latency", *DS, "--batch", "1,64")
    assert d["drain"][0]["chip"] == "h200" and d["schedule"][0]["worst_case_latency_s"] > 0
    drain = js("latency")
    assert len(drain) >= 10 and all(r["drain_s"] > 0 for r in drain)


def test_context_json():
    d = js("context", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--batch", "64", "--context", "1024,8192")
    assert {"crossover_large_batch", "crossover_at_batch", "goldilocks_lo", "max_context_fit",
            "attention_equal_context", "sparse_crossover_large_batch"} <= set(d["summary"])
    assert len(d["rows"]) == 2 and d["rows"][0]["mfu"] >= d["rows"][1]["mfu"]
    assert any(r["architecture"] == "deepseek-v3" for r in d["inverse"])


def test_pricing_speculate_cache_json():
    p = js("pricing", *DS, "--batch", "64,1024")
    assert p["rows"][1]["output_over_input"] < p["rows"][0]["output_over_input"]
    assert any(s["price_sheet"] == "claude-opus-4-6" for s in p["price_sheets"])
    s = js("speculate", *DS, "--batch", "8,64", "--draft-tokens", "1", "--acceptance", "0.85")
    assert s["summary"]["expected_tokens_per_step"] == pytest.approx(1.85)
    assert {"speedup", "cost_ratio", "speed_multiplier", "price_multiplier"} <= set(s["rows"][0])
    c = js("cache", *DS, "--hold", "300,3600")
    assert [h["hold_s"] for h in c["holds"]] == [300, 3600]
    assert c["tiers"][-1]["tier"] == "rematerialise" and c["envelope"][0]["from_s"] is None


def test_lecture_json_is_the_claim_list():
    d = js("lecture")
    assert len(d) == 28 and all(c["ok"] for c in d)
    assert {"id", "claim", "lecture_value", "computed_value", "tolerance", "ok"} <= set(d[0])
    real = js("lecture", "--real")
    assert any(r["agrees"] is False for r in real)


def test_tables_csv_and_explain():
    t = run("lecture")
    assert t.exit_code == 0 and "28/28" in t.stdout and "Closing note" in t.stdout
    c = run("batch", *DS, "--batch", "1,8", "--csv")
    assert c.stdout.splitlines()[0].startswith("batch,context,step_s") and len(c.stdout.splitlines()) == 3
    e = run("batch", *DS, "--batch", "8", "--explain")
    assert "R = (peak/2)*bytes_per_weight/HBM_bw" in e.stdout
    for cmd in ("latency", "context", "pricing", "speculate", "cache"):
        r = run(cmd, *DS, "--explain", *(("--batch", "1,64") if cmd in ("latency", "pricing", "speculate") else ()))
        assert r.exit_code == 0 and "=" in r.stdout, cmd


@pytest.mark.parametrize("args,needle", [
    (("batch", "--hardware", "h100-sxm"), "--model"),
    (("batch", "--model", "llama-3.1-8b"), "--hardware"),
    (("batch", *DS, "--context", "abc"), "--context"),
    (("batch", *DS, "--batch", "0"), "--batch"),
    (("batch", *DS, "--usd-per-chip-hour", "-1"), "--usd-per-chip-hour"),
    (("batch", *DS, "--hbm-fraction", "1.5"), "--hbm-fraction"),
    (("batch", *DS, "--efficiency", "fast"), "--efficiency"),
    (("latency", *DS, "--tick-s", "x"), "--tick-s"),
    (("context", *DS, "--sparse-exponent", "2"), "--sparse-exponent"),
    (("pricing", *DS, "--prompt-tokens", "9000", "--context", "8192"), "--prompt-tokens"),
    (("speculate", *DS, "--acceptance", "1.5"), "--acceptance"),
    (("speculate", *DS, "--draft-tokens", "0"), "--draft-tokens"),
    (("cache", *DS, "--hold", "1,-5"), "--hold"),
    (("cache", *DS, "--stall", "2"), "--stall"),
    (("cache", "--model", "gpt-9", "--hardware", "h100-sxm"), "unknown model"),
    (("lecture", "--ids", "L99"), "--ids"),
])
def test_bad_input_one_line_exit_2(args, needle):
    r = run(*args)
    assert r.exit_code == 2
    assert len(r.stderr.strip().splitlines()) == 1 and needle in r.stderr


def test_entry_point_subprocess():
    r = subprocess.run([str(BIN), "batch", *DS, "--batch", "1,64", "--json"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and json.loads(r.stdout)["rows"][0]["batch"] == 1
    bad = subprocess.run([str(BIN), "cache", *DS, "--prefix-tokens", "abc"], capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_nothing_fits_is_said():
    r = run("batch", "--model", "llama-3.1-405b", "--hardware", "h100-sxm", "--batch", "4")
    assert r.exit_code == 0 and "nothing fits" in r.stdout
    d = js("batch", "--model", "llama-3.1-405b", "--hardware", "h100-sxm", "--batch", "4")
    assert d["summary"]["max_batch_fit"] == 0 and d["summary"]["operating_batch"] is None
    assert d["rows"][0]["fits"] is False and d["rows"][0]["usd_per_mtok"] is None
