"""Answer an API request by running the CLI command itself with ``--json``, in-process.

The JSON of ``tokenomy plan|train|lifecycle|...`` is assembled inside each command, so the one way to return
*exactly* what the CLI prints, with no second copy to drift, is to run the command. Query parameters map to the
command's own options (``min_tokens_per_user`` -> ``--min-tokens-per-user``; flags take ``true``), after the
web's checks: known parameters only, bounded lengths and values, catalog names only (no value can be a path).
Output is captured per thread (a thread-local sys.stdout/sys.stderr), so concurrent requests never mix, and the
command's one-line error (exit code 2) becomes a 422 naming the field.
"""

from __future__ import annotations

import io
import re
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Mapping

import numpy as np
import typer

from tokenomy.web import params as P

SKIP = {"as_json", "as_csv", "show"}  # --json is always given; --csv/--explain never
SAFE = re.compile(r"[A-Za-z0-9_.,:+\- ]*")  # no '/', '\\' or '~': a value can never name a file
_local = threading.local()
_SLOTS = threading.BoundedSemaphore(2)  # searches can take ~100 MB and a second each: at most two at once


class _PerThread(io.TextIOBase):
    """Writes go to this thread's capture buffer when one is active, else to the real stream."""

    def __init__(self, real, slot: str):
        self.real, self.slot = real, slot

    @property
    def encoding(self) -> str:  # click writes text to a stream that names a usable encoding, else to .buffer
        return getattr(self.real, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str:
        return getattr(self.real, "errors", None) or "strict"

    def write(self, s: str) -> int:
        buf = getattr(_local, self.slot, None)
        return (buf if buf is not None else self.real).write(s)

    def flush(self) -> None:
        if getattr(_local, self.slot, None) is None:
            self.real.flush()

    def isatty(self) -> bool:
        return False if getattr(_local, self.slot, None) is not None else self.real.isatty()

    def __getattr__(self, name):
        return getattr(self.real, name)


_install_lock = threading.Lock()


def _install() -> None:
    with _install_lock:
        if not isinstance(sys.stdout, _PerThread):
            sys.stdout = _PerThread(sys.stdout, "out")
        if not isinstance(sys.stderr, _PerThread):
            sys.stderr = _PerThread(sys.stderr, "err")


@contextmanager
def _captured():
    _install()
    _local.out, _local.err = io.StringIO(), io.StringIO()
    try:
        yield _local.out, _local.err
    finally:
        _local.out = _local.err = None


@lru_cache(maxsize=1)
def _group():
    """The CLI as typer builds it for the command line (typer ships its own click)."""
    from tokenomy.cli import commands  # noqa: F401  (registers every command)
    from tokenomy.cli.app import app

    return typer.main.get_command(app)


@dataclass(frozen=True)
class Bound:
    lo: float
    hi: float


ANY_NUMBER = Bound(-1e30, 1e30)  # any value that reads as a number: finite (no nan, no inf) and of sane size
DEGREE = Bound(1, 2**16)
# Bounds shared by every command that has the option (the CLIs type many numbers as str and parse them later).
NUMBERS = {
    "chips": Bound(1, P.MAX_CHIPS), "len_pass": Bound(1, P.MAX_CONTEXT), "flops_fraction": Bound(0, 1),
    "hbm_fraction": Bound(0, 1), "overhead_s": Bound(0, P.MAX_OVERHEAD_S), "usd_per_chip_hour": Bound(0, 1e4),
    "tp": DEGREE, "ep": DEGREE, "pp": DEGREE, "dp": DEGREE, "cp": DEGREE, "virtual_stages": DEGREE,
    "micro_batch": Bound(1, P.MAX_BATCH), "seq_len": Bound(1, P.MAX_CONTEXT), "prefix_tokens": Bound(1, P.MAX_CONTEXT),
    "prefill_batch": Bound(1, P.MAX_BATCH), "prompt_tokens": Bound(1, P.MAX_CONTEXT), "step_context": Bound(1, 1e9),
    "stall": Bound(0, 1), "rollouts": Bound(1, 2**20), "prompt_len": Bound(1, P.MAX_CONTEXT),
    "output_len": Bound(1, P.MAX_CONTEXT), "draft_tokens": Bound(1, 64), "top": Bound(0, 1000),
}
INT_LISTS = {"batch": P.MAX_BATCH, "context": P.MAX_CONTEXT, "global_batch": 2**24}  # '1,8,64' or '1..4096'
FLOAT_LISTS = {"hold": Bound(0, 1e9)}  # '0.01,1,60'


@dataclass(frozen=True)
class Option:
    flag: str  # '--min-tokens-per-user'
    kind: type  # int, float, str or bool (a flag)
    default: object = None  # the CLI's default (shown as the form's placeholder)
    help: str = ""


@dataclass(frozen=True)
class Spec:
    """One bridged command: the options the web offers (keyed like the flags, '-' -> '_') and their bounds."""

    command: str
    bounds: Mapping[str, Bound] = field(default_factory=dict)  # overrides of NUMBERS for this command
    exclude: frozenset[str] = frozenset()  # options the web does not offer
    check: Callable[[dict], None] | None = None  # a cross-field check on the checked query (a search budget)

    def options(self) -> dict[str, Option]:
        out = {}
        for p in _group().commands[self.command].params:
            key = p.opts[0].removeprefix("--").replace("-", "_")
            if p.name not in SKIP and key not in self.exclude and p.opts[0].startswith("--"):
                out[key] = Option(p.opts[0], bool if p.is_flag else p.type_descriptor.annotation,
                                  None if callable(p.default) else p.default, p.help or "")
        return out


def _float_list(name: str, value: str, b: Bound) -> None:
    parts = value.split(",")
    if len(parts) > P.MAX_LIST:
        raise P.FieldError(name, f"{len(parts)} values; at most {P.MAX_LIST}")
    for part in parts:
        P.Query({name: part}, (name,)).number(name, None, b.lo, b.hi)


def _check(spec: Spec, name: str, opt: Option, value: str) -> None:
    if not SAFE.fullmatch(value) or value in (".", ".."):
        raise P.FieldError(name, "may hold letters, digits, spaces and . , : + - only")
    if name == "model":
        P.model_by_name(value)
    elif name == "hardware":
        P.hardware_by_name(value)
    q, b = P.Query({name: value}, (name,)), spec.bounds.get(name, NUMBERS.get(name))
    if name in INT_LISTS:
        q.int_list(name, value, int(b.hi) if b else INT_LISTS[name])
    elif name in FLOAT_LISTS:
        _float_list(name, value, FLOAT_LISTS[name])
    elif opt.kind is bool:
        if value.lower() not in TRUE + FALSE:
            raise P.FieldError(name, f"{value!r} is not a yes/no value; use true or false")
    elif b is not None or opt.kind in (int, float):
        q.number(name, None, (b or ANY_NUMBER).lo, (b or ANY_NUMBER).hi)
    elif re.fullmatch(r"[-+]?[0-9.]+(e[-+]?[0-9]+)?|nan|inf|[-+]inf|infinity", value.lower()):
        q.number(name, None, ANY_NUMBER.lo, ANY_NUMBER.hi)  # a number typed as text: finite and sane


TRUE, FALSE = ("1", "true", "on", "yes"), ("0", "false", "off", "no")


def checked(spec: Spec, query: Mapping[str, str]) -> dict[str, str]:
    """The query's non-empty values, each checked and bounded; unknown keys refused."""
    opts = spec.options()
    q = P.Query(query, tuple(opts))
    values = {k: v for k in query if (v := q.text(k)) is not None}
    for name, value in values.items():
        _check(spec, name, opts[name], value)
    sizes = {k: len(P.Query(values, tuple(values)).int_list(k, "1", INT_LISTS[k])) for k in values if k in INT_LISTS}
    if len(sizes) > 1 and np.prod(list(sizes.values())) > P.MAX_GRID:
        raise P.FieldError(next(iter(sizes)), f"{' x '.join(map(str, sizes.values()))} grid points; "
                                              f"at most {P.MAX_GRID}")
    if spec.check:
        spec.check(values)
    return values


def args_for(spec: Spec, query: Mapping[str, str]) -> list[str]:
    """The command line for a query: every parameter checked, then handed to the command's own option."""
    opts, args = spec.options(), [spec.command]
    for name, value in checked(spec, query).items():
        if opts[name].kind is bool:
            args += [opts[name].flag] if value.lower() in TRUE else []
        else:
            args += [opts[name].flag, value]
    return args + ["--json"]


def _field_from(message: str, names) -> str:
    m = re.match(r"\s*(?:error:\s*)?(?:Invalid value for\s*)?'?(?:--)?([a-z0-9_-]+)", message)
    if m and m.group(1).replace("-", "_") in names:
        return m.group(1).replace("-", "_")
    return "input"


def _run(spec: Spec, args: list[str]) -> str:
    """Run the command line in this thread with its output captured; its errors become FieldErrors."""
    names = set(spec.options())
    with _SLOTS, _captured() as (out, err):
        try:
            code = _group().main(args, prog_name="tokenomy", standalone_mode=False)
        except typer.TyperException as e:  # the command line's own parse errors (bad int, missing option)
            param = getattr(e, "param", None)
            key = param.opts[0].removeprefix("--").replace("-", "_") if getattr(param, "opts", None) else None
            msg = e.format_message() if hasattr(e, "format_message") else str(e)
            raise P.FieldError(key if key in names else _field_from(msg, names), msg) from None
        except ValueError as e:  # a command without the CLI's guard: same contract
            raise P.FieldError(P.field_of(e, tuple(names)), str(e).splitlines()[0]) from None
    if code:  # guarded(): one line on stderr, exit code 2
        msg = err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else f"exit code {code}"
        msg = msg.removeprefix("error: ")
        raise P.FieldError(_field_from(msg, names), msg)
    return out.getvalue()


def run_json(spec: Spec, query: Mapping[str, str]) -> str:
    """The command's ``--json`` output for the query, byte for byte; a FieldError (422) on bad input."""
    return _run(spec, args_for(spec, query))


def run_text(spec: Spec, query: Mapping[str, str], flag: str = "--explain") -> list[str]:
    """The lines the command prints with ``flag`` (e.g. its derivation) before its first table."""
    lines = _run(spec, args_for(spec, query)[:-1] + [flag]).splitlines()
    table = next((i for i, line in enumerate(lines) if line.lstrip().startswith("┏")), len(lines))
    return [line.rstrip() for line in lines[:max(table - 1, 0)] if line.strip()]


MAX_SEARCH_CHIPS = 1024  # a layout search over 1024 chips takes ~1 s and ~100 MB; pods are searched by budget


def _search_budget(values: dict) -> None:
    if "chips" in values:
        if float(values["chips"]) > MAX_SEARCH_CHIPS:
            raise P.FieldError("chips", f"the web searches at most {MAX_SEARCH_CHIPS} chips")
        return
    if "hardware" in values and P.hardware_by_name(values["hardware"]).num_chips > MAX_SEARCH_CHIPS:
        n = P.hardware_by_name(values["hardware"]).num_chips
        raise P.FieldError("chips", f"{values['hardware']} has {n} chips; give a budget of at most "
                                    f"{MAX_SEARCH_CHIPS} to search")


SPECS = {name: Spec(name) for name in
         ("prefill", "train", "lifecycle", "rl", "batch", "latency", "context", "pricing", "speculate",
          "cache", "lecture")}
SPECS["plan"] = Spec("plan", check=_search_budget)
SPECS["decode"] = Spec("decode", exclude=frozenset({"len_pass"}))  # the CLI ignores it for decode
