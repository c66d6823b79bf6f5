"""The Compare page through the in-process client: two or three configurations, one trace per configuration in
every figure (named by it), each trace's numbers those of tk.decode|tk.prefill for that configuration (a different
door, the same numbers), and bad input in a column a 422 naming the column's field."""

from __future__ import annotations

import html
import json
import re

import pytest

import tokenomy as tk
from tokenomy.formatting import fmt_human

SWEEP = [2**i for i in range(17)]  # the batch sweep the figures draw: 1 .. 65,536
CONTEXT = 4096
THREE = {"context": str(CONTEXT), "batch": "32",
         "a.model": "llama-3.1-70b", "a.hardware": "hgx-h100-8", "a.chips": "4", "a.tp": "4",  # degrees given
         "b.model": "llama-3.1-70b", "b.hardware": "hgx-b200-8", "b.kv_dtype": "fp8",  # the best valid layout
         "c.model": "llama-3.1-8b", "c.hardware": "h100-sxm", "c.layout": "ideal", "c.chips": "1"}  # the bound
FIGURES = ("step", "pareto", "cost")


def figures(text: str) -> dict:
    return {m.group(1): json.loads(m.group(2)) for m in
            re.finditer(r'data-figure="fig-([\w-]+)">(.*?)</script>', text, re.S)}


def headline_labels(text: str) -> list[str]:
    return [html.unescape(s) for s in re.findall(r'<th data-column="\w">([^<]*)</th>', text)]


def column_kwargs(params: dict, col: str) -> dict:
    """A column's query as tk's keyword arguments, written out here (not the page's parser)."""
    p = {k.split(".", 1)[1]: v for k, v in params.items() if k.startswith(col + ".")}
    kw = {"kv_dtype": p.get("kv_dtype", "bf16")}
    kw |= {k: int(p[k]) for k in ("chips", "tp") if k in p}
    kw |= {"layout": p["layout"]} if "layout" in p else {}
    return {"model": p["model"], "hardware": p["hardware"], **kw}


def expected_rows(kind: str, params: dict, col: str) -> list[dict]:
    """tk's rows over the sweep on the layout the column's point resolves to (the page's rule, stated here)."""
    fn = getattr(tk, kind)
    kw = column_kwargs(params, col)
    point = fn(batch=[int(params["batch"])], context=[CONTEXT], **kw)
    plan, fits = point.extra["plan"], point.rows()[0]["fits"]
    if not plan["ideal"] and not (fits is False and not {"tp", "layout"} & set(kw)):  # a chosen layout that fits
        kw = {k: v for k, v in kw.items() if k not in ("chips", "tp", "layout")}
        kw |= {k: plan[k] for k in ("tp", "ep", "pp", "dp")}
    return fn(batch=SWEEP, context=[CONTEXT], **kw).rows()


def test_three_configurations_one_trace_each_named_by_it(client):
    r = client.get("/compare", params=THREE)
    assert r.status_code == 200, r.text[:300]
    labels = headline_labels(r.text)
    assert [s[:2] for s in labels] == ["A:", "B:", "C:"]
    assert "4 × hgx-h100-8 (tp4" in labels[0] and "KV fp8" in labels[1] and "ideal" in labels[2]
    figs = figures(r.text)
    assert set(figs) == set(FIGURES)
    for name in FIGURES:
        assert [t["name"] for t in figs[name]["data"]] == labels, name


@pytest.mark.parametrize("kind", ["decode", "prefill"])
def test_each_trace_is_tk_for_its_configuration(client, kind):
    params = {**THREE, "kind": kind}
    figs = figures(client.get("/compare", params=params).text)
    for i, col in enumerate("abc"):
        want = expected_rows(kind, params, col)
        ok = [w for w in want if w["step_s"] is not None]
        assert ok, col
        step, pareto, cost = (figs[f]["data"][i] for f in FIGURES)
        assert step["x"] == [w["batch"] for w in ok]
        assert step["y"] == pytest.approx([1e3 * w["step_s"] for w in ok], rel=1e-12)
        assert pareto["x"] == pytest.approx([w["tokens_per_s_per_user"] for w in ok], rel=1e-12)
        assert pareto["y"] == pytest.approx([w["tokens_per_s_per_chip"] for w in ok], rel=1e-12)
        assert cost["y"] == pytest.approx([w["usd_per_mtok"] for w in ok], rel=1e-12)
    assert kind.capitalize() in figs["step"]["layout"]["title"]["text"]


def test_a_point_that_does_not_fit_still_has_its_curve(client):
    """At batch 512 llama-3.1-70b on 8 H100s fits no layout: its headline says so, and its curve is the answer over
    the sweep on the layout the answer chooses for the sweep (the points that fit)."""
    params = {"batch": "512", "context": str(CONTEXT), "a.model": "llama-3.1-70b", "a.hardware": "hgx-h100-8",
              "b.model": "llama-3.1-8b", "b.hardware": "hgx-h100-8"}
    r = client.get("/compare", params=params)
    assert r.status_code == 200
    assert re.search(r'<tr data-key="fits">.*?data-column="a">NO: ', r.text, re.S)
    ok = [w for w in expected_rows("decode", params, "a") if w["step_s"] is not None]
    step = figures(r.text)["step"]["data"][0]
    assert ok and step["x"] == [w["batch"] for w in ok]
    assert step["y"] == pytest.approx([1e3 * w["step_s"] for w in ok], rel=1e-12)


def test_headline_table_is_tk_at_the_page_batch(client):
    text = client.get("/compare", params=THREE).text
    for col in "abc":
        kw = column_kwargs(THREE, col)
        row = tk.decode(batch=[32], context=[CONTEXT], **kw).rows()[0]
        for key in ("step_s", "tokens_per_s_per_chip", "usd_per_mtok", "memory_per_chip_bytes"):
            cell = re.search(rf'<tr data-key="{key}">.*?<td class="num" data-column="{col}">([^<]*)</td>', text, re.S)
            assert html.unescape(cell.group(1)) == fmt_human(key, row[key]), (col, key)


def test_two_configurations_by_default_and_c_is_optional(client):
    r = client.get("/compare")
    assert r.status_code == 200
    assert all(len(f["data"]) == 2 for f in figures(r.text).values())
    assert '<a href="/compare" class="active" aria-current="page">Compare</a>' in r.text  # in the nav


def test_fragment_for_htmx_and_every_json_link_answers(client):
    r = client.get("/compare", params=THREE, headers={"HX-Request": "true"})
    assert r.status_code == 200 and "<form" not in r.text and "HX-Request" in r.headers["vary"]
    links = [html.unescape(h) for h in re.findall(r'class="api-link" data-column="\w" href="([^"]+)"', r.text)]
    assert len(links) == 3
    for link in links:
        assert client.get(link).status_code == 200, link


@pytest.mark.parametrize("query, field", [
    ("b.model=nope", "b.model"), ("a.tp=abc", "a.tp"), ("a.tp=3", "a.tp"), ("b.chips=4&b.tp=8", "b.chips"),
    ("c.chips=4", "c.model"), ("c.model=llama-3.1-8b", "c.hardware"), ("a.layout=best", "a.layout"),
    ("c.model=llama-3.1-8b&c.hardware=h100-sxm&c.kv_dtype=fp7", "c.kv_dtype"), ("b.hardware=..%2Fetc", "b.hardware"),
    ("a.usd_per_chip_hour=-1", "a.usd_per_chip_hour"), ("batch=1e400", "batch"), ("context=inf", "context"),
    ("kind=train", "kind"), ("d.model=x", "d.model")])
def test_bad_input_is_a_422_naming_the_columns_field(client, query, field):
    for headers in ({}, {"HX-Request": "true"}):
        r = client.get("/compare?" + query, headers=headers)
        assert r.status_code == 422, (query, r.text[:200])
        assert f'data-field="{field}"' in r.text and "Traceback" not in r.text, (query, r.text[:400])
    page = client.get("/compare?" + query).text  # the form keeps what was typed
    assert "<form" in page and "configuration C" in page
