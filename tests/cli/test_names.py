"""The CLI's names and one-line errors: aliases, did-you-mean, missing files and options, --json with --csv,
tables at 80 columns, invalid layouts."""

import json

import pytest
from cli_runner import CliRunner

import tokenomy.cli.commands  # noqa: F401  (registers the commands)
from tokenomy.cli import render
from tokenomy.cli.app import app

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, list(args))


def one_error(r, needle):
    err = r.stderr.strip().splitlines()
    assert r.exit_code == 2 and len(err) == 1 and needle in err[0], (r.exit_code, r.stderr, r.stdout)
    assert "Traceback" not in r.stderr + r.stdout


@pytest.mark.parametrize("hw", ["h100", "H100", "h100-sxm"])
def test_typed_hardware_names_answer(hw):
    r = invoke("decode", "--model", "llama-3.1-8b", "--hardware", hw, "--batch", "1", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)[0]["chips"] == 1


@pytest.mark.parametrize("args,needle", [
    (("decode", "--model", "llama-3.1-8b", "--hardware", "h1000"), "did you mean h100-sxm"),
    (("decode", "--model", "llama-3.1-7b", "--hardware", "h100"), "did you mean llama-3.1-70b"),
    (("model", "/nonexistent/config.json"), "no such file: /nonexistent/config.json"),
    (("decode", "--model", "missing.json", "--hardware", "h100"), "no such file: missing.json"),
    (("decode", "--model", "llama-3.1-8b"), "--hardware: required"),
    (("decode", "--hardware", "h100"), "--model: required"),
    (("model",), "NAME: required"),
    (("decode", "--model", "llama-3.1-8b", "--hardware", "h100", "--tp", "x"), "--tp"),
    (("decode", "--model", "llama-3.1-8b", "--hardware", "h100", "--no-such-flag"), "No such option"),
    (("no-such-command",), "No such command"),
    (("train", "--model", "llama-3.1-8b", "--chips", "0"), "--chips"),
    (("decode", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--ep", "3"), "MoE"),
])
def test_rejections_are_one_line_exit_2(args, needle):
    one_error(invoke(*args), needle)


@pytest.mark.parametrize("cmd", ["decode --model llama-3.1-8b --hardware h100", "models", "hardware",
                                 "hardware h100", "model llama-3.1-8b", "lecture", "validate",
                                 "train --model llama-3.1-8b", "plan --model llama-3.1-8b --hardware hgx-h100-8"])
def test_json_with_csv_is_refused_everywhere(cmd):
    one_error(invoke(*cmd.split(), "--json", "--csv"), "--json and --csv")


def test_tables_fit_80_columns_and_name_what_they_drop(monkeypatch):
    monkeypatch.setattr(render, "width", lambda: render.WIDE_COLUMNS if render.wide() else 80)
    r = invoke("decode", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--batch", "1,64")
    assert r.exit_code == 0
    assert max(len(x) for x in r.stdout.splitlines()) <= 80, r.stdout
    assert "not shown at 80 columns:" in r.stdout and "fits" in r.stdout.split("not shown")[1]
    w = invoke("--wide", "decode", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--batch", "1,64")
    assert "not shown" not in w.stdout and "memory/chip" in w.stdout and "fits" in w.stdout
    after = invoke("decode", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--batch", "1,64", "--wide")
    assert after.exit_code == 0 and "not shown" not in after.stdout


def test_invalid_layout_says_invalid_not_fits_no():
    r = invoke("--wide", "decode", "--model", "llama-3.1-8b", "--hardware", "hgx-h100-8", "--dp", "8", "--tp", "1",
               "--batch", "1,16")
    assert r.exit_code == 0
    rows = [x for x in r.stdout.splitlines() if x.startswith("│")]
    assert "invalid: batch smaller than dp" in rows[0] and " NO " not in rows[0] and "GB" not in rows[0]
    assert "yes" in rows[1]


def test_memory_overflow_still_says_no():
    r = invoke("--wide", "decode", "--model", "llama-3.1-405b", "--hardware", "h100", "--batch", "1")
    assert " NO " in r.stdout and "invalid" not in r.stdout
