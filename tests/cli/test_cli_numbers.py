"""Every number option of every command reads the one grammar (cli/numbers.py): from the registry, each option
whose parameter is an int or a float refuses a word and a value past its row of answers/inputs.FIELDS in the
answers' words, naming the flag, and reads a k suffix as 2^10 (typer alone would say 'Input should be a valid
integer' and refuse 1k)."""

from __future__ import annotations

import inspect
import typing

import pytest
import typer.main
from cli_runner import CliRunner

from tokenomy.answers import inputs
from tokenomy.cli import app, commands  # noqa: F401  (registers every command)
from tokenomy.cli.numbers import NUMBER_TYPES, flag_of, grammar


def number_options() -> list[tuple[str, str, list[str]]]:
    """(command, --flag, the required options with a placeholder) for every int/float option of every command."""
    group = typer.main.get_command(app)
    out = []
    for c in app.registered_commands:
        hints = typing.get_type_hints(c.callback)
        cmd = group.commands[c.name]
        required = [a for p in cmd.params if p.required and p.opts[0].startswith("--") for a in (p.opts[0], "x")]
        for p in inspect.signature(c.callback).parameters.values():
            if hints.get(p.name) in NUMBER_TYPES:
                out.append((c.name, "--" + flag_of(p.default, p.name).replace("_", "-"), required))
    return out


OPTIONS = number_options()


def test_the_registry_has_the_numbers_the_audit_counted():
    assert len(OPTIONS) >= 150  # 159 int/float options over the commands on 2026-12-05 (110 read by click alone)


@pytest.mark.parametrize("command, flag, required", OPTIONS, ids=[f"{c}{f}" for c, f, _ in OPTIONS])
def test_every_number_option_refuses_in_the_grammars_words(command, flag, required):
    name = flag[2:].replace("-", "_")
    f = inputs.field_of(name)
    for text, says in (("abc", "'abc' is not a number; allowed: "), (str(int(f.hi * 4)), "out of range " + str(f))):
        r = CliRunner().invoke(app, [command, *required, flag, text])
        out = r.output.strip()
        assert r.exit_code == 2 and len(out.splitlines()) == 1, (command, flag, text, out)
        assert out.startswith(f"error: {flag}: ") and says in out, (command, flag, text, out)


def test_the_grammar_reads_suffixes_as_the_web_and_python_do():
    assert grammar("context")("1k") == 1024 and grammar("nvme_bytes")("512G") == 512 * 2**30
    with pytest.raises(typer.BadParameter, match="one value here, not a list"):
        grammar("tp")("1,2")
