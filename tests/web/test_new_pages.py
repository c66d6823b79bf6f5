"""The Workload, Latency, Pricing and Speculative pages, the per-op table and the Serve sweeps' titles, through
the in-process client: each page shows its answer's rows (the same numbers /api/<command> returns), a bad input is
a 422 naming the field."""

from __future__ import annotations

import json
import re

import pytest


def figures(html: str) -> dict:
    return {m.group(1): json.loads(m.group(2)) for m in
            re.finditer(r'data-figure="fig-([\w-]+)">(.*?)</script>', html, re.S)}


def test_workload_page_shows_each_point_of_the_api_answer(client):
    r = client.get("/workload?concurrency=1,16,64&isl=2048&osl=512")
    assert r.status_code == 200
    api = client.get("/api/serve?model=llama-3.1-70b&hardware=hgx-h100-8&concurrency=1&isl=2048&osl=512").json()
    assert r.text.count("<tr") - 1 == 3  # one row per load point
    f = figures(r.text)
    assert set(f) == {"curve", "latency", "cost", "energy"}
    curve = f["curve"]["data"][0]
    assert curve["y"][0] == pytest.approx(api[0]["tokens_per_s_per_chip"])  # the API's first point
    energy = f["energy"]["data"][0]  # tokens/s per all-in MW against interactivity
    assert energy["y"][0] == pytest.approx(api[0]["tokens_per_s_per_mw"])
    assert energy["x"][0] == pytest.approx(api[0]["interactivity"])
    assert "TTFT and TPOT vs concurrency" in f["latency"]["layout"]["title"]["text"]


def test_workload_open_loop_and_bad_input(client):
    r = client.get("/workload?loop=rate&rate=1,2")
    assert r.status_code == 200 and "request rate" in json.dumps(figures(r.text)["latency"]["layout"])
    bad = client.get("/workload?concurrency=1,abc")
    assert bad.status_code == 422 and 'data-field="concurrency"' in bad.text
    assert client.get("/workload?engine=nonesuch").status_code == 422


@pytest.mark.parametrize("page, fig", [("latency", "schedule"), ("pricing", "prices"), ("speculate", "speedup")])
def test_economics_pages(client, page, fig):
    r = client.get(f"/{page}")
    assert r.status_code == 200 and 'id="cards"' in r.text and fig in figures(r.text)
    assert f'href="/{page}"' in r.text  # in the nav
    assert client.get(f"/{page}?context=-1").status_code == 422


def test_pass_page_op_table_and_prefill_titles(client):
    r = client.get("/serve?kind=prefill&model=deepseek-v3&hardware=gb200-nvl72&ep=64&chips=64&batch=8&kv_dtype=fp8")
    assert r.status_code == 200 and 'id="op-table"' in r.text
    titles = [f["layout"]["title"]["text"] for f in figures(r.text).values()]
    assert not any("Decode" in t for t in titles), titles
    assert all("tp1 ep64" in t for t in titles if "<sub>on" in t)  # the chosen layout, not an even split
    rows = re.findall(r'<tr class="op-row"[^>]*><td>([^<]+)</td><td>(matmul|expert|attention|\w+)</td>', r.text)
    assert len(rows) >= 4


def test_train_enum_inputs_are_selects(client):
    r = client.get("/train")
    assert '<select name="schedule">' in r.text and '<select name="recompute">' in r.text
    assert 'id="cards"' in r.text
