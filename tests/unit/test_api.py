"""The notebook API: import tokenomy as tk — the same answers as the CLI, lists crossed."""

import json

import pytest
from cli_runner import CliRunner

import tokenomy as tk
from tokenomy.cli import foundation as _decode_command  # noqa: F401  (registers `decode`)
from tokenomy.cli.app import app


def test_api_crosses_batch_and_context_and_matches_the_cli():
    m, hw = tk.model("llama-3.1-8b"), tk.hardware("h100-sxm")
    d = tk.decode(m, hw, batch=[1, 8, 64], context=[1024, 4096])
    rows = d.rows()
    assert [(r["batch"], r["context"]) for r in rows] == [(b, c) for b in (1, 8, 64) for c in (1024, 4096)]
    assert all(r["len_pass"] == 1 and r["efficiency"] == "calibrated" for r in rows)
    r = CliRunner().invoke(app, ["decode", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--batch", "1,8,64",
                                 "--context", "1024,4096", "--json"])  # as the process runs it (tests/cli_runner)
    assert r.exit_code == 0, r.stderr
    cli = json.loads(r.stdout)
    assert [r["step_s"] for r in cli] == pytest.approx([r["step_s"] for r in rows], rel=1e-12)
    assert len(d.to_pandas()) == 6 and d.explain()


def test_api_prefill_and_errors():
    m, hw = tk.model("llama-3.1-8b"), tk.hardware("h100-sxm")
    p = tk.prefill(m, hw, batch=[1], context=[1024]).rows()[0]
    assert p["len_pass"] == 1024 and p["step_s"] > p["roofline_step_s"]
    with pytest.raises(ValueError, match="len_pass: must be <= every context"):
        tk.prefill(m, hw, batch=[1], context=[10], len_pass=20)
    with pytest.raises(ValueError, match="^batch: "):
        tk.decode(m, hw, batch=[0], context=[10])
    with pytest.raises(AttributeError):
        tk.nonexistent  # noqa: B018


def test_header_names_chips_and_layout():
    # Issue 12 (6): the header said "8 x hgx-h100-8" for 8 H100 chips.
    r = tk.decode("llama-3.1-70b", "hgx-h100-8", batch=[1], context=[2048])
    assert "on 8 x h100-sxm (hgx-h100-8)" in r.title and "tp8 ep1 pp1 dp1" in r.title
    assert r.payload()[0]["plan"] == "tp8 ep1 pp1 dp1"


def test_rates_are_never_formatted_as_times():
    from tokenomy.formatting import fmt_cell

    assert fmt_cell("requests_per_s", 2.818).endswith("req/s") and fmt_cell("step_s", 0.01) == "10 ms"
    assert fmt_cell("goodput_requests_per_s", 3.0) == "3 req/s" and fmt_cell("tokens_per_s", 5.0) == "5 tok/s"


def test_lists_of_different_lengths_cross_and_context_is_optional():
    """Issue 14: batch=[1, 64] with context=[2k, 32k, 128k] is the 2 x 3 grid, as on the CLI, never a numpy
    broadcasting error; context may be left out (the CLI's default, 2048)."""
    r = tk.decode("llama-3.1-70b", "hgx-h100-8", batch=[1, 64], context=[2048, 32768, 131072])
    assert [(x["batch"], x["context"]) for x in r.rows()] == [(b, c) for b in (1, 64) for c in (2048, 32768, 131072)]
    default = tk.decode("llama-3.1-70b", "hgx-h100-8", batch=[1, 64]).rows()
    assert [x["context"] for x in default] == [2048, 2048]
    assert tk.decode("llama-3.1-70b", "hgx-h100-8", batch=64, context=2048).rows()[0]["batch"] == 64


@pytest.mark.parametrize("bad", ["abc", [[1, 2], [3]], {"a": 1}, [1, None], [], float("inf"), [1.5]])
def test_bad_batch_is_one_line_naming_the_field(bad):
    with pytest.raises(ValueError, match=r"^batch: .*(not a number|out of range|not a whole number|empty)") as e:
        tk.decode("llama-3.1-70b", "hgx-h100-8", batch=bad)
    assert "\n" not in str(e.value) and "[1, 1,048,576]" in str(e.value)


def _cli_options(command: str) -> set[str]:
    import typer.main

    from tokenomy.cli import app, commands  # noqa: F401  (registers every command)

    cmd = typer.main.get_command(app).commands[command]
    # --set's Python door is the hardware itself: tk.hardware(...).with_(...) (tests/unit/test_what_if_hardware.py)
    return {p.name for p in cmd.params} - {"as_json", "as_csv", "show", "set_"}


@pytest.mark.parametrize("command", ["train", "rl", "lifecycle", "plan"])
def test_api_functions_take_every_option_of_their_command(command):
    """tk.<command> takes each option of ``tokenomy <command>`` under the same name (dashes -> underscores)."""
    import inspect

    params = inspect.signature(getattr(tk, command)).parameters
    assert _cli_options(command) <= set(params), sorted(_cli_options(command) - set(params))


@pytest.mark.parametrize("command", ["decode", "prefill"])
def test_pass_defaults_are_the_commands(command):
    """tk.decode / tk.prefill without batch or context ask what `tokenomy decode` / `prefill` ask by default."""
    import inspect

    import typer.main

    from tokenomy.cli import app, commands  # noqa: F401
    from tokenomy.answers.inputs import numbers

    cmd = typer.main.get_command(app).commands[command]
    cli = {p.name: p.default for p in cmd.params}
    api = inspect.signature(getattr(tk, command)).parameters
    for name in ("batch", "context"):
        assert list(api[name].default) == numbers(name, cli[name])
