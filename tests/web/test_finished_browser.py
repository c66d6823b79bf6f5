"""The finished web page (issue 30) in Debian's chromium: the Serve page's critical path adds up to the step shown
through several changes and Back/Forward; Back into an error's URL shows that error (not the previous results);
the Workload page asks for disaggregated pools; no page scrolls sideways on a 390 px phone. Screenshots go to
test-artifacts/ (conftest.screenshot)."""

from __future__ import annotations

import pytest

from .browsing import change, new_context, settle
from .conftest import screenshot

pytestmark = pytest.mark.browser

SERVE = "/serve?model=deepseek-v3&hardware=gb200-nvl72&ep=64&batch=256&kv_dtype=fp8"
PATH_SUM = """() => { const rows = [...document.querySelectorAll('#critical-path tr.term')];
    return {sum: rows.reduce((a, r) => a + Number(r.dataset.seconds), 0), n: rows.length,
            step: Number(document.querySelector('#summary').dataset.stepS)}; }"""


def path_adds_up(pg) -> float:
    got = pg.evaluate(PATH_SUM)
    assert got["n"] >= 4, got
    assert got["sum"] == pytest.approx(got["step"], rel=1e-9), got  # the terms shown are the step shown
    return got["step"]


def test_serve_critical_path_adds_up_through_changes_and_history(page, live_server):
    page.goto(live_server + SERVE)
    steps = [path_adds_up(page)]
    assert page.locator("#critical-path", has_text="EP dispatch + combine").count() == 1
    for selector, value in (("input[name=batch]", "64"), ("input[name=pp]", "2"), ("select[name=kind]", "prefill")):
        change(page, selector, value)  # the layout's details are open: the URL gives ep
        steps.append(path_adds_up(page))
    assert len(set(steps)) == len(steps), steps  # each change moved the step
    assert "pipeline" in page.inner_text("#critical-path")  # pp 2: the other stage is on the path
    assert "prefill pass" in page.inner_text("#bound")  # the bound names the step it is of
    screenshot(page, "serve-critical-path")
    for want in reversed(steps[:-1]):
        page.go_back()
        page.wait_for_function("(w) => { const s = document.querySelector('#summary');"
                               " return s && Number(s.dataset.stepS) === w; }", arg=want)
        path_adds_up(page)
    page.go_forward()
    page.wait_for_function("(w) => Number(document.querySelector('#summary').dataset.stepS) === w", arg=steps[1])
    path_adds_up(page)


def test_back_and_forward_into_an_error_show_the_error(page, live_server):
    """D6: the page shows what its URL says, an error entry included."""
    page.goto(live_server + "/serve?model=llama-3.1-70b&hardware=hgx-h100-8&batch=64&context=8192")
    change(page, "input[name=batch]", "-3")
    page.wait_for_selector("#results .error[data-field=batch]")
    change(page, "input[name=batch]", "16")
    page.wait_for_selector("#step-time")
    page.go_back()
    page.wait_for_function("() => location.search.includes('batch=-3')")
    page.wait_for_selector("#results .error[data-field=batch]")
    assert page.query_selector("#step-time") is None and page.query_selector("#results .plot") is None
    assert page.input_value("input[name=batch]") == "-3"
    page.go_back()
    page.wait_for_function("() => location.search.includes('batch=64')")
    page.wait_for_selector("#step-time")
    assert page.query_selector("#results .error") is None and page.input_value("input[name=batch]") == "64"
    page.go_forward()
    page.wait_for_function("() => location.search.includes('batch=-3')")
    page.wait_for_selector("#results .error[data-field=batch]")
    assert page.query_selector("#step-time") is None


def test_workload_asks_for_disaggregated_pools(page, live_server):
    page.goto(live_server + "/workload?concurrency=8,64")
    assert page.is_hidden("#pools") and page.is_visible("input[name=tp]") is False  # layout folded, pools hidden
    change(page, "select[name=mode]", "disagg")
    assert page.is_visible("#pools")
    page.wait_for_selector("#results .error[data-field]")  # no pool sizes yet: named, not guessed
    change(page, "input[name=prefill_chips]", "8")
    change(page, "input[name=decode_chips]", "8")
    page.wait_for_selector("#rows")
    headers = page.inner_text("#rows thead")
    assert "prefill chips" in headers and "KV hand-off" in headers and "p99" not in headers  # analytic: means
    assert "decode pool's step" in page.inner_text("#bound")
    api = page.request.get(live_server + page.get_attribute("#api-link", "href")).json()
    assert api[0]["mode"] == "disagg" and api[0]["prefill_chips"] == api[0]["decode_chips"] == 8  # the same question
    change(page, "input[name=decode_dp]", "2")
    page.wait_for_selector("#results .error[data-field]")  # tp 8 x dp 2 is not the pool's 8 chips: said, not fixed
    change(page, "input[name=decode_tp]", "4")
    assert "decode tp4 ep1 pp1 dp2" in page.inner_text("#rows")
    screenshot(page, "workload-disagg")


PHONE_PAGES = ["/serve", "/workload", "/compare", "/plan?top=6", "/train", "/lifecycle", "/cache", "/pricing",
               "/latency", "/speculate", "/context-compare", "/lecture", "/catalog"]


def test_no_page_scrolls_sideways_on_a_phone(browser, live_server):
    context = new_context(browser, viewport={"width": 390, "height": 844}, device_scale_factor=1)
    pg = context.new_page()
    try:
        for path in PHONE_PAGES:
            pg.goto(live_server + path)
            settle(pg)
            wide = pg.evaluate("() => ({scroll: document.documentElement.scrollWidth, inner: innerWidth})")
            assert wide["scroll"] <= wide["inner"], (path, wide)
            if path in ("/serve", "/workload", "/plan?top=6"):
                screenshot(pg, "phone-" + path.strip("/").split("?")[0])
    finally:
        context.close()
