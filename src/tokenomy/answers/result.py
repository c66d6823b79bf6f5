"""The Result every answer returns: rows for tables, a JSON payload, a DataFrame and a derivation.

    rows()       list of flat dicts (the table the CLI prints, the CSV it writes)
    payload()    what ``tokenomy <command> --json`` prints and ``/api/<command>`` returns (rows plus context)
    to_pandas()  the rows as a DataFrame (pandas is imported only here)
    explain()    the derivation: the formula, the numbers plugged in, the binding term
The interfaces (CLI, web, report) format a Result; they never compute.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Result:
    """A computed answer: rows, the header that says how they were obtained, notes, and a derivation."""

    command: str
    title: str  # the header: model, hardware, layout, efficiency set
    table: tuple[dict, ...]
    columns: tuple[str, ...] = ()  # the columns a table shows first (all of them in JSON/CSV)
    extra: dict = field(default_factory=dict)  # payload fields beside the rows (plan, summary, ...)
    notes: tuple[str, ...] = ()
    derivation: tuple[str, ...] = ()
    rows_key: str = "rows"  # the payload key the rows go under; "" = the payload is the list of rows

    def rows(self) -> list[dict]:
        return [dict(r) for r in self.table]

    def payload(self):
        if not self.rows_key:
            return self.rows()
        return {**self.extra, self.rows_key: self.rows()}

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame(self.rows())

    def explain(self) -> list[str]:
        return list(self.derivation)
