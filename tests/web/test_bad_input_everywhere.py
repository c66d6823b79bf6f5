"""Bad input on every numeric field of every /api endpoint and every page: a 422 naming the field, one line, the
allowed range as people read it, no CLI flag; never a 500, never the default in its place."""

from __future__ import annotations

import json
import re

import pytest

from tokenomy.catalog import loader
from tokenomy.web import params as P
from tokenomy.web import serve, views

NUMERIC = ("int", "float", "number", "int_list", "float_list")
BASE = {"model": "llama-3.1-8b", "hardware": "h100-sxm"}
BAD = ("inf", "-inf", "1e400", "1e309", "nan", "99999999999999999999999999999", "abc", "1e-300x")


def numeric_fields():
    for command in P.ANSWERS:
        for name, o in P.options(command).items():
            if o.kind in NUMERIC:
                yield command, name


def refusal(r, field: str) -> str:
    assert r.status_code == 422, (field, r.status_code, r.text[:200])
    d = r.json()["detail"][0]
    assert d["loc"][-1] == field, d
    msg = d["msg"]
    assert "\n" not in msg and "--" not in msg and "Missing option" not in msg, msg
    assert not re.search(r"\d\.\d+e[+-]0", msg), msg  # 1.04858e+06 is not how people read a bound
    return msg


def test_every_numeric_option_has_a_bound():
    assert [f for f in numeric_fields() if f[1] not in P.NUMBERS] == []


@pytest.mark.parametrize("command, field", sorted(set(numeric_fields())))
def test_api_refuses_non_numbers_and_out_of_range_naming_the_field(client, command, field):
    base = {k: v for k, v in BASE.items() if k in P.options(command)}
    for value in BAD:
        msg = refusal(client.get(f"/api/{command}", params={**base, field: value}), field)
        if value == "abc":
            assert "not a number" in msg
    b = P.NUMBERS[field]
    over = refusal(client.get(f"/api/{command}", params={**base, field: str(b.hi * 2 + 1)}), field)
    assert P.readable(b.hi) in over, over


@pytest.mark.parametrize("url, field, allowed", [
    ("/api/decode?model=llama-3.1-8b&hardware=h100-sxm&hop_latency=-1", "hop_latency", "[0, 10]"),
    ("/api/lifecycle?target_params=1e-300", "target_params", "[1,000,000, 1e15]"),
    ("/api/decode?model=llama-3.1-8b&hardware=h100-sxm&batch=2000000", "batch", "1,048,576"),
    ("/api/train?model=llama-3.1-70b&chips=1e400", "chips", "[1, 1,048,576]"),
    ("/api/lifecycle?mfu=0", "mfu", "[0.001, 1]"),
])
def test_named_refusals(client, url, field, allowed):
    assert allowed in refusal(client.get(url), field)


def test_absurd_config_sizes_are_refused(client):
    raw = json.loads((loader.ROOT / "models" / "Qwen--Qwen3-32B.json").read_text())
    for key, value in (("hidden_size", 10**12), ("hidden_size", 1e12), ("intermediate_size", 2**21)):
        msg = refusal(client.post("/api/upload", content=json.dumps({**raw, key: value})), "config")
        assert key in msg


@pytest.mark.parametrize("degrees", ["tp=8", "tp=2&pp=2", "tp=4&ep=1&pp=1&dp=2"])
def test_uploaded_config_with_a_layout_equals_the_catalog_model(client, degrees):
    raw = (loader.ROOT / "models" / "Qwen--Qwen3-32B.json").read_bytes()
    token = client.post("/api/upload", content=raw).json()["config"]
    up = client.get(f"/api/decode?config={token}&hardware=hgx-h100-8&batch=1,64&{degrees}")
    cat = client.get(f"/api/decode?model=qwen3-32b&hardware=hgx-h100-8&batch=1,64&{degrees}")
    assert up.status_code == 200, up.text
    assert up.json() == cat.json()
    page = client.get(f"/serve?config={token}&hardware=hgx-h100-8&batch=8&{degrees}")
    assert page.status_code == 200 and "longer than" not in page.text


def page_fields():
    yield "serve", [f for f in serve.SERVE_FIELDS if P.options("decode").get(f, P.Option("text")).kind in NUMERIC
                    or f == "len_pass"]
    for name, page in views.PAGES.items():
        offered = P.options(page.command)
        yield name, [f for f in page.fields if f in offered and offered[f].kind in NUMERIC]


@pytest.mark.parametrize("page, fields", list(page_fields()), ids=lambda x: x if isinstance(x, str) else "")
def test_pages_refuse_bad_numbers_inline_and_drop_the_old_result(client, page, fields):
    """On a page (and its htmx fragment, which replaces the results panel) a bad number is an inline error naming
    the field, and the fragment carries no result (no figure, no table) that could be taken for the answer."""
    for field in fields:
        for value in ("abc", "inf", "1e400"):
            full = client.get(f"/{page}", params={field: value})
            frag = client.get(f"/{page}", params={field: value}, headers={"HX-Request": "true"})
            for r in (full, frag):
                assert r.status_code == 422, (page, field, value, r.status_code)
                assert f'data-field="{field}"' in r.text, (page, field, value)
            assert "data-figure" not in frag.text and "<table" not in frag.text, (page, field, value)


# ---- D7: the Serve, Compare and Workload pages never put a default in place of what was typed -----------------

D7_PAGES = [  # page, its query, a number field and whether the form shows it filled (then empty is refused)
    ("serve", {}, "batch", True), ("serve", {}, "context", True), ("serve", {}, "hop_latency", False),
    ("serve", {}, "len_pass", False), ("compare", {}, "batch", True), ("compare", {}, "context", True),
    ("compare", {}, "a.chips", False), ("workload", {}, "isl", True), ("workload", {}, "osl", True),
    ("workload", {}, "cache_hit", True), ("workload", {}, "concurrency", True), ("workload", {}, "ttft_slo", False),
    ("workload", {"loop": "rate"}, "rate", True), ("workload", {}, "chips", False), ("workload", {}, "tp", False)]


@pytest.mark.parametrize("page, base, field, prefilled", D7_PAGES, ids=lambda x: x if isinstance(x, str) else "")
def test_d7_pages_refuse_what_they_used_to_replace_by_a_default(client, page, base, field, prefilled):
    """abc, inf, 1e400 (and, for a field the form shows filled, an empty value) are a 422 naming the field, on the
    full page and on its htmx fragment; an optional field left empty is 'not given'."""
    for value in ("abc", "inf", "1e400", "-1", "8,192") + (("",) if prefilled else ()):
        for headers in ({}, {"HX-Request": "true"}):
            r = client.get(f"/{page}", params={**base, field: value}, headers=headers)
            assert r.status_code == 422 and f'data-field="{field}"' in r.text, (page, field, value, r.status_code)
    if not prefilled:
        assert client.get(f"/{page}", params={**base, field: ""}).status_code == 200


def test_d7_pages_read_the_grammar(client):
    """A count with a suffix means on a page what it means on the CLI: batch=1k is 1,024 sequences."""
    r = client.get("/serve", params={"batch": "1k", "context": "8k"}, headers={"HX-Request": "true"})
    assert r.status_code == 200 and "1,024" in r.text and "8,192" in r.text


@pytest.mark.parametrize("field", ["context", "batch", "hop_latency"])
def test_the_api_refuses_an_empty_number_as_the_cli_does(client, field):
    r = client.get("/api/decode", params={**BASE, field: ""})
    assert "empty" in refusal(r, field)


def test_api_context_takes_the_cli_grammar(client):
    r = client.get("/api/decode", params={**BASE, "batch": "1", "context": "128k"})
    assert r.status_code == 200 and [x["context"] for x in r.json()] == [131072]
