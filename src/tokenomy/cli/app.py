"""The typer app, shared option parsing, and the error contract: one line on stderr, exit code 2.

Command modules (foundation.py, ...) register on ``app``; keep torch, plotly and fastapi out of imports here.
"""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable, Sequence, TypeVar

import typer
from typer._click import exceptions as cx  # typer vendors click; its parse errors are these classes
from typer.core import TyperGroup

F = TypeVar("F", bound=Callable)


class UsageError(ValueError):
    """Bad input from the user; printed as one line with exit code 2."""


def click_message(e: cx.ClickException) -> str:
    """A click parsing error (missing option, bad integer, unknown option) as the one line the contract asks for."""
    ctx = getattr(e, "ctx", None)
    where = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    param = getattr(e, "param", None)
    if isinstance(e, cx.MissingParameter) and param is not None:
        opts = getattr(param, "opts", None)
        name = opts[0] if param.param_type_name == "option" and opts else str(getattr(param, "name", None) or "argument").upper()
        return f"{name}: required{where}"
    lines = [x.strip() for x in e.format_message().splitlines() if x.strip()]
    return " ".join(lines) + where


class OneLineErrors(TyperGroup):
    """The root command: every rejection, click's own included, is one line on stderr and exit code 2; --json
    with --csv is refused for every command; --wide may also follow the command's name."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        cut = argv.index("--") if "--" in argv else len(argv)
        if "--wide" in argv[1:cut]:  # a per-command --wide means the global one
            argv = ["--wide"] + [a for i, a in enumerate(argv) if a != "--wide" or i >= cut]
        try:
            if "--json" in argv[:cut] and "--csv" in argv[:cut]:
                raise cx.UsageError("--json and --csv: choose one")
            rv = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except cx.NoArgsIsHelpError as e:
            if not standalone_mode:
                raise
            typer.echo(e.ctx.get_help() if e.ctx is not None else e.format_message())
            sys.exit(0)
        except cx.ClickException as e:
            if not standalone_mode:
                raise
            typer.echo(f"error: {click_message(e)}", err=True)
            sys.exit(2)
        except typer.Abort:
            if not standalone_mode:
                raise
            sys.exit(130)
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)


app = typer.Typer(cls=OneLineErrors, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="tokenomy: what it costs to train and serve an LLM, and why (roofline, layouts, $).")


@app.callback()
def _root(ctx: typer.Context,
          wide: bool = typer.Option(False, "--wide", help="Show every table column (by default tables fit the "
                                                          "terminal and a note names what was left out).")) -> None:
    ctx.obj = {"wide": wide}


def fail(msg: str) -> None:
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(2)


def as_option(msg: str) -> str:
    """An answer's 'field_name: ...' in the CLI's words: '--field-name: ...' (other messages unchanged)."""
    field, sep, rest = msg.partition(":")
    if sep and field.isidentifier() and field.islower():
        return f"--{field.replace('_', '-')}:{rest}"
    return msg


def guarded(fn: F) -> F:
    """Turn ValueError (CatalogError, ConfigError, UsageError, ...) into one line + exit code 2; an answer's
    error naming its field is re-worded with the option's name."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ValueError as e:
            msg = str(e).splitlines()[0] if str(e) else type(e).__name__
            fail(msg if isinstance(e, UsageError) else as_option(msg))

    return wrapper  # type: ignore[return-value]


SUFFIXES = {"k": 1024, "m": 1024**2}  # token counts as people write them: 128k = 131,072, 1M = 1,048,576


def _count(text: str) -> float:
    """'8192', '8e3', '128k', '1M' -> a number (k and M are powers of two, as context lengths are quoted)."""
    t = text.strip().lower()
    scale = SUFFIXES.get(t[-1:], 1) if t else 1
    return float(t[:-1] if scale != 1 else t) * scale


def int_list(name: str, text: str) -> list[int]:
    """'1,8,64' -> [1, 8, 64]; ranges 'a..b' as powers of two ('1..4096'); suffixes '128k', '1M'."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        try:
            if ".." in part:
                lo, hi = (int(_count(x)) for x in part.split(".."))
                if not 0 < lo <= hi <= 2**40:
                    raise UsageError(f"--{name}: range {part!r} must be 0 < a <= b")
                v = lo
                while v <= hi:
                    out.append(v)
                    v *= 2
                continue
            v = _count(part)
        except ValueError as e:
            if isinstance(e, UsageError):
                raise
            raise UsageError(f"--{name}: {part!r} is not a number; use e.g. 1,8,64, 1..4096 or 128k") from None
        if not (v == v and abs(v) != float("inf")) or v != int(v) or v <= 0 or v > 2**40:
            raise UsageError(f"--{name}: {part} must be a positive integer (at most 2^40)")
        out.append(int(v))
    if not out:
        raise UsageError(f"--{name}: needs positive integers, e.g. 1,8,64")
    return out


def main() -> None:
    from tokenomy.cli import commands  # noqa: F401  (registers every command)

    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
