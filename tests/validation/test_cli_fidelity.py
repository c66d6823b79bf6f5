"""tokenomy validate / calibrate through the CLI (a subset of sources keeps it fast)."""

import json
import math

import pytest
from cli_runner import CliRunner

from tokenomy.cli import commands  # noqa: F401
from tokenomy.cli.app import app

RUN = CliRunner()


def test_validate_subset_json():
    r = RUN.invoke(app, ["validate", "--source", "rocm-vllm-0.10-mi300x", "--source", "nim-1.8-llama33-70b",
                         "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["cases"] == 63  # rocm-vllm-0.10-mi300x 32 latency + 4 throughput rows, nim 27
    assert all(math.isfinite(row["median_abs_error"]) for row in out["held_out"])
    assert out["headline_decode_time_per_token"]["cases"] > 0


# the report carries the tiered-KV section (kv_tiering.scored(), ~40 CPU-s, lru_cache per process): in the xdist group
# of the other files that read it (make test: --dist loadgroup), so the suite simulates that catalog once
@pytest.mark.xdist_group("kv_tiering_scored")
def test_validate_writes_the_report(tmp_path):
    path = tmp_path / "validation.md"
    r = RUN.invoke(app, ["validate", "--source", "rocm-vllm-0.10-mi300x", "--write", str(path)])
    assert r.exit_code == 0, r.output
    text = path.read_text()
    assert "## Headline" in text and "held-out" in text and "mi300x" in text


def test_validate_bad_grouping_is_one_line_exit_2():
    r = RUN.invoke(app, ["validate", "--by", "colour"])
    assert r.exit_code == 2 and r.output.strip().count("\n") == 0 and "--by" in r.output


def test_validate_unknown_source():
    r = RUN.invoke(app, ["validate", "--source", "nope"])
    assert r.exit_code == 2 and "allowed" in r.output


@pytest.mark.torch
def test_calibrate_measures_and_predicts_on_cpu():
    pytest.importorskip("torch")
    r = RUN.invoke(app, ["calibrate", "--layers", "1", "--divisor", "8", "--vocab", "512", "--batch", "1,2,4",
                         "--context", "16,32", "--steps", "2", "--matmul-size", "128", "--copy-mb", "8",
                         "--device", "cpu", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["machine"]["matmul_flops_per_s"] > 0 and out["machine"]["copy_bytes_per_s"] > 0
    assert len(out["points"]) == 6
    for p in out["points"]:
        assert p["measured_s"] > 0 and p["roofline_s"] > 0 and math.isfinite(p["error"])


def test_estimate_shows_calibrated_and_roofline():
    r = RUN.invoke(app, ["estimate", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--batch", "1,4096",
                         "--context", "8192", "--json"])
    assert r.exit_code == 0, r.output
    small, huge = json.loads(r.output)
    assert small["efficiency"] == "calibrated" and small["step_s"] > small["roofline_step_s"] > 0
    assert huge["fits"] is False and huge["step_s"] is None and "HBM" in huge["why"]


def test_validate_answer_is_the_cli_json():
    import tokenomy as tk

    res = tk.validate(source=("rocm-vllm-0.10-mi300x",), by=("metric",))
    cli = RUN.invoke(app, ["validate", "--source", "rocm-vllm-0.10-mi300x", "--by", "metric", "--json"])
    assert cli.exit_code == 0, cli.output
    out, pay = json.loads(cli.output), res.payload()
    assert out["held_out"] == pay["held_out"] and out["cases"] == pay["cases"] > 0
    assert {r["metric"] for r in res.rows()} <= {"tpot_s", "ttft_s", "latency_s", "throughput_per_chip"}
    with pytest.raises(ValueError, match="^by: "):
        tk.validate(by=("nope",))
