"""CLI start-up stays lazy (issue 14): what a process imports for --help and for a simple answer, checked by module
name, never by wall-clock time (the timings are benchmarks/cli_startup.py's)."""

from __future__ import annotations

import subprocess
import sys

import pytest


PROBE = ("import atexit, sys\n"
         "atexit.register(lambda: print('MODULES', ' '.join(sorted(sys.modules)), file=sys.stderr))\n"
         "from tokenomy.cli import main\n"
         "sys.argv = ['tokenomy'] + sys.argv[1:]\n"
         "main()\n")


def loaded(*argv: str) -> tuple[set[str], str]:
    p = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120)
    line = next(x for x in p.stderr.splitlines() if x.startswith("MODULES "))
    return set(line.split()[1:]), p.stdout


def tops(mods: set[str]) -> set[str]:
    return {m.split(".")[0] for m in mods}


def test_help_loads_no_numpy_pydantic_or_rich():
    mods, out = loaded("--help")
    assert "decode" in out and "serve" in out  # every command is still listed
    assert not tops(mods) & {"numpy", "pydantic", "rich", "markdown_it", "pandas"}


def test_a_json_answer_loads_no_rich():
    mods, out = loaded("decode", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--batch", "1,64", "--json")
    assert '"batch": 64' in out
    assert not tops(mods) & {"rich", "pandas", "plotly", "fastapi", "torch"}


def test_training_help_lists_core_memory_choices():
    from tokenomy.cli import training
    from tokenomy.core.memory import SCHEDULES, STRATEGIES

    assert training.SCHEDULES == ", ".join(SCHEDULES)
    assert training.STRATEGIES == ", ".join(STRATEGIES)
    from tokenomy.core.attention_kernel import ATTENTION_KERNELS
    from tokenomy.core.fp8_casts import FP8_SCALINGS

    assert training.ATTENTION_KERNELS == ", ".join(ATTENTION_KERNELS)
    assert training.FP8_SCALINGS == ", ".join(FP8_SCALINGS)


def test_main_builds_only_the_command_asked_and_restores_the_app(monkeypatch, capsys):
    from tokenomy.cli import app, commands, main  # noqa: F401

    before = list(app.registered_commands)
    monkeypatch.setattr(sys, "argv", ["tokenomy", "hardware", "h100-sxm", "--json"])
    with pytest.raises(SystemExit) as e:
        main()
    assert e.value.code == 0 and '"h100-sxm"' in capsys.readouterr().out
    assert app.registered_commands == before


@pytest.mark.parametrize("argv, code, text", [
    (["decode", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--chips", "abc"], 2,
     "--chips: 'abc' is not a number; allowed: whole numbers in [1, 1,048,576]"),
    (["decode", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--flops-fraction", "x"], 2,
     "--flops-fraction: 'x' is not a number; allowed: numbers in [0.001, 1]"),
    (["nosuchcommand"], 2, "No such command"),
])
def test_rejections_stay_one_line(monkeypatch, capsys, argv, code, text):
    from tokenomy.cli import main

    monkeypatch.setattr(sys, "argv", ["tokenomy", *argv])
    with pytest.raises(SystemExit) as e:
        main()
    err = capsys.readouterr().err.strip()
    assert e.value.code == code and text in err and len(err.splitlines()) == 1


def test_command_modules_name_where_each_command_is_registered():
    from tokenomy.cli import app, commands  # noqa: F401  (registers every command)
    from tokenomy.cli.app import COMMAND_MODULES

    registered = {c.name: c.callback.__module__.removeprefix("tokenomy.cli.") for c in app.registered_commands}
    assert COMMAND_MODULES == registered


def test_a_command_loads_only_its_own_cli_module():
    mods, _ = loaded("hardware", "h100-sxm", "--json")
    cli = {m for m in mods if m.startswith("tokenomy.cli.")}
    assert cli <= {"tokenomy.cli.app", "tokenomy.cli.foundation", "tokenomy.cli.options", "tokenomy.cli.render",
                   "tokenomy.cli.numbers"}  # every command's number options read the grammar (cli/numbers.graded)
