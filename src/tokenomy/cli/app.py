"""The typer app, shared option parsing, and the error contract: one line on stderr, exit code 2.

Command modules (foundation.py, ...) register on ``app``; keep torch, plotly and fastapi out of imports here.
"""

from __future__ import annotations

import functools
import sys
from typing import Callable, TypeVar

import typer

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="tokenomy: what it costs to train and serve an LLM, and why (roofline, layouts, $).")

F = TypeVar("F", bound=Callable)


class UsageError(ValueError):
    """Bad input from the user; printed as one line with exit code 2."""


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


def int_list(name: str, text: str) -> list[int]:
    """'1,8,64' -> [1, 8, 64]; also ranges 'a..b' as powers of two ('1..4096')."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        try:
            if ".." in part:
                lo, hi = (int(float(x)) for x in part.split(".."))
                v = lo
                while v <= hi:
                    out.append(v)
                    v *= 2
                continue
            v = float(part)
        except ValueError:
            raise UsageError(f"--{name}: {part!r} is not a number; use e.g. 1,8,64 or 1..4096") from None
        if v != int(v) or v <= 0:
            raise UsageError(f"--{name}: {part} must be a positive integer")
        out.append(int(v))
    if not out or any(v <= 0 for v in out):
        raise UsageError(f"--{name}: needs positive integers, e.g. 1,8,64")
    return out


def main() -> None:
    from tokenomy.cli import commands  # noqa: F401  (registers every command)

    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
