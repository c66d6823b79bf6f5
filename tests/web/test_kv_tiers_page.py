"""The /kv-tiers page (issue 28): hit rate vs host DRAM, $ split, TTFT by turn from the simulator; the state in the
URL; bad input answered 422 naming the field, never 500."""

from __future__ import annotations

import pytest

# 16 users, as test_kv_tiers_browser: what is checked (rows per DRAM size, figures, fragment, prices beside the split)
# is the same at any load, and 64 cost ~1.6x the CPU (the sessions' steady state)
Q = "/kv-tiers?model=llama-3.1-70b&hardware=hgx-h100-8&workload=agentic&concurrency=16&dram_bytes=0,256G&method=analytic"


def test_page_has_the_table_and_figures(client):
    r = client.get(Q)
    assert r.status_code == 200, r.text[-400:]
    assert r.text.count("data-dram=") == 2  # one row per DRAM size
    assert 'data-figure="fig-hits"' in r.text and 'data-figure="fig-cost"' in r.text
    assert 'href="/kv-tiers"' in r.text  # in the nav


def test_fragment_for_htmx(client):
    r = client.get(Q, headers={"HX-Request": "true"})
    assert r.status_code == 200 and "<html" not in r.text and 'id="kv-table"' in r.text


def test_simulate_draws_ttft_by_turn(client):
    r = client.get(Q.replace("method=analytic", "method=simulate").replace("dram_bytes=0,256G", "dram_bytes=256G"))
    assert r.status_code == 200 and 'data-figure="fig-turns"' in r.text


@pytest.mark.parametrize("query,field", [
    ("dram_bytes=abc", "dram_bytes"), ("kv_tiering=nope", "kv_tiering"), ("concurrency=", "concurrency"),
    ("bogus=1", "bogus"), ("hardware=nope", "hardware"), ("dram_bytes=1,2,3,4,5,6,7", "dram_bytes"),
    ("think_s=-1", "think_s"), ("workload=steady", "workload"), ("dram_bytes=100000G", "dram_bytes"),
    ("kv_tiering=none&nvme_bytes=1G", "nvme_bytes")])
def test_bad_input_is_422_naming_the_field(client, query, field):
    r = client.get("/kv-tiers?" + query)
    assert r.status_code == 422 and f'data-field="{field}"' in r.text, r.text[-300:]


def test_the_split_sits_beside_published_cached_input_prices(client):
    from tokenomy.catalog import loader

    r = client.get(Q)
    assert r.status_code == 200
    assert 'id="kv-published"' in r.text
    p = loader.price_file("deepseek-v3")  # DeepSeek's sheet: 0.27 miss, 0.07 cached, 1.10 output (its source)
    row = next(x for x in r.text.split("<tr>") if p.model in x)
    assert "0.07" in row and "0.27" in row and "api-docs.deepseek.com" in row
