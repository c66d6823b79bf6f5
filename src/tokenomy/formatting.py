"""Formatting shared by every interface (CLI, web, report): JSON as --json prints it, CSV, table cells by unit.

No rich, no web framework: the interfaces import this; nothing here computes.
"""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

from tokenomy.units import fmt_bytes, fmt_seconds, fmt_si


def _json_default(o: Any):
    if hasattr(o, "item"):
        return o.item()
    if hasattr(o, "isoformat"):
        return o.isoformat()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _clean(v: Any) -> Any:
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_clean(x) for x in v]
    return v


def to_json(obj: Any) -> str:
    return json.dumps(_clean(obj), indent=2, default=_json_default)


def to_csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    if rows:
        w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if v is None else v) for k, v in r.items()})
    return buf.getvalue()


def fmt_cell(key: str, v: Any) -> str:
    """Human formatting chosen by the unit in the key name (DESIGN.md rule 2)."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else ("NO" if key == "fits" else "no")
    if isinstance(v, (int, float)):
        if key.endswith("_per_mw"):  # tokens/s per MW of all-in power
            return fmt_si(v, "tok/s/MW")
        if key.endswith("_w") or "_w_per_" in key:
            return f"{v:,.0f} W"
        for part, unit in (("bytes_per_s", "B/s"), ("flops_per_s", "FLOP/s"), ("tokens_per_s", "tok/s"),
                           ("requests_per_s", "req/s")):
            if part in key:
                return fmt_si(v, unit)
        if key.endswith("_per_s"):  # a rate, never a time
            return fmt_si(v, "/s")
        if key.endswith("bytes_per_token"):
            return f"{v:,.0f} B"
        if key.endswith("_s"):
            return fmt_seconds(v)
        if key.endswith("bytes"):
            return fmt_bytes(v)
        if key == "mfu" or key.endswith("_mfu") or key.endswith("_fraction"):
            return fmt_percent(v)
        if "params" in key or key.endswith("flops") or key.endswith("per_s"):
            return fmt_si(v)
        if isinstance(v, float):
            return f"{v:.4g}"
    return str(v)


def band_suffix(key: str, row: dict) -> str:
    """A value's error band as percentages of it, '(-9%/+14%)', where the row carries ``key``_p10 and ``key``_p90
    (answers/error_bars.py); '' where it does not."""
    v, lo, hi = row.get(key), row.get(f"{key}_p10"), row.get(f"{key}_p90")
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not v or lo is None or hi is None:
        return ""
    return f"({100 * (lo / v - 1):+.0f}%/{100 * (hi / v - 1):+.0f}%)"


def with_band(key: str, row: dict, text: str) -> str:
    """A cell with its error band: '22.1 ms (-9%/+14%)' (band_suffix), else the cell as it was."""
    band = band_suffix(key, row)
    return f"{text} {band}" if band else text


def _decimals(a: float, figures: int) -> int:
    """Decimal places that show ``figures`` significant figures of ``a`` > 0 (never fewer than 0)."""
    return max(0, figures - 1 - math.floor(math.log10(a)))


def fmt_percent(v: float) -> str:
    """A share as a percentage people read: 0.486 -> '48.6%', 0.0123 -> '1.2%', 4e-4 -> '0.04%', 1.2e-5 ->
    '0.0012%' (two significant figures below 1%, so a small share never shows as '0.0%'); 0 -> '0%'."""
    if v != v:
        return "-"
    p = 100 * v
    if p == 0:
        return "0%"
    if abs(p) >= 1:
        return f"{p:.1f}%"
    return f"{p:.{_decimals(abs(p), 2)}f}%"


_DURATIONS = (("years", 365.25 * 86400), ("days", 86400.0), ("h", 3600.0), ("min", 60.0))


def fmt_duration(s: float) -> str:
    """Seconds as people read them: 1.388e4 -> '3.86 h', 5.076e6 -> '58.8 days', 86.4e6 -> '2.74 years'; under a
    minute as fmt_seconds."""
    if s != s:
        return "-"
    for unit, scale in _DURATIONS:
        if abs(s) >= scale:
            return f"{s / scale:.3g} {unit}"
    return fmt_seconds(s)


def fmt_usd(v: float) -> str:
    """Dollars without SI prefixes on money: 1.2e7 -> '$12 M', 1234 -> '$1,234', 0.0001 -> '$0.0001'."""
    if v != v:
        return "-"
    a = abs(v)
    if a >= 1e9:
        return f"${v / 1e9:.3g} B"
    if a >= 1e6:
        return f"${v / 1e6:.3g} M"
    if a >= 100:
        return f"${v:,.0f}"
    if a >= 0.01 or a == 0:
        return f"${v:.3g}" if a < 1 else f"${v:.2f}"
    if a < 1e-6:  # 5e-07 -> '$5.0e-7': two significant figures, the exponent as people write it
        mantissa, _, exponent = f"{v:.1e}".partition("e")
        return f"${mantissa}e{int(exponent)}"
    return f"${v:.{_decimals(a, 2)}f}"  # two significant figures: 0.0012 -> '$0.0012', 5e-5 -> '$0.000050'


def fmt_human(key: str, v: Any) -> str:
    """A table cell for a page: fmt_cell, with durations past a minute in min/h/d/y, dollars as dollars and
    parameter counts with a 'B' (billions). The CLI keeps fmt_cell's outputs."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if key.endswith("_s") and "_per_" not in key and abs(v) >= 60:
            return fmt_duration(v)
        if key.startswith("usd") or key.endswith("usd") or "_usd_" in key:
            return fmt_usd(v)
        if key.endswith("flops") and abs(v) >= 1e18:  # training compute: 3.19e24 FLOP, not '3.192e+09 P'
            return f"{v:.3g} FLOP"
        if "params" in key:
            return f"{v / 1e9:.4g} B" if abs(v) >= 1e8 else fmt_si(v)
        if key.endswith("tokens") or key.startswith("d_"):
            return fmt_si(v)
    return fmt_cell(key, v)


def _power_of_ten(v: float) -> str:
    """2.592e15 -> '2.59×10^15' (the lecture's way with token counts)."""
    exponent = math.floor(math.log10(abs(v)))
    return f"{v / 10 ** exponent:.3g}×10^{exponent}"


_UNIT_FORMATS = {
    "s": fmt_seconds, "B": fmt_bytes, "B/token": lambda v: f"{v:,.0f} B/token", "tok/s": lambda v: fmt_si(v, "tok/s"),
    "tokens": lambda v: (_power_of_ten(v) if abs(v) >= 1e6 else f"{v:,.0f}") + " tokens",
    "sequences": lambda v: f"{v:,.0f} sequences", "experts/GPU": lambda v: f"{v:g} experts/GPU",
    "FLOP/B": lambda v: f"{v:,.0f} FLOP/B", "$/Mtok": lambda v: f"{fmt_usd(v)} per M tokens", "share": fmt_percent,
    "x": lambda v: f"{v:,.0f}×" if abs(v) >= 1000 else f"{v:.3g}×",
}


def fmt_unit(v: Any, unit: str | tuple[str, ...]) -> str:
    """A value with its unit as people write it (lecture_claims.claim_units): 2400, 'sequences' -> '2,400
    sequences'; 0.0144, 's' -> '14.4 ms'; a list item by item (with one unit per item when ``unit`` is a tuple);
    text as it is; None as '-'."""
    if v is None:
        return "-"
    if isinstance(v, (list, tuple)):
        units = unit if isinstance(unit, tuple) else (unit,) * len(v)
        return ", ".join(fmt_unit(x, u) for x, u in zip(v, units))
    if isinstance(v, str) or isinstance(v, bool) or unit == "text":
        return str(v)
    f = _UNIT_FORMATS.get(unit[0] if isinstance(unit, tuple) else unit)
    return f(float(v)) if f else f"{float(v):.4g} {unit}"
