"""tokenomy validate --against FILE / calibrate --from FILE through the CLI: table, JSON, CSV, the plot, the terms
file fed back with --efficiency, and bad input as one line with exit code 2 (files written in vLLM's documented
result layout by tests/validation/benchmark_files.py)."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import pytest
from cli_runner import CliRunner

from tokenomy.cli import commands  # noqa: F401
from tokenomy.cli.app import app

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "validation"))
import benchmark_files as bf  # noqa: E402

RUN = CliRunner()
POINTS = [dict(concurrency=c, isl=1024, osl=256, ttft_s=0.04 + 0.005 * c, tpot_s=0.007 + 0.0002 * c,
               itl_s=0.007 + 0.0002 * c, output_tokens_per_s=130.0 * c) for c in (1, 4, 16, 64)]


@pytest.fixture
def result(tmp_path) -> Path:
    p = tmp_path / "vllm-result.json"
    p.write_text(bf.vllm_file(POINTS))
    return p


def one_line_error(r, starts: str) -> None:
    assert r.exit_code == 2, r.output
    assert r.output.strip().count("\n") == 0 and r.output.strip().startswith(f"error: {starts}"), r.output


def test_json_has_every_point_and_the_median_error_per_metric(result):
    r = RUN.invoke(app, ["validate", "--against", str(result), "--hardware", "h100-sxm", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert len(out["points"]) == 16 and out["protocol"] == "vllm-bench"
    assert set(out["median_abs_error"]) == {"ttft_s", "tpot_s", "itl_s", "throughput_per_chip"}
    assert out["setup"]["model"] == "llama-3.1-8b" and out["setup"]["engine"] == "vllm"


def test_csv_and_table(result):
    r = RUN.invoke(app, ["validate", "--against", str(result), "--hardware", "h100-sxm", "--csv"])
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(io.StringIO(r.output)))
    assert len(rows) == 16 and {"measured", "predicted", "error"} <= set(rows[0])
    t = RUN.invoke(app, ["validate", "--against", str(result), "--hardware", "h100-sxm"])
    assert t.exit_code == 0 and "median |error|" in t.output


def test_plot_writes_a_page_and_a_bad_plot_path_is_refused(result, tmp_path):
    page = tmp_path / "fit.html"
    r = RUN.invoke(app, ["validate", "--against", str(result), "--hardware", "h100-sxm", "--plot", str(page)])
    assert r.exit_code == 0, r.output
    html = page.read_text()
    assert "predicted vs measured" in html and '"type":"log"' in html.replace(" ", "")
    one_line_error(RUN.invoke(app, ["validate", "--against", str(result), "--hardware", "h100-sxm", "--plot",
                                    str(tmp_path / "fit.png")]), "--plot:")
    one_line_error(RUN.invoke(app, ["validate", "--plot", str(page)]), "--plot:")


def test_missing_and_bad_options_are_one_line_exit_2(result, tmp_path):
    one_line_error(RUN.invoke(app, ["validate", "--against", str(result)]), "--hardware: required")
    one_line_error(RUN.invoke(app, ["validate", "--against", str(result), "--hardware", "h100-sxm", "--engine",
                                    "tgi"]), "--engine:")
    one_line_error(RUN.invoke(app, ["validate", "--against", str(tmp_path / "none.json"), "--hardware",
                                    "h100-sxm"]), "--against: none.json: no such file")
    bad = tmp_path / "bad.json"
    bad.write_text('{"completed": 3, "total_input_tokens": 30}')
    one_line_error(RUN.invoke(app, ["validate", "--against", str(bad), "--hardware", "h100-sxm", "--format",
                                    "vllm"]), "--against: bad.json: run: not a vllm bench serve result")
    one_line_error(RUN.invoke(app, ["validate", "--against", str(result), "--refit"]), "--against:")


def test_calibrate_from_writes_terms_that_decode_and_serve_read(result, tmp_path):
    out = tmp_path / "terms.toml"
    r = RUN.invoke(app, ["calibrate", "--from", str(result), "--hardware", "h100-sxm", "--hold-out", "2", "--out",
                         str(out), "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.output)
    assert set(res["held_out_median_abs_error"]) == {"before", "after"} and res["out"] == str(out)
    assert "[terms]" in out.read_text()
    for cmd in (["decode", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--batch", "8"],
                ["serve", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--concurrency", "8"]):
        d = RUN.invoke(app, cmd + ["--efficiency", str(out), "--json"])
        assert d.exit_code == 0, d.output
    one_line_error(RUN.invoke(app, ["decode", "--model", "llama-3.1-8b", "--hardware", "b200", "--batch", "8",
                                    "--efficiency", str(out)]), "--efficiency: terms.toml was calibrated on h100-sxm")


def test_calibrate_from_errors_name_from_and_write_nothing(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    out = tmp_path / "terms.toml"
    one_line_error(RUN.invoke(app, ["calibrate", "--from", str(bad), "--hardware", "h100-sxm", "--out", str(out)]),
                   "--from: bad.json:")
    assert not out.exists()
