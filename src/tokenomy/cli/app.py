"""The typer app, shared option parsing, and the error contract: one line on stderr, exit code 2.

Command modules (foundation.py, ...) register on ``app``; keep torch, plotly and fastapi out of imports here.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from contextvars import ContextVar
from typing import Any, Callable, Iterator, Sequence, TypeVar

import typer
from typer.core import TyperGroup

F = TypeVar("F", bound=Callable)


class UsageError(ValueError):
    """Bad input from the user; printed as one line with exit code 2."""


WIDE: ContextVar[bool] = ContextVar("tokenomy_cli_wide", default=False)  # --wide of the command being run


def _kind(e: BaseException) -> str:
    """The name of a click exception's class. typer vendors click and exposes only the common base
    (typer.TyperException) publicly, so the kinds the contract treats apart are told by name, not by a private import."""
    return type(e).__name__


def click_message(e: typer.TyperException) -> str:
    """A click parsing error (missing option, bad integer, unknown option) as the one line the contract asks for."""
    ctx = getattr(e, "ctx", None)
    where = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    param = getattr(e, "param", None)
    if _kind(e) == "MissingParameter" and param is not None:
        opts = getattr(param, "opts", None)
        name = opts[0] if param.param_type_name == "option" and opts else str(getattr(param, "name", None) or "argument").upper()
        return f"{name}: required{where}"
    if _kind(e) == "BadParameter" and param is not None and getattr(param, "opts", None):
        long = [o for o in param.opts if o.startswith("--")] or param.opts
        return f"{long[0]}: {e.message}{where}"  # the answers' words: '--chips: 1.5 is not a whole number; ...'
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
        if "--json" in argv[:cut] and "--csv" in argv[:cut]:
            if not standalone_mode:
                raise UsageError("--json and --csv: choose one")
            fail("--json and --csv: choose one", code=None)
        token = WIDE.set("--wide" in argv[:1])
        try:
            rv = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except typer.TyperException as e:  # click's parse errors (typer's vendored click derives them from this)
            if not standalone_mode:
                raise
            if _kind(e) == "NoArgsIsHelpError":
                ctx = getattr(e, "ctx", None)
                typer.echo(ctx.get_help() if ctx is not None else e.format_message())
                sys.exit(0)
            fail(click_message(e), code=None)
        except typer.Abort:
            if not standalone_mode:
                raise
            sys.exit(130)
        finally:
            WIDE.reset(token)
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)


class App(typer.Typer):
    """The typer app whose commands read every number option through the one grammar (cli/numbers.graded)."""

    def command(self, *args: Any, **kwargs: Any) -> Callable[[F], F]:
        register = super().command(*args, **kwargs)

        def decorator(fn: F) -> F:
            from tokenomy.cli.numbers import graded

            return register(graded(fn))

        return decorator


app = App(cls=OneLineErrors, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  rich_markup_mode=None,  # click's plain help: typer's rich panels import rich and markdown-it (~50 ms)
                  help="tokenomy: what it costs to train and serve an LLM, and why (roofline, layouts, $).")


@app.callback()
def _root(wide: bool = typer.Option(False, "--wide", help="Show every table column (by default tables fit the "
                                                          "terminal and a note names what was left out).")) -> None:
    """(--wide is read by OneLineErrors.main into WIDE before the command runs.)"""


def fail(msg: str, code: int | None = 2) -> None:
    """The error contract: 'error: <one line>' on stderr and exit code 2 (raised as typer.Exit inside a command;
    code=None: outside click's call, where the process exits directly)."""
    typer.echo(f"error: {msg}", err=True)
    if code is None:
        sys.exit(2)
    raise typer.Exit(code)


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


# command -> the module under tokenomy.cli that registers it (tests/cli/test_cli_lazy.py checks this against
# commands.py): a process imports only the module of the command it runs
COMMAND_MODULES = {
    **dict.fromkeys(("models", "model", "hardware", "decode", "estimate", "prefill", "demo"), "foundation"),
    "web": "web", "plan": "parallel", "train": "training", "lifecycle": "lifecycle", "rl": "lifecycle",
    **dict.fromkeys(("batch", "latency", "context"), "serving"),
    **dict.fromkeys(("pricing", "speculate", "cache", "lecture"), "serving_econ"),
    "validate": "fidelity", "calibrate": "fidelity", "revnet-demo": "reversible", "serve": "serve", "sweep": "sweep",
    "min-chips": "sizing",
}


def asked_command(argv: Sequence[str]) -> str | None:
    """The command a command line names (its first word that is not an option), if it is one."""
    word = next((a for a in argv if not a.startswith("-")), None)
    return word if word in COMMAND_MODULES else None


@contextlib.contextmanager
def narrowed(argv: Sequence[str]) -> Iterator[None]:
    """``app`` with only the command ``argv`` names registered (every command where it names none: the root's
    --help, a name to refuse), restored after: typer turns each registered command into a click command on every
    call (~30 ms for all of them), so a process, or an in-process test runner, builds only the one it runs."""
    name = asked_command(argv)
    every = list(app.registered_commands)
    if name is not None:
        app.registered_commands = [c for c in every if c.name == name]
    try:
        yield
    finally:
        app.registered_commands = every


def main() -> None:
    """The ``tokenomy`` process: it imports only the module of the command asked for, and typer turns only that
    command into a click command (``narrowed``), which saves importing and building ~30 commands' options on every
    start."""
    import importlib

    name = asked_command(sys.argv[1:])
    importlib.import_module(f"tokenomy.cli.{COMMAND_MODULES[name]}" if name else "tokenomy.cli.commands")
    with narrowed(sys.argv[1:]):
        try:
            app()
        except KeyboardInterrupt:
            sys.exit(130)
