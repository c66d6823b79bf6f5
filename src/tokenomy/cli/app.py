"""The typer app, shared option parsing, and the error contract: one line on stderr, exit code 2.

Command modules (foundation.py, ...) register on ``app``; keep torch, plotly and fastapi out of imports here.
"""

from __future__ import annotations

import functools
import sys
from types import SimpleNamespace
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


INT_MSG = "Input should be a valid integer, unable to parse string as an integer"
FLOAT_MSG = "Input should be a valid number, unable to parse string as a number"
MAX_INT = 2**53


def plain_number(kind: type, text: str) -> int | float:
    """'12', ' 12 ', '+5', '1_000', '12.0' (int) or '1e3', 'inf' (float) as typer's pydantic coercion reads them,
    without importing pydantic; ValueError with pydantic's wording otherwise (ASCII digits only, as pydantic)."""
    t = text.strip()
    if not t.isascii():
        raise ValueError(INT_MSG if kind is int else FLOAT_MSG)
    try:
        if kind is float:
            return float(t)
        whole, dot, frac = t.partition(".")
        if dot and (not frac or frac.strip("0")):
            raise ValueError
        v = int(whole)
    except ValueError:
        raise ValueError(INT_MSG if kind is int else FLOAT_MSG) from None
    if abs(v) > MAX_INT:  # beyond what a float (and numpy's arrays) hold exactly: refused, never a traceback later
        raise ValueError(f"Input should be a whole number of magnitude at most 2^53, got {t[:40]}")
    return v


def _light_coercion():
    """A typer runtime-coercion class for plain str/int/float/bool options, or None where this typer has none.

    typer (>= 0.2x) coerces each option through a pydantic TypeAdapter built on first use (an unset option's None
    included): its imports are ~45 ms of a simple command's start-up. A plain str, int or float (no min/max, no
    parser) or a flag needs none of it; anything else is handed to typer's own coercion."""
    try:
        from typer._coercion import RuntimeParam, build_runtime_param
        from typer.core import _TyperParameter  # noqa: F401
    except ImportError:
        return None

    class Light(RuntimeParam):
        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            kind = self.annotation
            if type(value) is kind:
                return value
            if kind is float and type(value) is int:  # an int default of a float option, as pydantic gives it
                return float(value)
            if not isinstance(value, str) or kind is bool:
                return build_runtime_param(param.type_descriptor)._coerce_value(value, param=param, ctx=ctx)
            if kind is str:
                return value
            try:
                return plain_number(kind, value)
            except ValueError as e:
                raise cx.BadParameter(str(e), ctx=ctx, param=param) from None

    return Light


def _plain(param: Any) -> bool:
    desc = getattr(param, "type_descriptor", None)
    info = getattr(desc, "parameter_info", None)
    return (info is not None and getattr(desc, "annotation", None) in (str, int, float, bool) and param.nargs == 1
            and not param.multiple and getattr(param, "_runtime_param", 0) is None
            and all(getattr(info, k, None) is None for k in ("min", "max", "parser")) and not getattr(info, "clamp", None))


def light_coercion(group: Any) -> None:
    """Give every plain option of every command the pydantic-free coercion (see _light_coercion)."""
    light = _light_coercion()
    if light is None:
        return
    for cmd in [group, *getattr(group, "commands", {}).values()]:
        try:  # --help is made on first use, then cached; a typer that makes it otherwise keeps its own coercion
            helps = [cmd.get_help_option(SimpleNamespace(help_option_names=["--help"]))]
        except (AttributeError, TypeError):
            helps = []
        for p in [*cmd.params, *(h for h in helps if h is not None)]:
            if _plain(p):
                p._runtime_param = light(parameter_info=p.type_descriptor.parameter_info,
                                         annotation=p.type_descriptor.annotation)


class OneLineErrors(TyperGroup):
    """The root command: every rejection, click's own included, is one line on stderr and exit code 2; --json
    with --csv is refused for every command; --wide may also follow the command's name."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        cut = argv.index("--") if "--" in argv else len(argv)
        if "--wide" in argv[1:cut]:  # a per-command --wide means the global one
            argv = ["--wide"] + [a for i, a in enumerate(argv) if a != "--wide" or i >= cut]
        light_coercion(self)
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
                  rich_markup_mode=None,  # click's plain help: typer's rich panels import rich and markdown-it (~50 ms)
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


def float_list(name: str, text: str | None, *, positive: bool = False) -> list[float] | None:
    """'1,4.5,16' -> [1.0, 4.5, 16.0] (blank items skipped); None when the option was not given; ``positive``:
    every value > 0 (rates, concurrencies)."""
    if text is None:
        return None
    try:
        out = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--{name}: {text!r} is not a comma list of numbers") from None
    if not out:
        raise UsageError(f"--{name}: empty; give at least one value")
    if positive and any(not v > 0 for v in out):
        raise UsageError(f"--{name}: must be > 0, got {text!r}")
    return out


# command -> the module under tokenomy.cli that registers it (tests/cli/test_cli_lazy.py checks this against
# commands.py): a process imports only the module of the command it runs
COMMAND_MODULES = {
    **dict.fromkeys(("models", "model", "hardware", "decode", "estimate", "prefill", "demo"), "foundation"),
    "web": "web", "plan": "parallel", "train": "training", "lifecycle": "lifecycle", "rl": "lifecycle",
    **dict.fromkeys(("batch", "latency", "context"), "serving"),
    **dict.fromkeys(("pricing", "speculate", "cache", "lecture"), "serving_econ"),
    "validate": "fidelity", "calibrate": "fidelity", "revnet-demo": "reversible", "serve": "serve", "sweep": "sweep",
}


def asked_command(argv: Sequence[str]) -> str | None:
    """The command a command line names (its first word that is not an option), if it is one."""
    word = next((a for a in argv if not a.startswith("-")), None)
    return word if word in COMMAND_MODULES else None


def main() -> None:
    """The ``tokenomy`` process: it imports only the module of the command asked for, and typer turns only that
    command into a click command (every command for the root's --help or a name to refuse), which saves importing
    and building ~30 commands' options on every start."""
    import importlib

    name = asked_command(sys.argv[1:])
    importlib.import_module(f"tokenomy.cli.{COMMAND_MODULES[name]}" if name else "tokenomy.cli.commands")
    every = list(app.registered_commands)
    if name is not None:
        app.registered_commands = [c for c in every if c.name == name]
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
    finally:
        app.registered_commands = every
