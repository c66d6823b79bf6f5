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
        return "yes" if v else "NO"
    if isinstance(v, (int, float)):
        if key.endswith("per_s") or key.endswith("params") or key.endswith("flops"):
            return fmt_si(v)
        if key.endswith("_s"):
            return fmt_seconds(v)
        if key.endswith("bytes"):
            return fmt_bytes(v)
        if key in ("mfu",) or key.endswith("_fraction"):
            return f"{100 * v:.1f}%"
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
    console.print(table(rows_list, title, columns))
    for n in notes:
        console.print(n)


def explain(lines: Iterable[str]) -> None:
    Console(width=200, highlight=False).print("\n".join(lines))
