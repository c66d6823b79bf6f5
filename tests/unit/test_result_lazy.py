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
