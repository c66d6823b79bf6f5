"""One renderer for every command: rows -> rich table, JSON or CSV; explanations -> text."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any, Iterable

from rich.console import Console
from rich.table import Table

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
        for part, unit in (("bytes_per_s", "B/s"), ("flops_per_s", "FLOP/s"), ("tokens_per_s", "tok/s")):
            if part in key:
                return fmt_si(v, unit)
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


def table(rows: list[dict], title: str = "", columns: Iterable[str] | None = None) -> Table:
    cols = list(columns or (rows[0].keys() if rows else []))
    t = Table(title=title, show_lines=False)
    for c in cols:
        t.add_column(c, justify="right" if rows and isinstance(rows[0].get(c), (int, float)) else "left")
    for r in rows:
        t.add_row(*(fmt_cell(c, r.get(c)) for c in cols))
    return t


def _flatten(d: dict, prefix: str = "") -> dict:
    out: dict = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def record_table(record: dict, title: str = "") -> Table:
    """One object as a two-column field/value table; nested objects become dotted field names."""
    t = Table(title=title)
    t.add_column("field")
    t.add_column("value", justify="right")
    for k, v in _flatten(record).items():
        key = k.split(".")[0] if k.startswith("peak_flops_per_s") else k
        t.add_row(k, fmt_cell(key, v if not isinstance(v, list) else ", ".join(map(str, v)) or "-"))
    return t


def emit(rows: list[dict] | dict, *, as_json: bool, as_csv: bool, title: str = "",
         columns: Iterable[str] | None = None, notes: Iterable[str] = ()) -> None:
    """Print rows in the requested format. JSON/CSV carry every key; the table shows ``columns``."""
    console = Console(width=200)
    if as_json:
        print(to_json(rows))
        return
    rows_list = rows if isinstance(rows, list) else [rows]
    if as_csv:
        print(to_csv(rows_list), end="")
        return
    if isinstance(rows, dict):
        console.print(record_table(rows, title))
    else:
        console.print(table(rows_list, title, columns))
    for n in notes:
        console.print(n)


def explain(lines: Iterable[str]) -> None:
    Console(width=200, highlight=False).print("\n".join(lines))
