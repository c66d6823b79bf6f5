"""Issue 30's page pieces over HTTP: the Serve page's one request is serve's own end-to-end time and price; its
pools and the Workload page's (attention DP per pool) reach the answer; bad input on the new fields is a 422 naming
the field (Serve, Workload presets, Min chips)."""

from __future__ import annotations

import re

import pytest

from tokenomy.answers.workloads import serve
from tokenomy.catalog import loader

SERVE = "/serve?model=llama-3.1-70b&hardware=hgx-h100-8&batch=16&context=2048"


def request_of(html: str) -> dict:
    m = re.search(r'id="request" data-total-s="([^"]+)" data-ttft-s="([^"]+)" data-tpot-s="([^"]+)" data-osl="(\d+)" '
                  r'data-usd="([^"]+)"', html)
    assert m, re.findall(r'id="request-why">(.*?)<', html)
    return dict(zip(("total", "ttft", "tpot", "osl", "usd"), map(float, m.groups())))


@pytest.mark.parametrize("extra, kw", [
    ("", {"tp": 8}),
    ("&mode=disagg&prefill_chips=8&decode_chips=8&decode_tp=4&decode_dp=2",
     {"mode": "disagg", "pools": {"prefill_chips": 8, "decode_chips": 8, "decode_tp": 4, "decode_dp": 2}}),
])
def test_one_request_is_serves_end_to_end_and_price(client, extra, kw):
    """total = TTFT + (OSL - 1)·TPOT from the row (answers.request_total) against the steady state's own e2e;
    $ = ISL·$in + OSL·$out against chips·$/chip-hour / 3600 / requests/s (what serve's prices split)."""
    r = client.get(SERVE + "&isl=3000&osl=700" + extra)
    assert r.status_code == 200, r.text
    got = request_of(r.text)
    row = serve("llama-3.1-70b", "hgx-h100-8", concurrency=[16], isl=3000, osl=700, **kw).rows()[0]
    assert got["osl"] == 700 and got["total"] == pytest.approx(row["e2e_s"], rel=1e-3)
    chips = row.get("chips") or (row["prefill_chips"] + row["decode_chips"])
    price = loader.hardware("hgx-h100-8").usd_per_chip_hour
    assert got["usd"] == pytest.approx(chips * price / 3600 / row["requests_per_s"], rel=1e-6)


@pytest.mark.parametrize("query, field", [
    ("&isl=abc", "isl"), ("&osl=", "osl"), ("&isl=1M", "isl"),  # 1M + 500 beyond the model's 128k window
    ("&mode=disagg", "prefill_chips"), ("&mode=disagg&prefill_chips=8", "decode_chips"),
    ("&decode_tp=4", "decode_tp"), ("&mode=disagg&prefill_chips=8&decode_chips=8&tp=8", "tp"),
    ("&mode=both", "mode"), ("&mode=disagg&prefill_chips=8&decode_chips=8&decode_attn_dp=maybe", "decode_attn_dp"),
])
def test_serve_request_fields_refused_by_name(client, query, field):
    r = client.get(SERVE + query)
    assert r.status_code == 422 and f'data-field="{field}"' in r.text, (query, re.findall(r'data-field="(\w+)"', r.text))


def test_workload_pools_take_attention_per_pool(client):
    base = ("/workload?model=deepseek-v3&hardware=gb200-nvl72&mode=disagg&concurrency=64&prefill_chips=16"
            "&decode_chips=32&decode_ep=32")
    assert "decode tp1 ep32 pp1 dp1 attn-dp" in client.get(base).text
    assert "decode tp1 ep32 pp1 dp1 attn-tp" in client.get(base + "&decode_attn_dp=false").text
    bad = client.get(base + "&decode_attn_dp=maybe")
    assert bad.status_code == 422 and 'data-field="decode_attn_dp"' in bad.text


@pytest.mark.parametrize("path, field", [
    ("/workload?preset=chatt", "preset"), ("/min_chips?use_case=x", "use_case"), ("/min_chips?max_chips=1024", "max_chips"),
    ("/min_chips?concurrency=1,2", "concurrency"), ("/api/min_chips?model=llama-3.1-8b&hardware=h100-sxm&use_case=x", None),
])
def test_new_fields_refused_by_name(client, path, field):
    r = client.get(path)
    assert r.status_code == 422, r.text[:300]
    if field is None:
        assert r.json()["detail"][0]["loc"][-1] == "use_case"
    else:
        assert f'data-field="{field}"' in r.text


def test_a_preset_fills_what_the_query_leaves_out(client):
    r = client.get("/workload?preset=rag&isl=4096&model=llama-3.1-8b&hardware=h100-sxm&concurrency=4")
    assert r.status_code == 200
    assert 'name="isl" value="4096"' in r.text and 'name="osl" value="512"' in r.text  # isl given, osl the preset's
    assert 'name="ttft_slo" value="6"' in r.text


def test_each_page_names_the_step_whose_bound_it_shows(client):
    """D10: Workload said compute-bound where Serve said memory-bound for the same point, each about a different
    step. Each now names its step: Serve the one decode step it times, Workload the mean step (decode + the prefill
    chunks riding in it), and the two agree on the pure-decode step's bound."""
    served = client.get(SERVE).text
    bound = re.search(r'<em id="bound">(\w+)-bound \(([^)]+)\)</em>', served)
    assert bound and bound.group(2) == "one decode step", bound
    assert bound.group(1) == re.search(r'data-bound="(\w+)"', served).group(1)
    work = client.get("/workload?model=llama-3.1-70b&hardware=hgx-h100-8&concurrency=1,64&isl=2048&osl=512").text
    assert "bound (the mean step: decode + its prefill chunks)" in work
    assert re.search(r"(compute|memory|comms|overhead)-bound \(the mean step", work)
