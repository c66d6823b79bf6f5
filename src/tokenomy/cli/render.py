"""One renderer for every command: rows -> rich table, JSON or CSV; explanations -> text."""

from __future__ import annotations

from typing import Any, Iterable

from rich.console import Console
from rich.table import Table

from tokenomy.formatting import fmt_cell, to_csv, to_json  # noqa: F401  (re-exported for the commands)


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


def show_result(res, *, as_json: bool, as_csv: bool, show: bool = False, tables=()) -> None:
    """Render an answer (answers.result.Result): JSON its payload; CSV its rows; a table its rows, the payload's
    summary as key/value lines, then ``tables`` (payload key, title, columns) and the notes; --explain first."""
    from tokenomy.cli.app import UsageError

    if as_json and as_csv:
        raise UsageError("--json and --csv: choose one")
    if as_json:
        print(to_json(res.payload()))
        return
    if show and not as_csv:
        explain(res.explain())
    emit(res.rows(), as_json=False, as_csv=as_csv, title=res.title, columns=res.columns)
    if as_csv:
        return
    summary = res.extra.get("summary")
    if summary:
        emit([{"quantity": k, "value": fmt_cell(k, v)} for k, v in summary.items()], as_json=False, as_csv=False,
             title="summary")
    for key, title, columns in tables:
        emit(res.extra[key], as_json=False, as_csv=False, title=title, columns=columns)
    explain([f"[red]{n}[/red]" for n in res.notes])
