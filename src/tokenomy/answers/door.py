"""The public door of every answer: its full signature, its options in the docstring, its values parsed.

``@door()`` on an answer function (``@door(KEYWORDS)`` where it takes ``**kw``: the keywords it accepts there and
their defaults, which it builds into a request object) makes what ``tk.decode`` and the web's ``/api/decode`` call:

- a real signature: the function's keywords plus those it forwards (``help(tk.decode)`` lists them all), and a
  docstring whose "Options" section comes from the bounds table (answers/inputs.FIELDS: range and unit);
- every keyword value parsed by the one grammar (answers/inputs): ``isl="4k"`` is 4096, ``context="1..4096"`` the
  powers of two, ``hop_latency=-1`` refused naming ``hop_latency`` — the same strings the CLI and the web take;
- a misspelt keyword named against the public function: ``tk.decode() got an unexpected keyword 'contxt'`` (did
  you mean 'context'?), never an internal function's name.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from typing import Callable, Mapping

from tokenomy.answers import inputs

LISTS = frozenset({"global_batch", "hold", "concurrency", "rate", "think_s", "dram_bytes"})  # lists whatever their default
LOAD_POINTS = frozenset({"concurrency", "rate"})  # a numeric array of them stays one array (tk.serve's 10^5-point grids)


def takes_list(name: str, default) -> bool:
    """Whether keyword ``name`` of an answer takes a list: always for LISTS, else when its default is one."""
    return name in LISTS or isinstance(default, (tuple, list))


def parse(name: str, default, value):
    """One keyword's value through the grammar: numbers by the bounds table (lists where the keyword takes one),
    names given as text by answers/input_names (choices, dtypes, catalog names); anything else (objects, arrays for
    internal callers) is left to the answer's own checks."""
    if isinstance(value, str) and name not in inputs.FIELDS:
        from tokenomy.answers import input_names

        return input_names.name(name, value) if input_names.checked(name) else value
    if value is None or name not in inputs.FIELDS:
        return value
    if takes_list(name, default):
        if name in LOAD_POINTS and getattr(value, "ndim", 0) and not isinstance(value, str):
            return inputs.number_array(name, value)  # checked at once, never a Python number per point
        return inputs.numbers(name, value)
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return inputs.number(name, value)
    if isinstance(value, (list, tuple)):  # as the text '1,2' is refused here: never a raw TypeError further in
        raise inputs.InputError(name, f"one value here, not a list of {len(value)}")
    return value


def _keywords(forward: "Callable | Mapping") -> list[inspect.Parameter]:
    if isinstance(forward, Mapping):  # {keyword: default}
        return [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=v) for k, v in forward.items()]
    return [p.replace(kind=p.KEYWORD_ONLY) for p in inspect.signature(forward).parameters.values()
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is not p.empty]


def public_signature(fn: Callable, forward: "Callable | Mapping | None" = None,
                     hide: tuple[str, ...] = ()) -> inspect.Signature:
    """``fn``'s parameters with its ``**kw`` replaced by the keywords of ``forward`` (a mapping keyword -> default,
    or a function's keyword parameters with a default) that ``fn`` does not name, less ``hide`` (what ``fn`` sets
    itself)."""
    sig = inspect.signature(fn)
    own = [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
    if forward is None:
        return sig
    names = {p.name for p in own}
    more = [p for p in _keywords(forward) if p.name not in names and p.name not in hide]
    return sig.replace(parameters=own + more)


def _option(p: inspect.Parameter) -> str:
    default = "required" if p.default is p.empty else f"default {p.default!r}"
    if p.name not in inputs.FIELDS:
        return f"    {p.name}: {default}"
    return f"    {p.name}: {inputs.help_text(p.name, takes_list(p.name, p.default))[:-1]}; {default}"


def docstring(fn: Callable, sig: inspect.Signature) -> str:
    """The function's docstring and an Options section from the bounds table."""
    lines = [_option(p) for p in sig.parameters.values() if p.kind is not p.VAR_POSITIONAL]
    return (f"{inspect.cleandoc(fn.__doc__ or '')}\n\nOptions (numbers take the CLI's grammar: 128k, 1,8,64, "
            "1..4096, 1k..1M:8log; see tokenomy.answers.inputs):\n" + "\n".join(lines))


def door(forward: "Callable | Mapping | None" = None, hide: tuple[str, ...] = ()) -> Callable[[Callable], Callable]:
    """The decorator (module docstring); ``forward``: the keywords the function takes in its ``**kw`` (a mapping
    keyword -> default, or the function it passes them to), less ``hide``."""

    def wrap(fn: Callable) -> Callable:
        sig = public_signature(fn, forward, hide)
        params = sig.parameters
        accepts_any = forward is None and any(p.kind is p.VAR_KEYWORD for p in params.values())

        @functools.wraps(fn)
        def answer(*args, **kw):
            for k in kw:
                if k not in params and not accepts_any:
                    near = difflib.get_close_matches(k, list(params), 1)
                    raise TypeError(f"tk.{fn.__name__}() got an unexpected keyword {k!r}"
                                    + (f" (did you mean {near[0]!r}?)" if near else ""))
            return fn(*args, **{k: parse(k, params[k].default if k in params else None, v) for k, v in kw.items()})

        answer.__signature__ = sig
        answer.__doc__ = docstring(fn, sig)
        answer.__wrapped__ = fn
        return answer

    return wrap
