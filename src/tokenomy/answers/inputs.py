"""The one grammar for user values, and their bounds: the CLI, the web and ``tk.*`` parse every value through here.

A number: ``8192``, ``8e3``, ``0.5``, ``-1`` (where the bound allows it), or a count with a suffix that is a power
of two, as context lengths are quoted: ``k`` = 2^10, ``M`` = 2^20, ``G`` = 2^30 (case-insensitive: ``128k`` =
131,072, ``1M`` = 1,048,576). ``inf``, ``nan``, ``1e400`` (not finite), ``1_000`` and an empty value are refused.

A list: comma-separated values or ranges, ``1,64,256``:

    a..b         the powers of two from a: a, 2a, 4a, ... <= b       1..4096 -> 1, 2, 4, ..., 4096
    a..b:s       a linear step s: a, a+s, ... <= b                  1..4096:64 -> 1, 65, 129, ..., 4033
    a..b:Nlog    N points spaced evenly in log from a to b (both      1k..1M:256log -> 256 contexts
                 ends included; whole-number fields round and drop
                 repeats)

A list that reads as one round number with thousands separators (1-3 digits, then groups of exactly three, the
number a power of two, a multiple of 1,000 or a group with a leading zero: ``8,192``, ``1,024``, ``128,000``,
``3,072``) is refused as ambiguous with a hint: write ``8192``, or ``8, 192`` (a space after the comma) for a list;
``256,512`` and ``64,128`` are the lists they read as. Names (dtypes, engines, methods, ...) are checked against their allowed values.

Every field's bounds are in ``FIELDS`` (input_bounds.py, re-exported here: name -> whole number or not, [lo, hi],
unit, help); the web's numeric parameters, the CLI's options and the answers' keywords of the same name share them.
A refusal is an ``InputError`` (a ValueError) whose message starts with the field's name (``context: ...``): the CLI
words it as ``--context: ...`` (exit 2), the web answers 422 naming the field, Python raises it as it is.
"""

from __future__ import annotations

import math
import re

from tokenomy.answers.input_bounds import (  # noqa: F401  (re-exported: callers write inputs.<name>)
    DEGREE, FIELDS, MAX_BATCH, MAX_CHIPS, MAX_CONTEXT, MAX_WHOLE, PARAMS, POOL, SECONDS, SHARE, UTILISATION, Field,
    field_of, help_text, readable)
from tokenomy import refusal
from tokenomy.refusal import InputError  # noqa: F401  (re-exported: callers write inputs.InputError)

SUFFIXES = {"k": 2**10, "m": 2**20, "g": 2**30}  # 128k = 131,072 tokens: how context lengths are quoted
MAX_VALUES = 1 << 20  # values in one list or range (a sweep axis of a million contexts; the web asks fewer)
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?([kKmMgG]?)")
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+")
_STEP = re.compile(r"(.*?)(log)?", re.IGNORECASE)


def _count(name: str, text: str, f: Field | None = None) -> float:
    """One number of the grammar (module docstring) as a float, unbounded; the refusal names what is allowed."""
    t = text.strip()
    m = _NUMBER.fullmatch(t)
    f = f or field_of(name)
    allowed = f"allowed: {'whole ' if f.whole else ''}numbers in {f}"
    if m is None:
        said = "a value" if "--" in t else repr(t[:40])  # a web error never shows what reads like a CLI flag
        why = "empty" if not t else f"{said} is not a number"
        raise InputError(name, f"{why}; {allowed} (e.g. 8192, 0.5, 128k)")
    suffix = m.group(1).lower()
    x = float(t[:len(t) - len(suffix)]) * SUFFIXES.get(suffix, 1)
    if not math.isfinite(x):
        raise InputError(name, f"{t[:40]} is out of range {f} (not a finite number)")
    return x


def _bounded(name: str, x: float, f: Field, shown) -> int | float:
    if f.whole:
        if x != int(x):
            raise InputError(name, f"{shown} is not a whole number; allowed: whole numbers in {f}")
        if abs(x) > MAX_WHOLE:
            raise InputError(name, f"{shown} is out of range {f}")
    if not f.admits(x):
        raise InputError(name, f"{shown} is out of range {f}")
    return int(x) if f.whole else float(x)


def number(name: str, value) -> int | float:
    """One value of field ``name`` (text in the grammar, or a Python number), bounded by its FIELDS row."""
    f = field_of(name)
    if isinstance(value, str):
        _one(name, value.strip())
        return _bounded(name, _count(name, value), f, value.strip()[:40])
    if isinstance(value, bool) or value is None:
        raise InputError(name, f"{value!r} is not a number; allowed: {f}")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InputError(name, f"{str(value)[:40]!r} is not a number; allowed: {f}") from None
    if not math.isfinite(x):
        raise InputError(name, f"{value} is out of range {f} (not a finite number)")
    return _bounded(name, x, f, readable(x) if x == int(x) and abs(x) < 1e10 else value)


def _not_thousands(name: str, text: str) -> None:
    """Refuse '8,192' (module docstring): one number written with a separator, or a list of 8 and 192?"""
    if reads_as_thousands(text):
        one = text.replace(",", "")
        raise InputError(name, f"{text} reads as one number with a thousands separator: did you mean {one}? "
                               f"Write {one}, or '{text.replace(',', ', ')}' (a space after each comma) for a list")


def reads_as_thousands(text: str) -> bool:
    """'8,192', '1,024', '128,000', '3,072': groups of three after 1-3 digits that read as one round number (a power
    of two, a multiple of 1,000, or a group with a leading zero, which no list is written with); '256,512' and
    '64,128' read as the lists they are."""
    if not _THOUSANDS.fullmatch(text):
        return False
    n, groups = int(text.replace(",", "")), text.split(",")[1:]
    return n & (n - 1) == 0 or n % 1000 == 0 or any(g.startswith("0") for g in groups)


def _one(name: str, text: str) -> None:
    """A field that takes one value refuses a list or range, with the thousands hint where it reads as one."""
    _not_thousands(name, text)
    if "," in text or ".." in text:
        raise InputError(name, f"{text[:40]!r}: one value here, not a list")


def optional(name: str, value) -> int | float | None:
    """``number`` for a keyword that may be left out (None)."""
    return None if value is None else number(name, value)


def _range(name: str, part: str, f: Field) -> list[float]:
    """'a..b', 'a..b:s' or 'a..b:Nlog' (module docstring) as its values, before bounds."""
    ends, _, step = part.partition(":")
    a, _, b = (x.strip() for x in ends.partition(".."))
    lo, hi = _count(name, a), _count(name, b)
    if not lo <= hi:
        raise InputError(name, f"range {part.strip()!r} must run from a low to a high value (a..b with a <= b)")
    if not step.strip():
        if lo <= 0:
            raise InputError(name, f"range {part.strip()!r}: powers of two start above 0")
        n = int(math.floor(math.log2(hi / lo) + 1e-12)) + 1
        return _capped(name, part, n, lambda: [lo * 2**i for i in range(n)])
    s = step.strip()
    if s.lower().endswith("log"):
        count = _count(name, s[:-3])
        if count != int(count) or count < 2 or lo <= 0:
            raise InputError(name, f"range {part.strip()!r}: Nlog needs a whole N >= 2 and a > 0 (e.g. 1k..1M:256log)")
        k = int(count)
        return _capped(name, part, k, lambda: [lo * (hi / lo) ** (i / (k - 1)) for i in range(k)])
    d = _count(name, s)
    if d <= 0:
        raise InputError(name, f"range {part.strip()!r}: the step must be > 0")
    n = int(math.floor((hi - lo) / d + 1e-9)) + 1
    return _capped(name, part, n, lambda: [lo + i * d for i in range(n)])


def _capped(name: str, part: str, n: int, values) -> list[float]:
    if n > MAX_VALUES:
        raise InputError(name, f"range {part.strip()!r} has {n:,} values; at most {MAX_VALUES:,}")
    return values()


def _whole_points(xs: list[float], f: Field) -> list[float]:
    """A log or power range of a whole-number field on whole numbers (rounded, repeats dropped, order kept)."""
    if not f.whole:
        return xs
    return list(dict.fromkeys(float(round(x)) for x in xs))


def numbers(name: str, value) -> list:
    """A list of field ``name``: text in the list grammar (module docstring), a Python number, or a sequence
    (list, tuple, numpy array) of numbers or texts; every value bounded by the field's FIELDS row."""
    f = field_of(name)
    if not isinstance(value, str):
        fast = _numeric_array(value, f)
        if fast is not None:
            return _sized(name, fast)
        if hasattr(value, "tolist"):  # a numpy array or scalar
            value = value.tolist()
        items = list(value) if isinstance(value, (list, tuple, range)) else [value]
        if not items:
            raise InputError(name, f"empty; give at least one value in {f}")
        out = [y for x in items for y in (numbers(name, x) if isinstance(x, str) else [number(name, x)])]
        return _sized(name, out)
    text = value.strip()
    _not_thousands(name, text)
    out: list = []
    for part in (p for p in text.split(",") if p.strip()):
        if ".." in part:
            xs = _whole_points(_range(name, part, f), f)
            out += [_bounded(name, x, f, readable(x)) for x in xs]
        else:
            out.append(number(name, part))
        _sized(name, out)
    if not out:
        raise InputError(name, f"empty; give at least one value in {f} (e.g. 1,8,64 or 1..4096)")
    return out


def number_array(name: str, value):
    """``numbers(name, value)`` as one float array: a numeric array the field admits is checked at once and stays an
    array (no Python number per value: tk.serve's grids of 10^5 load points); anything else goes through numbers."""
    import numpy as np

    if not isinstance(value, str):
        x = _checked_array(value, field_of(name))
        if x is not None:
            _sized(name, x)
            return x
    return np.asarray(numbers(name, value), dtype=float)


def _numeric_array(value, f: Field) -> list | None:
    """_checked_array's values as a list (whole numbers as ints)."""
    x = _checked_array(value, f)
    if x is None:
        return None
    import numpy as np

    return x.astype(np.int64).tolist() if f.whole else x.tolist()


def _checked_array(value, f: Field):
    """A numeric numpy array (or a long list of numbers) whose every value the field admits, checked at once (a grid of 10^6 load points in
    milliseconds, not one Python check a value), as a flat float array; None where any value fails or the array is
    not numeric, so the value-by-value path names the first bad one as it always has."""
    if isinstance(value, (list, tuple)) and len(value) > 64 and set(map(type, value)) <= {int, float}:
        import numpy as np  # a long list of Python numbers (a grid a door parsed once): checked as one array

        value = np.asarray(value, float)
    kind = getattr(getattr(value, "dtype", None), "kind", "")
    if not kind or kind not in "iuf" or not getattr(value, "ndim", 0) or not value.size:
        return None
    import numpy as np  # only here: a numpy array came in, so numpy is loaded (the grammar itself needs none)

    x = np.ravel(np.asarray(value, float))
    ok = np.isfinite(x) & (x <= f.hi) & ((x > f.lo) if f.lo_open else (x >= f.lo))
    if f.whole:
        ok &= (x == np.round(x)) & (np.abs(x) <= MAX_WHOLE)
    if not ok.all():
        return None
    return x


def _sized(name: str, out: list) -> list:
    if len(out) > MAX_VALUES:
        raise InputError(name, f"more than {MAX_VALUES:,} values")
    return out


def available_memory_bytes() -> float:
    """Memory this machine can give a run now: psutil's ``available`` where psutil is installed, else the free
    physical pages (os.sysconf, which leaves out reclaimable cache: a lower bound)."""
    try:
        import psutil
    except ImportError:
        import os

        return float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    return float(psutil.virtual_memory().available)


def within_memory(name: str, count: int, bytes_each: float, what: str) -> None:
    """Refuse ``count`` of something that needs ``bytes_each`` when the machine has less available (one line
    naming the field: never killed by the kernel half-way)."""
    need, have = count * bytes_each, available_memory_bytes()
    if need > have:
        raise InputError(name, f"{count:,} {what} need about {need / 2**30:.1f} GiB (~{bytes_each:g} B each); this "
                               f"machine has {have / 2**30:.1f} GiB available: at most {int(have // bytes_each):,}")


def choice(name: str, value, allowed) -> str:
    """One of ``allowed`` names (dtypes, engines, methods, ...), as the grammar reads it (surrounding spaces
    dropped), the refusal listing them (refusal.choice: the core's checks refuse the same way)."""
    return refusal.choice(name, value.strip() if isinstance(value, str) else value, allowed)
