"""The Min chips page and the Workload page's use-case presets in Debian's chromium (issue 30, GenZ's "minimum
chips" table): the table follows its inputs and Back/Forward; a use case opens the Workload page preset to it on
its minimum chips, where the answer meets the use case's SLOs; choosing a preset fills ISL, OSL and the SLOs."""

from __future__ import annotations

import pytest

from tokenomy.answers.sizing import USE_CASES

from .browsing import SHOTS, change, mark, new_context, settle

pytestmark = pytest.mark.browser

ROWS = """() => [...document.querySelectorAll('#rows tr.use-case')].map(r =>
    ({use_case: r.dataset.useCase, min_chips: r.dataset.minChips ? Number(r.dataset.minChips) : null}))"""


def table(pg) -> dict:
    return {r["use_case"]: r["min_chips"] for r in pg.evaluate(ROWS)}


def test_min_chips_follows_inputs_and_history(page, live_server):
    page.goto(live_server + "/min_chips?model=llama-3.1-8b&hardware=h100-sxm&max_chips=16")
    first = table(page)
    assert list(first) == list(USE_CASES) and first["chat"] == 1  # 8 B in bf16: 16 GB on one 80 GB chip
    change(page, "input[name=concurrency]", "128")
    more = table(page)
    assert all(more[k] is None or first[k] is None or more[k] >= first[k] for k in first), (first, more)
    assert more != first  # 8x the users: some use case needs more chips
    change(page, "input[name=use_case]", "chat,rag")
    assert list(table(page)) == ["chat", "rag"]
    change(page, "input[name=max_chips]", "abc")
    page.wait_for_selector("#results .error[data-field=max_chips]")
    mark(page)
    page.go_back()
    page.wait_for_function("() => !location.search.includes('abc')")
    settle(page)
    assert list(table(page)) == ["chat", "rag"]
    mark(page)
    page.go_back()
    page.wait_for_function("() => !location.search.includes('use_case')")
    settle(page)
    assert table(page) == more
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "min-chips.png"), full_page=True)
    page.go_forward()
    page.wait_for_function("() => location.search.includes('use_case')")
    page.wait_for_function("() => document.querySelectorAll('#rows tr.use-case').length === 2")


def test_a_use_case_opens_the_workload_page_on_its_chips(page, live_server):
    page.goto(live_server + "/min_chips?model=llama-3.1-70b&hardware=h100-sxm&use_case=agent&max_chips=32")
    n = table(page)["agent"]
    assert n is not None and n >= 2
    page.click("#rows a.preset-link")
    page.wait_for_selector("#workload-form")
    settle(page)
    u = USE_CASES["agent"]
    assert page.input_value("input[name=isl]") == str(u.isl) and page.input_value("input[name=osl]") == str(u.osl)
    assert float(page.input_value("input[name=tpot_slo]")) == u.tpot_slo_s
    assert page.input_value("input[name=chips]") == str(n) and page.input_value("select[name=preset]") == "agent"
    best = page.evaluate("() => ({ttft: document.querySelector('#ttft').innerText, tpot: document.querySelector('#tpot').innerText})")
    api = page.request.get(live_server + page.get_attribute("#api-link", "href")).json()
    assert api[0]["tpot_s"] <= u.tpot_slo_s and api[0]["ttft_s"] <= u.ttft_slo_s, (api[0], best)
    change(page, "select[name=preset]", "code-completion")  # a preset fills the lengths and SLOs
    c = USE_CASES["code-completion"]
    assert page.input_value("input[name=isl]") == str(c.isl) and f"osl={c.osl}" in page.url
    assert f"tpot_slo={c.tpot_slo_s:g}" in page.url
    change(page, "input[name=osl]", "128")  # edited by hand: a custom question again
    assert page.input_value("select[name=preset]") == "" and "preset=" not in page.url.replace("preset=&", "")
    mark(page)
    page.go_back()
    page.wait_for_function("() => location.search.includes('preset=code-completion')")
    settle(page)
    assert page.input_value("input[name=osl]") == str(c.osl)


def test_min_chips_and_lecture_fit_a_phone(browser, live_server):
    context = new_context(browser, viewport={"width": 390, "height": 844}, device_scale_factor=1)
    pg = context.new_page()
    try:
        for path in ("/min_chips?model=llama-3.1-8b&hardware=h100-sxm&max_chips=8", "/lecture",
                     "/workload?preset=rag&model=llama-3.1-8b&hardware=h100-sxm&concurrency=4"):
            pg.goto(live_server + path)
            settle(pg)
            wide = pg.evaluate("() => ({scroll: document.documentElement.scrollWidth, inner: innerWidth})")
            assert wide["scroll"] <= wide["inner"], (path, wide)
    finally:
        context.close()
