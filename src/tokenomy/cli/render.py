"""One renderer for every command: rows -> rich table, JSON or CSV; explanations -> text."""

from __future__ import annotations

import shutil
import sys
from typing import TYPE_CHECKING, Any, Iterable

from tokenomy.formatting import fmt_cell, to_csv, to_json, with_band  # noqa: F401  (re-exported for the commands)
from tokenomy.headers import header

if TYPE_CHECKING:  # rich loads when a table is drawn, not for --json/--csv/--help
    from rich.console import Console
    from rich.table import Table

WRAP_AT = 28  # a longer cell (a reason, a name) is counted at this width: rich wraps it onto more lines
WIDE_COLUMNS = 1000  # --wide: a console this wide never drops a column
MEMORY_COLUMNS = ("memory_per_chip_bytes", "weights_per_chip_bytes", "kv_per_chip_bytes",
                  "activations_per_chip_bytes", "memory_bytes")


def wide() -> bool:
    """--wide given (the root command's option, set for the run by cli.app.OneLineErrors)."""
    from tokenomy.cli.app import WIDE

    return WIDE.get()


def width() -> int:
    """Columns to fit on a terminal (its size; COLUMNS overrides it, the shell's convention); 200 when stdout is
    no terminal (a pipe, a file, a test's runner), so what is saved keeps whole rows; --wide: no limit."""
    if wide():
        return WIDE_COLUMNS
    if sys.stdout.isatty():
        return max(shutil.get_terminal_size((200, 24)).columns, 40)
    return 200


def console(**kw: Any) -> Console:
    from rich.console import Console

    return Console(width=width(), **kw)


def _invalid(row: dict) -> str | None:
    """'invalid: <reason>' for a row refused for its layout or batch (not for memory), else None."""
    why = row.get("why")
    if row.get("fits") is False and isinstance(why, str) and not (why.startswith("does not fit") or "HBM" in why):
        return f"invalid: {why}"
    return None


def _cells(row: dict, cols: list[str]) -> list[str]:
    bad = _invalid(row)
    if bad is None:
        return [with_band(c, row, fmt_cell(c, row.get(c))) for c in cols]
    # an invalid layout has no memory figure to show, and its fits cell says why instead of 'NO'
    return [bad if c == "fits" else "-" if c in MEMORY_COLUMNS else fmt_cell(c, row.get(c)) for c in cols]


def _header(name: str, cell_width: int) -> str:
    """The field's header in people's words (tokenomy.headers: 'tok/s/chip', '$/Mtok out'), folded at its spaces
    to about its column's width, so a header is not what makes a table too wide."""
    words = header(name).split(" ")
    w = max(cell_width, max(map(len, words)))
    lines = [""]
    for word in words:
        if lines[-1] and len(lines[-1]) + 1 + len(word) > w:
            lines.append("")
        lines[-1] += (" " if lines[-1] else "") + word
    return "\n".join(lines)


def _fit(heads: list[str], cells: list[list[str]], limit: int) -> int:
    """How many leading columns fit in ``limit`` characters at their natural widths (widest header line or cell,
    plus rich's 3-character separators); the first column always stays."""
    used = 1
    for j, h in enumerate(heads):
        used += max([len(x) for x in h.splitlines()] + [min(len(r[j]), WRAP_AT) for r in cells]) + 3
        if j and used > limit:
            return j
    return len(heads)


def table(rows: list[dict], title: str = "", columns: Iterable[str] | None = None,
          limit: int | None = None) -> tuple[Table, list[str]]:
    """Rows as a rich table at most ``limit`` columns wide: trailing columns that do not fit are dropped and
    returned (the caller names them); None: all columns."""
    cols = list(columns or (rows[0].keys() if rows else []))
    from rich.table import Table

    cells = [_cells(r, cols) for r in rows]
    heads = [_header(c, max((len(r[j]) for r in cells), default=0)) for j, c in enumerate(cols)]
    dropped: list[str] = []
    if limit is not None:
        n = _fit(heads, cells, limit)
        cols, heads, dropped = cols[:n], heads[:n], cols[n:]
        cells = [r[:n] for r in cells]
    t = Table(title=title, show_lines=False)
    for c, h in zip(cols, heads):
        first = next((r.get(c) for r in rows if r.get(c) is not None), None)
        numeric = isinstance(first, (int, float)) and not isinstance(first, bool)
        t.add_column(h, justify="right" if numeric else "left", overflow="fold")
    for r in cells:
        t.add_row(*r)
    return t, dropped


def _flatten(d: dict, prefix: str = "") -> dict:
    out: dict = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def record_table(record: dict, title: str = "") -> Table:
    """One object as a two-column field/value table, each field by its header (tokenomy.headers); nested objects
    name their parent's header and their key ('peak bf16')."""
    from rich.table import Table

    t = Table(title=title)
    t.add_column("field")
    t.add_column("value", justify="right")
    for k, v in _flatten(record).items():
        key = k.split(".")[0] if k.startswith("peak_flops_per_s") else k
        label = " ".join([header(k.split(".")[0])] + k.split(".")[1:])  # 'peak_flops_per_s.bf16' -> 'peak bf16'
        t.add_row(label, fmt_cell(key, v if not isinstance(v, list) else ", ".join(map(str, v)) or "-"))
    return t


def emit(rows: list[dict] | dict, *, as_json: bool, as_csv: bool, title: str = "",
         columns: Iterable[str] | None = None, notes: Iterable[str] = ()) -> None:
    """Print rows in the requested format. JSON/CSV carry every key; the table shows ``columns``, as many as fit
    the terminal (a note names the rest; --wide shows all)."""
    from tokenomy.cli.app import UsageError

    if as_json and as_csv:
        raise UsageError("--json and --csv: choose one")
    if as_json:
        print(to_json(rows))
        return
    rows_list = rows if isinstance(rows, list) else [rows]
    if as_csv:
        print(to_csv(rows_list), end="")
        return
    out = console()
    if isinstance(rows, dict):
        out.print(record_table(rows, title))
    else:
        t, dropped = table(rows_list, title, columns, limit=None if wide() else out.width)
        out.print(t)
        if dropped:
            out.print(f"[dim]not shown at {out.width} columns: {', '.join(map(header, dropped))} (--wide shows all; "
                      "--json/--csv carry every field)[/dim]", highlight=False)
    for n in notes:
        out.print(n)


def explain(lines: Iterable[str]) -> None:
    console(highlight=False).print("\n".join(lines))


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
        emit([{"quantity": header(k), "value": fmt_cell(k, v)} for k, v in summary.items()], as_json=False, as_csv=False,
             title="summary")
    for key, title, columns in tables:
        emit(res.extra[key], as_json=False, as_csv=False, title=title, columns=columns)
    explain([f"[red]{n}[/red]" for n in res.notes])
    for block in res.extra.get("launch", ()):  # plain text: ready to paste (no rich markup inside)
        print("\n" + block["text"])
