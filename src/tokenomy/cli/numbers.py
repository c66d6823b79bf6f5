"""Every number option of the CLI through the one grammar (answers/inputs): one mechanism, applied as a command
registers (cli/app.App.command), not one declaration per option.

A command's parameter annotated ``int`` or ``float`` (``| None`` too) whose typer option names no parser of its own
gets ``grammar(flag)`` as its parser, from the row of the bounds table (answers/inputs.FIELDS) named by its flag
(``--len-pass`` -> ``len_pass``): ``--context 1k`` is 1,024 as ``/api/plan?context=1k`` and ``tk.plan(context="1k")``
read it, and ``--chips 1.5`` is refused in the words the web and Python use (``--chips: 1.5 is not a whole number;
allowed: whole numbers in [1, 1,048,576]``). Its ``--help`` ends with what is allowed. A number option without a
row is a bug, refused at registration (tests/cli/test_cli_numbers.py registers every command).

Text options (lists such as ``--batch 1,8,64``) stay text and are parsed by the answers' door (answers/door.py)
with the same grammar. Only the light bounds table is imported here; the grammar itself loads on first use.
"""

from __future__ import annotations

import copy
import inspect
import typing
from typing import Callable

import typer
from typer.models import OptionInfo

from tokenomy.answers.input_bounds import allowed, field_of, help_text

NUMBER_TYPES = (int, float, typing.Optional[int], typing.Optional[float], int | None, float | None)


def grammar(name: str) -> Callable[[str], int | float]:
    """typer's ``parser=`` for a number option: the one grammar (answers/inputs: 4k, 1e3) and its row of the bounds
    table. A refusal is typer's public BadParameter, which passes through typer's own coercion untouched (a
    ValueError would come back as 'Value error, ...'); cli/app.click_message prints it as '--name: ...'."""
    def parse(text):
        from tokenomy.answers import inputs

        try:
            return inputs.number(name, text)
        except inputs.InputError as e:
            raise typer.BadParameter(e.msg) from None

    return parse


def flag_of(info: OptionInfo, param: str) -> str:
    """The option's long flag as a field name (``--len-pass`` -> ``len_pass``); the parameter's name without one."""
    flags = [d for decl in ((info.default,) if isinstance(info.default, str) and info.default.startswith("--") else ())
             + tuple(info.param_decls) for d in decl.split("/") if d.strip().startswith("--")]
    return flags[0].strip()[2:].replace("-", "_") if flags else param


def _numeric(info: OptionInfo, name: str) -> OptionInfo:
    """A copy of a number option with the grammar's parser and what is allowed at the end of its help."""
    f = field_of(name)  # KeyError: a number option without a row in the bounds table
    out = copy.copy(info)
    out.parser = grammar(name)
    if not info.help:
        out.help = help_text(name)
    elif str(f) not in info.help:
        out.help = f"{info.help.rstrip()} Allowed: {allowed(name)}."
    return out


def graded(fn: Callable) -> Callable:
    """``fn`` with every plain number option given the grammar (module docstring), through its ``__signature__``
    (what typer reads with inspect.signature); options with a parser of their own are kept."""
    sig = inspect.signature(fn)
    hints = typing.get_type_hints(fn)
    params = []
    for p in sig.parameters.values():
        info = p.default
        if (isinstance(info, OptionInfo) and hints.get(p.name) in NUMBER_TYPES and info.parser is None):
            p = p.replace(default=_numeric(info, flag_of(info, p.name)))
        params.append(p)
    fn.__signature__ = sig.replace(parameters=params)
    return fn
