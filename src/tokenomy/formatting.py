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
        if key in ("mfu",) or key.endswith("_fraction"):
            return f"{100 * v:.1f}%"
        if "params" in key or key.endswith("flops") or key.endswith("per_s"):
            return fmt_si(v)
        if isinstance(v, float):
            return f"{v:.4g}"
    return str(v)
