"""The /context-compare page and /api/context_compare: the table, the state in the URL, 422 naming the field."""

from __future__ import annotations

import pytest


def test_page_has_the_table(client):
    r = client.get("/context-compare?models=kimi-k3&models=llama-3.1-405b&hardware=gb200-nvl72&kv_dtype=bf16")
    assert r.status_code == 200
    assert 'id="compare-table"' in r.text and r.text.count("data-model=") == 2
    assert 'data-figure="fig-kv"' in r.text and 'data-figure="fig-mfu"' in r.text
    assert 'href="/context-compare"' in r.text  # in the nav


def test_fragment_for_htmx(client):
    r = client.get("/context-compare?models=kimi-k3", headers={"HX-Request": "true"})
    assert r.status_code == 200 and "<html" not in r.text and 'id="compare-table"' in r.text


@pytest.mark.parametrize("query,field", [("models=nonesuch", "models"), ("models=kimi-k3&hardware=nope", "hardware"),
                                         ("models=kimi-k3&kv_dtype=int3", "kv_dtype"), ("models=", "models"),
                                         ("models=kimi-k3&bogus=1", "bogus")])
def test_bad_input_is_422_naming_the_field(client, query, field):
    r = client.get("/context-compare?" + query)
    assert r.status_code == 422 and f'data-field="{field}"' in r.text


def test_api_is_the_answer(client):
    from tokenomy.answers.architectures import context_compare

    r = client.get("/api/context_compare?models=kimi-k3,llama-3.1-405b")
    assert r.status_code == 200
    want = context_compare(models=["kimi-k3", "llama-3.1-405b"]).payload()
    assert [x["model"] for x in r.json()["rows"]] == [x["model"] for x in want["rows"]]
    assert r.json()["rows"][0]["kv_1m_bytes"] == pytest.approx(want["rows"][0]["kv_1m_bytes"])
    bad = client.get("/api/context_compare?models=nonesuch")
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["query", "models"]
