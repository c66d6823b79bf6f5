"""The Result every answer returns: rows for tables, a JSON payload, a DataFrame, a Dataset and a derivation.

    rows()       list of flat dicts (the table the CLI prints, the CSV it writes)
    payload()    what ``tokenomy <command> --json`` prints and ``/api/<command>`` returns (rows plus context)
    to_pandas()  the rows as a DataFrame (pandas is imported only here)
    to_xarray()  the rows as an xarray Dataset on named dimensions (model, hardware, plan, then the axes the question
                 swept: batch, context, ...), one data variable per number with its unit in ``attrs["units"]``
    explain()    the derivation: the formula, the numbers plugged in, the binding term
The rows, the notes and the derivation may be given as functions: they run on first use (an answer over a large
sweep returns as soon as it is computed; its per-point derivation is written only if asked for).
The interfaces (CLI, web, report) format a Result; they never compute.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Callable, Iterable, Sequence

IDENTITY_DIMS = ("model", "hardware", "plan")  # what a question is asked of; length 1 unless it was swept
SWEPT_DIMS = ("batch", "context", "len_pass", "concurrency", "rate", "isl", "osl", "global_batch", "seq_len",
              "prompt_tokens", "prefill_batch", "draft_tokens", "prefix_tokens", "hold_s", "chips")
RATE_UNITS = (("usd_per_mtok", "USD/Mtok"), ("bytes_per_s", "B/s"), ("flops_per_s", "FLOP/s"),
              ("tokens_per_s", "tok/s"), ("requests_per_s", "req/s"), ("bytes_per_token", "B/token"))
SUFFIX_UNITS = (("_per_s", "1/s"), ("_bytes", "B"), ("_usd", "USD"), ("_s", "s"), ("_w", "W"), ("flops", "FLOP"),
                ("mfu", "1"), ("_fraction", "1"))


def unit_of(name: str) -> str:
    """The unit a field's name states (DESIGN.md rule 2: names carry units): 'step_s' -> 's', 'tokens_per_s_per_chip'
    -> 'tok/s', 'mfu' -> '1'; '' when the name states none (a count such as batch, or a label)."""
    for part, unit in RATE_UNITS:
        if part in name:
            return unit
    for suffix, unit in SUFFIX_UNITS:
        if name.endswith(suffix):
            return unit
    return ""


class Later(Sequence):
    """A tuple computed on first use: ``Later(fn)`` behaves as ``tuple(fn())``, calling fn once, when first read."""

    def __init__(self, fn: Callable[[], Iterable]):
        self._fn, self._items = fn, None

    def _all(self) -> tuple:
        if self._items is None:
            self._items = tuple(self._fn())
        return self._items

    def __getitem__(self, i):
        return self._all()[i]

    def __len__(self) -> int:
        return len(self._all())

    def __iter__(self):
        return iter(self._all())

    def __add__(self, other) -> tuple:  # notes + notes, as tuples add
        return self._all() + tuple(other)

    def __radd__(self, other) -> tuple:
        return tuple(other) + self._all()

    def __repr__(self) -> str:
        return "Later(...)" if self._items is None else repr(self._items)

    def __reduce__(self):  # pickled (a process pool, a cache) as the tuple it stands for
        return tuple, (self._all(),)


class Rows(Sequence):
    """``n`` rows built one at a time when read: ``Rows(n, make)`` behaves as ``tuple(make(i) for i in range(n))``,
    but indexing builds only the row asked for and iterating builds each once (kept). An answer over a grid of 10^6
    points returns as soon as its arrays are computed (benchmarks/serve.py: tk.serve against the steady state
    under it); its rows and their derivation are written only if read."""

    def __init__(self, n: int, make: Callable[[int], dict]):
        self._n, self._make, self._items = int(n), make, None

    def _all(self) -> tuple:
        if self._items is None:
            self._items = tuple(self._make(i) for i in range(self._n))
        return self._items

    def __getitem__(self, i):
        if self._items is not None or isinstance(i, slice):
            return self._all()[i]
        j = i + self._n if i < 0 else i
        if not 0 <= j < self._n:
            raise IndexError("row index out of range")
        return self._make(j)

    def __len__(self) -> int:
        return self._n

    def __iter__(self):
        return iter(self._all())

    def __repr__(self) -> str:
        return f"Rows({self._n} rows)" if self._items is None else repr(self._items)

    def __reduce__(self):
        return tuple, (self._all(),)


def lines(x) -> Sequence:
    """A tuple of x (rows, notes, derivation lines), or Later(x) when x is a function: it runs on first use."""
    if isinstance(x, (Later, Rows)):
        return x
    return Later(x) if callable(x) else tuple(x)


@dataclass(frozen=True)
class Result:
    """A computed answer: rows, the header that says how they were obtained, notes, and a derivation."""

    command: str
    title: str  # the header: model, hardware, layout, efficiency set
    table: Sequence[dict]  # the rows (dicts); a function returning them runs on first use
    columns: tuple[str, ...] = ()  # the columns a table shows first (all of them in JSON/CSV)
    extra: dict = field(default_factory=dict)  # payload fields beside the rows (plan, summary, ...)
    notes: Sequence[str] = ()  # a function returning them runs on first use
    derivation: Sequence[str] = ()  # likewise
    rows_key: str = "rows"  # the payload key the rows go under; "" = the payload is the list of rows
    coords: dict = field(default_factory=dict)  # what every row shares (model, hardware): to_xarray's length-1 dims
    dims: tuple[str, ...] = ()  # the row fields that index the sweep; () = the known ones present (SWEPT_DIMS)

    def __post_init__(self) -> None:
        for name in ("table", "notes", "derivation"):
            object.__setattr__(self, name, lines(getattr(self, name)))

    def rows(self) -> list[dict]:
        return [dict(r) for r in self.table]

    def payload(self):
        if not self.rows_key:
            return self.rows()
        return {**self.extra, self.rows_key: self.rows()}

    def explain(self) -> list[str]:
        return list(self.derivation)

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame(self.rows())

    def sweep_dims(self) -> tuple[str, ...]:
        """The row fields that index the rows: ``dims`` if given, else the known sweep axes the rows carry."""
        if self.dims:
            return self.dims
        first = self.table[0] if len(self.table) else {}
        return tuple(d for d in (*IDENTITY_DIMS, *SWEPT_DIMS) if d in first and d not in self.coords)

    def to_xarray(self, dims: Sequence[str] | None = None):
        """An xarray Dataset: dimensions model, hardware, plan (length 1 unless the rows differ in them) and the
        swept axes (``dims`` overrides them); every other field a data variable with ``attrs["units"]`` from its
        name ('s', 'tok/s', 'B', '' for a count or a label). Points of the grid the question did not ask are NaN.
        A field with a missing value is no dimension (an open-loop rate beside a closed loop's concurrency). Rows
        that repeat over the dimensions found get one dimension ``row`` (those fields as its coordinates); over
        ``dims`` given, a ValueError naming them."""
        df = self.to_pandas()
        for k, v in self.coords.items():
            if k not in df:
                df[k] = v
        asked = list(dims) if dims is not None else [*IDENTITY_DIMS, *self.sweep_dims()]
        missing = [d for d in asked if d not in df] if dims is not None else []
        if missing:
            raise ValueError(f"dims: {', '.join(missing)} not among the fields ({', '.join(df.columns)})")
        index = list(dict.fromkeys(d for d in asked if d in df and (dims is not None or df[d].notna().all())))
        if index and df.duplicated(index).any():
            if dims is not None:
                raise ValueError(f"dims: rows repeat over {', '.join(index)}; name the fields that index them")
            df = df.rename_axis("row").set_index(index, append=True).reset_index(index)
            ds = df.to_xarray().set_coords(index)
        elif index:
            ds = df.set_index(index).to_xarray()
        else:
            ds = df.rename_axis("row").to_xarray()
        for name, var in ds.data_vars.items():
            var.attrs["units"] = unit_of(name)
        for name in index:
            if unit_of(name):
                ds[name].attrs["units"] = unit_of(name)
        ds.attrs.update(command=self.command, title=self.title)
        if isinstance(self.extra, dict) and isinstance(self.extra.get("layout_rule"), str):
            ds.attrs["layout_rule"] = self.extra["layout_rule"]
        return ds
