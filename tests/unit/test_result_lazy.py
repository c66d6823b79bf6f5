"""Result: rows, notes and derivation written on first use (issue 14: rows() took 685 ms for a 4.4 ms sweep).

No wall-clock assertion: laziness is checked by counting calls; the timings are benchmarks/api_rows.py's."""

from __future__ import annotations

import pickle

import pytest

import tokenomy as tk
from tokenomy.answers import passes
from tokenomy.answers.result import Later, Result, unit_of


def test_later_runs_its_function_once_on_first_read():
    calls = []
    lazy = Later(lambda: calls.append(1) or [3, 4])
    assert calls == [] and repr(lazy) == "Later(...)"
    assert list(lazy) == [3, 4] and lazy[1] == 4 and len(lazy) == 2 and calls == [1]
    assert pickle.loads(pickle.dumps(lazy)) == (3, 4)


def test_result_takes_sequences_or_functions():
    r = Result("q", "t", [{"a": 1}], notes=["n"], derivation=lambda: iter(["x = 1"]))
    assert r.rows() == [{"a": 1}] and list(r.notes) == ["n"] and r.explain() == ["x = 1"]
    r.rows()[0]["a"] = 2  # rows() hands out copies
    assert r.rows() == [{"a": 1}]


def test_a_sweep_writes_no_row_and_no_derivation_until_asked(monkeypatch):
    counts = {"rows": 0, "explain": 0}
    real_rows, real_explain = passes.pass_rows, passes.explain_point

    def rows(*a):
        counts["rows"] += 1
        return real_rows(*a)

    def explain(*a):
        counts["explain"] += 1
        return real_explain(*a)

    monkeypatch.setattr(passes, "pass_rows", rows)
    monkeypatch.setattr(passes, "explain_point", explain)
    r = tk.decode("llama-4-scout", "hgx-h100-8", batch=list(range(1, 65)), context=[2 ** i for i in range(7, 23)])  # 10M window
    assert counts == {"rows": 0, "explain": 0}
    assert len(r.rows()) == 64 * 16 and len(r.rows()) == 1024 and counts == {"rows": 1, "explain": 0}
    list(r.notes)
    assert counts["explain"] == 0
    lines = r.explain()
    assert counts["explain"] == 64 * 16 and lines
    # the payload is still the rows, the same ones
    assert r.payload() == r.rows()


def test_lazy_rows_equal_the_eager_computation():
    """The rows the Result hands out are pass_rows of the same deployment (built once, not twice)."""
    r = tk.decode("llama-3.1-8b", "h100-sxm", batch=[1, 8], context=[1024, 4096])
    rows = r.rows()
    assert [(x["batch"], x["context"]) for x in rows] == [(1, 1024), (1, 4096), (8, 1024), (8, 4096)]
    assert r.rows() == rows and pickle.loads(pickle.dumps(r)).rows() == rows


@pytest.mark.parametrize("name, unit", [("step_s", "s"), ("tokens_per_s_per_chip", "tok/s"), ("usd_per_mtok", "USD/Mtok"),
                                        ("memory_per_chip_bytes", "B"), ("hbm_bytes_per_s", "B/s"), ("mfu", "1"),
                                        ("requests_per_s", "req/s"), ("batch", ""), ("plan", ""),
                                        ("kv_bytes_per_token", "B/token")])
def test_units_come_from_the_field_name(name, unit):
    assert unit_of(name) == unit


def test_rows_build_only_the_row_read_and_each_once_when_iterated():
    from tokenomy.answers.result import Rows

    made = []
    rows = Rows(5, lambda i: made.append(i) or {"i": i})
    assert len(rows) == 5 and made == [] and repr(rows) == "Rows(5 rows)"
    assert rows[3] == {"i": 3} and rows[-1] == {"i": 4} and made == [3, 4]
    with pytest.raises(IndexError):
        rows[5]
    assert [r["i"] for r in rows] == [0, 1, 2, 3, 4] and list(rows) == list(rows)
    assert made == [3, 4, 0, 1, 2, 3, 4]  # iterating built each once, kept
    assert rows[1:3] == ({"i": 1}, {"i": 2}) and pickle.loads(pickle.dumps(rows)) == tuple(rows)


def test_serve_builds_no_row_until_read_and_its_rows_are_the_eager_ones(monkeypatch):
    from tokenomy.answers import workloads

    calls = []
    real = workloads.row
    monkeypatch.setattr(workloads, "row", lambda *a, **k: calls.append(a[3]) or real(*a, **k))
    r = tk.serve("llama-3.1-8b", "h100-sxm", concurrency=[1, 8, 64, 512], isl=1024, osl=256)
    assert calls == []
    assert r.table[2]["concurrency"] == 64 and calls == [2]  # one row read, one built
    rows = r.rows()
    assert [x["concurrency"] for x in rows] == [1, 8, 64, 512]
    # each row is the one-point answer's row: the band, goodput and energy columns included
    one = tk.serve("llama-3.1-8b", "h100-sxm", concurrency=[64], isl=1024, osl=256).rows()[0]
    assert rows[2] == one
    assert r.to_pandas()["tokens_per_s_per_mw"].tolist() == [x["tokens_per_s_per_mw"] for x in rows]
    assert r.payload() == rows and r.explain() and isinstance(list(r.notes), list)


def test_a_grid_as_an_array_is_checked_at_once_and_a_bad_value_named_as_before():
    import numpy as np

    from tokenomy.answers import inputs

    grid = np.arange(1.0, 1001.0)
    assert inputs.numbers("concurrency", grid) == grid.tolist() == inputs.numbers("concurrency", grid.tolist())
    assert inputs.numbers("batch", np.arange(1, 100)) == list(range(1, 100))
    for bad, why in ((np.array([4.0, 0.0]), "0 is out of range"), (np.array([2.0, np.inf]), "not a finite"),
                     ([1.0] * 100 + [True], "not a number")):
        with pytest.raises(ValueError, match=f"^concurrency: .*{why}"):
            inputs.numbers("concurrency", bad)
    with pytest.raises(ValueError, match="^batch: 2.5 is not a whole number"):
        inputs.numbers("batch", np.array([1.0, 2.5] * 50))


def test_later_adds_as_the_tuple_it_stands_for():
    """A lazy Result's notes are added as tuples are (serve's notes of two answers, joined)."""
    a, b = Later(lambda: ["x"]), Later(lambda: ("y", "z"))
    assert a + b == ("x", "y", "z") and ("w",) + a == ("w", "x") and a + ["v"] == ("x", "v")
