"""/api/serve with disaggregated pools (issue 30, D2): the pool fields reach the answer the CLI's `serve --mode
disagg --prefill-chips ... --decode-tp ...` calls (answers.workloads.serve with ``pools``), and each mode refuses the
other's layout fields by name."""

from __future__ import annotations

import json

import pytest

from tokenomy.answers.workloads import serve
from tokenomy.formatting import to_json

BASE = "/api/serve?model=llama-3.1-70b&hardware=hgx-h100-8&concurrency=16,64&mode=disagg"


def test_pools_reach_the_disaggregated_answer(client):
    r = client.get(BASE + "&prefill_chips=8&decode_chips=8&decode_tp=4&decode_dp=2&prefill_tp=8")
    assert r.status_code == 200, r.text
    want = serve("llama-3.1-70b", "hgx-h100-8", concurrency=[16, 64], mode="disagg",
                 pools={"prefill_chips": 8, "decode_chips": 8, "decode_tp": 4, "decode_dp": 2, "prefill_tp": 8})
    assert r.json() == json.loads(to_json(want.payload()))
    assert r.json()[0]["decode_plan"]["label"] == "tp4 ep1 pp1 dp2" and r.json()[0]["prefill_chips"] == 8


@pytest.mark.parametrize("query, field", [
    ("&prefill_chips=8", "prefill_chips"),  # disagg needs both pool sizes
    ("&prefill_chips=8&decode_chips=8&tp=8", "tp"),  # the aggregated layout is not the pools'
    ("&prefill_chips=8&decode_chips=8&decode_tp=0", "decode_tp"),
    ("&prefill_chips=8&decode_chips=8&decode_kv_batch=maybe", "decode_kv_batch"),
])
def test_pool_fields_are_checked_by_name(client, query, field):
    r = client.get(BASE + query)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == field, r.text


def test_pools_only_with_disagg(client):
    r = client.get("/api/serve?model=llama-3.1-70b&hardware=hgx-h100-8&concurrency=4&decode_chips=8")
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == "decode_chips"


def test_openapi_declares_the_pools(client):
    params = {p["name"]: p for p in client.get("/openapi.json").json()["paths"]["/api/serve"]["get"]["parameters"]}
    for name in ("prefill_chips", "decode_chips", "prefill_tp", "decode_ep", "decode_kv_batch"):
        assert name in params and params[name]["description"].startswith("disagg"), name
