"""The CLI as the ``tokenomy`` process runs a command line (tests/cli_runner: in-process, only the command named
built, as cli.app.main does): JSON keys, formats, and the bad-input contract (exit 2, one line on stderr). The
installed entry point itself, in a process of its own: tests/cli/test_serving.py::test_entry_point_subprocess."""

import json
import subprocess
import sys

import pytest
from cli_runner import CliRunner

from tokenomy.cli import commands  # noqa: F401  (registers the commands)
from tokenomy.cli.app import app


def run(*args):
    """The command line's exit code, stdout and stderr (apart, as a process's)."""
    r = CliRunner().invoke(app, list(args))
    r.returncode = r.exit_code
    return r


def test_model_json_keys():
    r = run("model", "llama-3.1-70b", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["kv_bytes_per_token"] == 327_680 and d["num_layers"] == 80
    assert d["total_params"] == d["active_params"] > 70e9
    d8 = json.loads(run("model", "deepseek-v3", "--json", "--kv-dtype", "fp8").stdout)
    assert d8["kv_bytes_per_token"] == 61 * 576


def test_hardware_json_keys():
    d = json.loads(run("hardware", "h100-sxm", "--json").stdout)
    assert set(d["peak_flops_per_s"]) >= {"bf16", "fp8", "fp4", "int8"}
    assert d["peak_flops_per_s"]["fp4"] is None  # Hopper has no fp4 tensor cores: said, not omitted
    assert d["peak_flops_per_s"]["bf16"] == pytest.approx(989.4e12, rel=0.01)
    assert d["hbm_bytes"] == 80e9 and d["hbm_bytes_per_s"] == pytest.approx(3.35e12)
    rack = json.loads(run("hardware", "gb200-nvl72", "--json").stdout)
    assert rack["num_chips"] == 72 and "fp4" in rack["peak_flops_per_s"]


def test_decode_json_rows():
    r = run("decode", "--model", "deepseek-v3", "--hardware", "gb200-nvl72", "--batch", "1,64,2048",
            "--context", "2048,32768", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert len(rows) == 6
    keys = {"batch", "context", "compute_s", "memory_s", "comms_s", "overhead_s", "step_s", "bound", "tokens_per_s",
            "mfu", "memory_per_chip_bytes", "fits"}
    assert keys <= set(rows[0])
    for row in rows:
        assert row["bound"] in ("compute", "memory", "comms", "overhead", "pipeline hop")
        assert row["step_s"] >= max(row["compute_s"], row["memory_s"])
    b1 = [r for r in rows if r["batch"] == 1 and r["context"] == 2048][0]
    # batch 1 reads every touched weight for one token: memory, or on a rack-wide layout its collectives or the
    # per-layer kernel floor (61 layers x o_layer against ~0.1 ms of reads a chip), binds — never compute (issue 12:
    # the old calibrated model said compute)
    assert b1["bound"] in ("memory", "comms", "overhead") and b1["memory_s"] > 10 * b1["compute_s"]


def test_prefill_is_compute_bound_at_long_prompts():
    rows = json.loads(run("prefill", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--batch", "4",
                          "--context", "8192", "--json").stdout)
    assert rows[0]["bound"] == "compute" and rows[0]["len_pass"] == 8192


def test_csv_and_table_and_explain():
    r = run("decode", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--batch", "1,8", "--csv")
    lines = r.stdout.strip().splitlines()
    assert lines[0].startswith("batch,context") and len(lines) == 3
    e = run("decode", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--batch", "8", "--explain")
    assert "t_stage = GPU + host - h*min(GPU, host)" in " ".join(e.stdout.split()) and "roofline bound" in e.stdout


def test_does_not_fit_is_said():
    r = run("decode", "--model", "llama-3.1-405b", "--hardware", "h100-sxm", "--batch", "1", "--json")
    row = json.loads(r.stdout)[0]
    assert row["fits"] is False and row["step_s"] is None and "HBM" in row["why"]
    t = run("decode", "--model", "llama-3.1-405b", "--hardware", "h100-sxm", "--batch", "1")
    assert "does not fit: needs" in t.stdout


@pytest.mark.parametrize("args,needle", [
    (("decode", "--model", "gpt-9", "--hardware", "h100-sxm"), "unknown model 'gpt-9'"),
    (("decode", "--model", "llama-3.1-8b", "--hardware", "h999"), "unknown hardware 'h999'"),
    (("decode", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--batch", "-4"), "--batch"),
    (("decode", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--batch", "abc"), "--batch"),
    (("decode", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--chips", "0"), "--chips"),
    (("decode", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--kv-dtype", "fp7"), "--kv-dtype"),
    (("model", "/nonexistent/config.json"), "no such file: /nonexistent/config.json"),
])
def test_bad_input_one_line_exit_2(args, needle):
    r = run(*args)
    assert r.returncode == 2
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and needle in err[0], r.stderr
    assert "Traceback" not in r.stderr


def test_malformed_config_exit_2(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "llama", "hidden_size": 4096}')
    r = run("model", str(tmp_path))
    assert r.returncode == 2 and "missing field" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_cli_import_is_light():
    code = ("import sys, tokenomy.cli.commands; "
            "bad = [m for m in ('torch', 'plotly', 'fastapi') if m in sys.modules]; print(bad); sys.exit(bool(bad))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_calibrated_estimate_beside_the_roofline_bound():
    # The answer (step_s) is the calibrated estimate (fitted efficiency terms, tokenomy validate) on the same layout
    # as the roofline bound beside it, so it can only add time.
    rows = json.loads(run("decode", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--batch", "1,64,512",
                          "--json").stdout)
    for row in rows:
        assert row["step_s"] >= row["roofline_step_s"] > 0 and row["efficiency"] == "calibrated"
        assert row["tokens_per_s"] == pytest.approx(row["batch"] / row["step_s"])
        assert row["bound"] in ("compute", "memory", "comms", "overhead", "pipeline hop")


@pytest.mark.parametrize("text, want", [("128k", [131072]), ("1M", [1048576]), ("2048,8k", [2048, 8192]),
                                        ("1..8", [1, 2, 4, 8])])
def test_token_counts_as_people_write_them(text, want):
    from tokenomy.answers.inputs import numbers

    assert numbers("context", text) == want


@pytest.mark.parametrize("text", ["1e400", "inf", "-4", "abc", "8..2", "0", "1.0001k"])
def test_bad_counts_are_one_line(text):
    r = run("decode", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--context", text)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--context" in r.stderr
