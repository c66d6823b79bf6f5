"""The protocol on the web: /api/serve takes it (422 naming it when unknown), the Workload page offers it as a select
and a real browser switching it changes the answer on screen."""

from __future__ import annotations

import pytest

from .browsing import change, settle

Q = dict(model="llama-3.1-8b", hardware="h100-sxm", tp=1, engine="trtllm", concurrency="8", isl=1024, osl=128)


def test_api_runs_the_protocol(client):
    steady = client.get("/api/serve", params=Q).json()[0]
    r = client.get("/api/serve", params={**Q, "protocol": "trtllm-bench", "requests": 80})
    assert r.status_code == 200, r.text
    row = r.json()[0]
    assert row["protocol"] == "trtllm-bench" and row["ttft_s"] > 3 * steady["ttft_s"]


@pytest.mark.parametrize("url", ["/api/serve", "/workload"])
def test_unknown_protocol_is_422_naming_it(client, url):
    r = client.get(url, params={**Q, "protocol": "locust"})
    assert r.status_code == 422 and "protocol" in r.text and "inferencex" in r.text


def test_workload_page_protocol_select_in_browser(page, live_server):
    page.goto(live_server + "/workload?model=llama-3.1-8b&hardware=h100-sxm&tp=1&engine=trtllm&concurrency=8"
              "&isl=1024&osl=128")
    settle(page)
    assert page.input_value("select[name=protocol]") == "steady"
    steady = page.inner_text("#ttft")
    change(page, "select[name=protocol]", "trtllm-bench")
    assert "protocol=trtllm-bench" in page.url
    page.wait_for_function("(s) => document.querySelector('#ttft').innerText !== s", arg=steady)
    assert page.inner_text("#ttft") != steady
