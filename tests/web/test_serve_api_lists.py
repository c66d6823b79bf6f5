"""/api/serve takes comma lists for concurrency and rate (as `tokenomy serve` and tk.serve do): one row per value,
each the same numbers as the answer (tk.serve); every value bounded, blanks skipped as the CLI does, an empty list refused;
/openapi.json says so; the Workload page's "as JSON" link answers a list."""

from __future__ import annotations

import html
import re

import pytest

from tokenomy.answers.workloads import serve  # tk.serve (tk.serve is the module once it is imported: reported)
from tokenomy.web import params as P

BASE = {"model": "llama-3.1-70b", "hardware": "hgx-h100-8"}


@pytest.mark.parametrize("name, text, values", [("concurrency", "1,4,16", [1, 4, 16]), ("rate", "0.5,2", [0.5, 2]),
                                                ("concurrency", "1,,4", [1, 4])])
def test_a_list_is_one_row_per_value_as_tk_serve(client, name, text, values):
    r = client.get("/api/serve", params={**BASE, name: text})
    assert r.status_code == 200, r.text[:200]
    rows = r.json()
    assert [row[name] for row in rows] == values
    want = serve(BASE["model"], BASE["hardware"], **{name: values}).rows()
    for got, w in zip(rows, want, strict=True):
        for key in ("ttft_s", "tpot_s", "tokens_per_s_per_chip", "usd_per_mtok_output"):
            assert got[key] == pytest.approx(w[key], rel=1e-12), key


@pytest.mark.parametrize("name, text, says", [
    ("concurrency", "1,0", "out of range"), ("concurrency", "1,1e400", "out of range"), ("rate", "1,abc", "not a number"),
    ("rate", "1,1e-9", "out of range"), ("concurrency", ",", "at least one"), ("concurrency", "1..1025:1", "at most 1,024 points a request")])
def test_each_value_is_bounded_and_the_field_named(client, name, text, says):
    r = client.get("/api/serve", params={**BASE, name: text})
    assert r.status_code == 422
    d = r.json()["detail"][0]
    assert d["loc"][-1] == name and says in d["msg"] and "None" not in d["msg"], d


def test_openapi_declares_the_lists_and_their_bounds(client):
    op = client.get("/openapi.json").json()["paths"]["/api/serve"]["get"]
    declared = {p["name"]: p for p in op["parameters"]}
    for name in ("concurrency", "rate"):
        text = declared[name]["description"]
        assert "comma list" in text and str(P.NUMBERS[name]) in text and f"at most {P.MAX_GRID:,} points" in text
        b = P.NUMBERS[name]  # the bound it states is the one enforced, for every value of a list
        assert client.get("/api/serve", params={**BASE, name: f"{b.lo:g},{b.hi:g}"}).status_code == 200
        r = client.get("/api/serve", params={**BASE, name: f"{b.lo:g},{2 * b.hi:g}"})
        assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == name


@pytest.mark.parametrize("query, points", [("concurrency=1,4,16", 3), ("loop=rate&rate=0.5,1,2,4", 4)])
def test_the_workload_pages_json_link_answers_its_list(client, query, points):
    page = client.get("/workload?" + query)
    assert page.status_code == 200
    href = html.unescape(re.search(r'id="api-link" data-api="/api/serve" href="([^"]+)"', page.text).group(1))
    r = client.get(href)
    assert r.status_code == 200, (href, r.text[:200])
    assert len(r.json()) == points == page.text.count("<tr") - 1  # the page's rows, one per load point
