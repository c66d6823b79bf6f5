"""--set on every command that takes --hardware, --hardware my-chip.toml, and tokenomy hardware --what-if: the
header names every number set, JSON carries hardware_overrides, a bad field is one line naming --set (exit 2)."""

from __future__ import annotations

import json

import pytest
from cli_runner import CliRunner

import tokenomy.cli.commands  # noqa: F401  (registers every command)
from tokenomy.cli.app import app
from tokenomy.specs import OVERRIDABLE

RUN = CliRunner()
DECODE = ["decode", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--tp", "8", "--batch", "8"]


def _options(cmd) -> set[str]:
    import typer.main

    click_cmd = typer.main.get_command(app).commands[cmd]
    return {o for p in click_cmd.params for o in getattr(p, "opts", [])}


def test_every_command_that_takes_hardware_takes_set():
    import typer.main

    names = list(typer.main.get_command(app).commands)
    with_hardware = [c for c in names if "--hardware" in _options(c)]
    assert {"decode", "prefill", "serve", "plan", "batch", "train", "rl", "lifecycle", "sweep"} <= set(with_hardware)
    # validate --against / calibrate --from take the hardware a benchmark file was measured on: a fact, no what-if
    measured = {"validate", "calibrate"}
    assert [c for c in with_hardware if "--set" not in _options(c) and c not in measured] == []
    assert "--set" in _options("hardware")


def test_set_changes_the_answer_and_the_header_says_so():
    plain = json.loads(RUN.invoke(app, DECODE + ["--json"]).output)[0]
    r = RUN.invoke(app, DECODE + ["--json", "--set", "hbm_bytes_per_s=x2,usd_per_chip_hour=3.5"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert [o["field"] for o in out["hardware_overrides"]] == ["hbm_bytes_per_s", "usd_per_chip_hour"]
    assert out["hardware_overrides"][0]["source"] == "what-if: --set"
    assert out["rows"][0]["memory_s"] == pytest.approx(plain["memory_s"] / 2, rel=1e-12)
    table = RUN.invoke(app, DECODE + ["--set", "hbm_bytes_per_s=x2", "--explain"]).output
    assert "what-if hardware hgx-h100-8: hbm_bytes_per_s 3.35e+12 -> 6.7e+12, x2 (what-if: --set)" in table
    assert "hgx-h100-8 (what-if: hbm_bytes_per_s" in table


@pytest.mark.parametrize("cmd", [
    ["serve", "--model", "llama-3.1-8b", "--hardware", "hgx-h100-8", "--concurrency", "8", "--tp", "8"],
    ["batch", "--model", "llama-3.1-8b", "--hardware", "hgx-h100-8", "--batch", "8", "--tp", "8"],
    ["plan", "--model", "llama-3.1-8b", "--hardware", "hgx-h100-8", "--top", "1"],
    ["rl", "--model", "llama-3.1-8b", "--hardware", "hgx-h100-8", "--batch", "16"],
    ["lifecycle"], ["hardware", "h100-sxm"]])
def test_other_commands_carry_the_overrides_in_json(cmd):
    r = RUN.invoke(app, cmd + ["--set", "tdp_w=1000", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["hardware_overrides"][0]["value"] == 1000.0


@pytest.mark.parametrize("value, says", [
    ("hbm=2", "--set: hbm: not a hardware field; allowed: " + ", ".join(OVERRIDABLE)),
    ("hbm_bytes_per_s=0", "--set: hbm_bytes_per_s: must be a finite number > 0, got 0.0"),
    ("hbm_bytes_per_s=-1e12", "--set: hbm_bytes_per_s: must be a finite number > 0"),
    ("hbm_bytes_per_s", "--set: 'hbm_bytes_per_s' is not field=value")])
def test_a_bad_field_is_one_line_naming_set(value, says):
    r = RUN.invoke(app, DECODE + ["--set", value])
    assert r.exit_code == 2
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: " + says), r.output


def test_a_partial_toml_is_a_hardware(tmp_path):
    p = tmp_path / "fast-h100.toml"
    p.write_text('base = "hgx-h100-8"\nsource = "what-if: twice the HBM bandwidth"\nas_of = 2026-12-05\n'
                 'hbm_bytes_per_s = 6.7e12\n')
    r = RUN.invoke(app, ["decode", "--model", "llama-3.1-70b", "--hardware", str(p), "--tp", "8", "--batch", "8",
                         "--json"])
    assert r.exit_code == 0, r.output
    o = json.loads(r.output)["hardware_overrides"][0]
    assert o["value"] == 6.7e12 and o["source"].startswith("what-if: twice the HBM bandwidth (base hgx-h100-8")
    bad = tmp_path / "bad.toml"
    bad.write_text(p.read_text().replace("hbm_bytes_per_s", "hbm_speed"))
    r = RUN.invoke(app, ["decode", "--model", "llama-3.1-70b", "--hardware", str(bad)])
    assert r.exit_code == 2 and r.output.startswith("error: --hardware: bad.toml: field 'hbm_speed': not a hardware field")


def test_what_if_sweep_table_json_and_plot(tmp_path):
    base = ["hardware", "hgx-h100-8", "--what-if", "peak_flops_per_s=x0.5..x2", "--model", "llama-3.1-70b"]
    r = RUN.invoke(app, base + ["--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)["rows"]
    assert [x["factor"] for x in rows] == pytest.approx([0.5, 2**-0.5, 1, 2**0.5, 2], rel=1e-5)
    assert all(a["tpot_s"] >= b["tpot_s"] for a, b in zip(rows, rows[1:]))
    html = tmp_path / "w.html"
    r = RUN.invoke(app, base + ["--plot", str(html)])
    assert r.exit_code == 0 and "flops_per_" in r.output and "TPOT (s)" in html.read_text()
    for args, says in ((["--what-if", "hbm=x1..x2"], "--what-if: 'hbm' is not a hardware field"),
                       (["--what-if", "hbm_bytes_per_s"], "--what-if: 'hbm_bytes_per_s' is not FIELD=RANGE"),
                       (["--what-if", "hbm_bytes_per_s=x2..x1"], "--what-if: range 'x2..x1' must rise")):
        r = RUN.invoke(app, ["hardware", "hgx-h100-8", "--model", "llama-3.1-70b", *args])
        assert r.exit_code == 2 and r.output.startswith("error: " + says), r.output
