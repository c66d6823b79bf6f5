"""What-if hardware at the doors: ``--set field=value,...`` (CLI), ``set=...`` (web), ``Hardware.with_`` (Python).

    hardware_with(hardware, "hbm_bytes_per_s=x2,usd_per_chip_hour=3.5", door="--set") -> a Hardware variant
    reports_hardware(answer)   the answer's Result says which numbers were set: its title (the CLI and web header),
                               its explain() and its JSON (``hardware_overrides``: field, base, value, factor, source)
A value is a number in SI units (``9.6e12``) or a multiplier of the catalog's value (``x2``); the fields are the
public names of specs.OVERRIDABLE. An unknown field or a value <= 0 is a ValueError starting ``set:`` (the CLI
prints ``--set: ...``, exit 2; the web answers 422 naming ``set``). The physics does not change: the engine reads
the variant's chip, links and price exactly as it reads a catalog entry's (specs.Hardware.with_).
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import replace

from tokenomy.answers.resolve import hardware_of
from tokenomy.answers.result import Later, Result
from tokenomy.specs import OVERRIDABLE, Hardware

FIELD = "set"  # the keyword every door names in its errors (--set on the CLI, set= on the web)


def parse_set(text: str) -> dict[str, str]:
    """'hbm_bytes_per_s=9.6e12, bf16_flops_per_s=x2' -> {field: value text}, each value checked by with_."""
    out: dict[str, str] = {}
    for part in str(text).split(","):
        if not part.strip():
            continue
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not key or not value:
            raise ValueError(f"{FIELD}: {part.strip()!r} is not field=value (e.g. hbm_bytes_per_s=x2); allowed "
                             f"fields: {', '.join(OVERRIDABLE)}")
        if key in out:
            raise ValueError(f"{FIELD}: {key} is set twice")
        out[key] = value
    if not out:
        raise ValueError(f"{FIELD}: give field=value pairs, e.g. hbm_bytes_per_s=x2; allowed fields: "
                         f"{', '.join(OVERRIDABLE)}")
    return out


def _value(text: str) -> str | float:
    """A multiplier stays text for with_ ('x2'); a number is read as the CLI reads one ('9.6e12')."""
    t = text.strip()
    if t.lower().startswith("x"):
        return t
    try:
        return float(t)
    except ValueError:
        return t  # with_ names the field and says what is allowed


def hardware_with(hardware, overrides, door: str = "--set") -> Hardware:
    """``hardware`` (a name, a what-if file or a Hardware) with ``overrides`` set: 'f=v,...' text or a mapping."""
    hw = hardware_of(hardware)
    if overrides is None or (isinstance(overrides, str) and not overrides.strip()):
        return hw
    pairs = parse_set(overrides) if isinstance(overrides, str) else dict(overrides)
    try:
        return hw.with_(source=f"what-if: {door}", **{k: _value(str(v)) for k, v in pairs.items()})
    except ValueError as e:
        raise ValueError(f"{FIELD}: {e}") from None


def overrides_of(hw: Hardware) -> list[dict]:
    return [o.as_dict() for o in hw.overrides]


def header_lines(hw: Hardware) -> list[str]:
    """One line per overridden number, as the explain panel shows it."""
    return [f"what-if hardware {hw.name}: {o.describe()} ({o.source})" for o in hw.overrides]


def annotate(res: Result, hw: Hardware) -> Result:
    """``res`` with ``hw``'s overrides in its title, its derivation and its payload (a list payload becomes
    {"hardware_overrides": [...], "rows": [...], ...}: the set numbers travel with the answer)."""
    if not hw.overrides or "hardware_overrides" in res.extra:
        return res
    lines = header_lines(hw)
    derivation = res.derivation
    if type(res).payload is not Result.payload:  # a one-record answer (lifecycle): its record carries them
        table = res.table
        return replace(res, title=f"{hw.label()} | {res.title}", table=Later(
            lambda: [{**r, "hardware_overrides": overrides_of(hw)} for r in table]),
            extra={**res.extra, "hardware_overrides": overrides_of(hw)}, derivation=Later(lambda: [*lines, *derivation]))
    return replace(res, title=f"{hw.label()} | {res.title}", extra={**res.extra, "hardware_overrides": overrides_of(hw)},
                   derivation=Later(lambda: [*lines, *derivation]), rows_key=res.rows_key or "rows")


def _overridden(value) -> Hardware | None:
    """The Hardware an answer was given, where it carries overrides (a what-if file by path included)."""
    if isinstance(value, Hardware):
        return value if value.overrides else None
    if isinstance(value, str) and value.endswith(".toml"):
        hw = hardware_of(value)
        return hw if hw.overrides else None
    return None


def annotated(res, hardware):
    """``res`` naming the set numbers of the ``hardware`` it was answered on (a name, a what-if file, a Hardware)."""
    hw = _overridden(hardware)
    return annotate(res, hw) if hw is not None and isinstance(res, Result) else res


def reports_hardware(answer):
    """Decorate an answer taking ``hardware``: its Result says which of the hardware's numbers were set."""
    sig = inspect.signature(answer)

    @functools.wraps(answer)
    def wrapper(*args, **kw):
        res = answer(*args, **kw)
        try:
            given = sig.bind_partial(*args, **kw).arguments.get("hardware")
        except TypeError:
            return res
        return annotated(res, given)

    return wrapper
