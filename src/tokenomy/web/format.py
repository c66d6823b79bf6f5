"""The web's formatting edge: JSON exactly as ``tokenomy <command> --json`` prints it, and table cells by unit.

Both mirror cli/render.py (web never imports cli); to fold once a shared rendering module exists below both.
"""

from __future__ import annotations

import json
import math
from typing import Any

from tokenomy.units import fmt_bytes, fmt_seconds, fmt_si


def _default(o: Any):
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
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return v


def to_json(obj: Any) -> str:
    """NaN/inf -> null, numpy scalars -> numbers, indent 2: the CLI's --json bytes."""
    return json.dumps(_clean(obj), indent=2, default=_default)


def fmt_cell(key: str, v: Any) -> str:
    """Human formatting chosen by the unit in the key name (DESIGN.md rule 2)."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else ("NO" if key == "fits" else "no")
    if not isinstance(v, (int, float)):
        return str(v)
    for part, unit in (("bytes_per_s", "B/s"), ("flops_per_s", "FLOP/s"), ("tokens_per_s", "tok/s")):
        if part in key:
            return fmt_si(v, unit)
    if key.endswith("bytes_per_token"):
        return f"{v:,.0f} B"
    if key.endswith("_s"):
        return fmt_seconds(v)
    if key.endswith("bytes"):
        return fmt_bytes(v)
    if key == "mfu" or key.endswith("_fraction"):
        return f"{100 * v:.1f}%"
    if "params" in key or key.endswith("flops") or key.endswith("per_s"):
        return fmt_si(v)
    return f"{v:.4g}" if isinstance(v, float) else str(v)
