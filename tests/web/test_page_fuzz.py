"""Fuzz every page route the way test_schema_fuzz fuzzes the API: queries drawn from the parameters each page
declares (its form's fields; a page over an answer takes every keyword of that answer, as /api/<command> does),
each value either fitting the parameter (a choice, a catalog name, a number within its bound, a list) or breaking
it. No page may answer 500 or show a traceback; a refusal is a 422 with the inline error naming a field the query
gave. A fixed number of examples per page, derandomized; no clock anywhere."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tokenomy.catalog import loader
from tokenomy.units import DTYPE_BYTES
from tokenomy.web import compare_page, context_page, serve, views, workload_page
from tokenomy.web import params as P

EXAMPLES = 30  # per page and mode (fitting values only, or with junk), full pages and htmx fragments drawn alike
MAX_KEYS = 4  # parameters set in one query: more, and nearly every query trips over one of them
MODELS = ["llama-3.1-8b", "llama-3.1-70b", "deepseek-v3", "qwen3-30b-a3b", "nonesuch"]
HARDWARE = ["h100-sxm", "hgx-h100-8", "gb200-nvl72", "tpu-v5p", "nonesuch"]
JUNK = ["", "abc", "-1", "0", "inf", "nan", "1e400", "2.5", "1,,2", "1..8", "x" * 210]


def _commands() -> dict[str, str]:
    """The answer each page's unprefixed fields belong to (for their kind and bound)."""
    return {"serve": "decode", "compare": "decode", "workload": "serve", "context-compare": "context_compare",
            **{name: page.command for name, page in views.PAGES.items()}}


def declared() -> dict[str, tuple[str, ...]]:
    """What each page route takes in its query."""
    return {"serve": serve.SERVE_FIELDS, "compare": compare_page.FIELDS, "workload": workload_page.FIELDS,
            "context-compare": context_page.FIELDS, "lecture": (), "catalog": (),
            **{name: tuple(P.options(page.command)) for name, page in views.PAGES.items()}}


def _number(name: str) -> st.SearchStrategy:
    b = P.NUMBERS[name]
    hi = max(min(b.hi, 4096.0), b.lo)  # within the bound, small enough to answer quickly; the bound itself drawn too
    return st.one_of(st.integers(int(max(b.lo, 1)), int(max(hi, 1))).map(str),
                     st.floats(b.lo, hi, allow_nan=False).map(lambda x: f"{x:.4g}"),
                     st.sampled_from([P.readable(b.lo).replace(",", ""), P.readable(b.hi).replace(",", "")]))


def value_of(page: str, field: str) -> st.SearchStrategy:
    """Values that fit one field of one page, by the parameter's kind (a wrong catalog name among them)."""
    name = field.split(".")[-1]
    opt = P.options(_commands()[page]).get(name, P.Option("text")) if page in _commands() else P.Option("text")
    choices = {**P.CHOICES, **views.PAGE_CHOICES, "kind": ("decode", "prefill"), "loop": workload_page.LOOPS,
               "method": workload_page.METHODS}
    if name in ("model", "models"):
        return st.sampled_from(MODELS + [",".join(MODELS[:2])])
    if name == "hardware":
        return st.sampled_from(HARDWARE)
    if name == "config":
        return st.sampled_from(["", "abc", "eJyrVg"])
    if name.endswith("dtype"):
        return st.sampled_from(list(DTYPE_BYTES) + ["auto", "checkpoint", "", "int3"])
    if name in choices:
        return st.sampled_from(list(choices[name]) + [""])
    if name in P.NUMBERS:
        return _number(name)
    if opt.kind == "bool":
        return st.sampled_from(["true", "false", ""])
    return st.sampled_from(["", "abc", "1", "fixed:8", "uniform:1:9", "L1,L2"])


def queries(page: str, mode: str) -> st.SearchStrategy:
    """A few of the page's parameters; ``negative``: one of them junk."""
    fields = declared()[page]
    if not fields:
        return st.just({})

    def fill(keys):
        values = {k: value_of(page, k) for k in keys}
        if mode == "negative" and keys:
            values[keys[0]] = st.sampled_from(JUNK)
        return st.fixed_dictionaries(values)

    return st.lists(st.sampled_from(fields), max_size=MAX_KEYS, unique=True).flatmap(fill)


def check_page(page: str, r, query: dict) -> None:
    assert r.status_code in (200, 422), (r.status_code, query, r.text[-400:])
    assert "Traceback" not in r.text and "Internal Server Error" not in r.text, query
    if r.status_code == 422:  # the inline error names a field of the page (or one of its answer's keywords)
        field = re.search(r'class="error" role="alert" data-field="([^"]+)"', r.text)
        assert field, (query, r.text[:300])
        named = field.group(1)
        known = set(declared()[page]) | set(P.options(_commands()[page])) if page in _commands() else set()
        assert named in known | {"input"} or named.split(".")[-1] in known, (named, query)


@pytest.fixture(scope="module")
def raw(app):
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


@pytest.mark.parametrize("mode", ["positive", "negative"])
@pytest.mark.parametrize("page", sorted(declared()))
def test_no_page_answers_500_over_its_parameters(raw, page, mode):
    seen = []

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(query=queries(page, mode), fragment=st.booleans())
    def fuzz(query, fragment):
        r = raw.get(f"/{page}", params=query, headers={"HX-Request": "true"} if fragment else {})
        seen.append(r.status_code)
        check_page(page, r, query)

    fuzz()
    assert seen
    if mode == "positive":  # not only refusals: values that fit are answered
        assert 200 in seen, seen


@pytest.mark.parametrize("url", ["/plan?concurrency=64", "/plan?rate=1", "/plan?mode=disagg&concurrency=64&top=3",
                                 "/plan?concurrency=8,64&isl=2048&osl=256&ttft_slo=1&tpot_slo=0.05"])
def test_plan_page_answers_a_serving_plan(raw, url):
    """A workload on the Plan page: the serving plan's front as a table and a figure, as /api/plan answers it."""
    query = url.split("?", 1)[1]
    r = raw.get(url)
    assert r.status_code == 200, r.text[-500:]
    api = raw.get(f"/api/plan?model=deepseek-v3&hardware=gb200-nvl72&context=8192&top=24&{query}")
    assert api.status_code == 200
    best = api.json()["best"]
    assert f'data-best="{best["plan"]}"' in r.text
    assert 'id="fig-front"' in r.text and 'id="serving-front"' in r.text
    assert len(re.findall(r"<tr data-plan=", r.text)) == len(api.json()["front"])
