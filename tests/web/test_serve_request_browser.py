"""The Serve page's one request and its per-op breakdown in Debian's chromium (issue 30): the request's total is
TTFT + (OSL − 1) x TPOT on screen through input changes, disaggregated pools and Back/Forward; a point of the
roofline opens its op's row; the per-kind rows add up to the pass's compute and memory terms; 390 px fits."""

from __future__ import annotations

import pytest

from .browsing import SHOTS, change, mark, new_context, settle

pytestmark = pytest.mark.browser

SERVE = "/serve?model=llama-3.1-70b&hardware=hgx-h100-8&batch=64&context=8192"
REQUEST = """() => { const r = document.querySelector('#request'); if (!r || !r.dataset.totalS) return null;
    return {total: Number(r.dataset.totalS), ttft: Number(r.dataset.ttftS), tpot: Number(r.dataset.tpotS),
            osl: Number(r.dataset.osl), usd: Number(r.dataset.usd), text: r.innerText}; }"""


def request_on_screen(pg) -> dict:
    got = pg.evaluate(REQUEST)
    assert got is not None, pg.inner_text("#results")
    assert got["total"] == pytest.approx(got["ttft"] + (got["osl"] - 1) * got["tpot"], rel=1e-12), got
    assert f"{got['osl'] - 1:,} × TPOT" in got["text"] and "per request" in got["text"], got["text"]
    return got


def test_one_request_through_changes_pools_and_history(page, live_server):
    page.goto(live_server + SERVE)
    seen = [request_on_screen(page)]
    change(page, "input[name=osl]", "1000")
    seen.append(request_on_screen(page))
    assert seen[-1]["osl"] == 1000 and seen[-1]["total"] > seen[0]["total"]
    change(page, "input[name=isl]", "8k")
    seen.append(request_on_screen(page))
    assert seen[-1]["ttft"] > seen[-2]["ttft"]  # a longer prompt: a longer prefill
    assert page.is_hidden("#pools")
    change(page, "select[name=mode]", "disagg")
    assert page.is_visible("#pools") and page.is_hidden("input[name=chips]")
    page.wait_for_selector("#results .error[data-field=prefill_chips]")  # pool sizes asked for by name
    change(page, "input[name=prefill_chips]", "8")
    change(page, "input[name=decode_chips]", "8")
    change(page, "input[name=decode_tp]", "4")
    change(page, "input[name=decode_dp]", "2")
    got = request_on_screen(page)
    assert "prefill and decode pools" in got["text"] and "decode tp4 ep1 pp1 dp2" in got["text"]
    assert page.inner_text("#layout") == "tp4 ep1 pp1 dp2"  # the decode pass is the decode pool's
    assert "KV hand-off" in got["text"]
    api = page.request.get(live_server + page.get_attribute("#api-link", "href"))  # the pass, on the decode pool
    assert api.status == 200 and "tp4 ep1 pp1 dp2" in api.text(), page.get_attribute("#api-link", "href")
    page.screenshot(path=str(_shot("serve-disagg")), full_page=True)
    travel(page, "back", "!location.search.includes('decode_dp')")  # decode tp 4 alone: 4 chips of the 8
    page.wait_for_selector("#results .error[data-field]")
    travel(page, "back", "!location.search.includes('decode_tp')")
    request_on_screen(page)
    travel(page, "back", "!location.search.includes('decode_chips')")
    travel(page, "back", "!location.search.includes('prefill_chips')")
    travel(page, "back", "!location.search.includes('mode=disagg')")  # isl 8k, aggregated
    page.wait_for_function("(t) => Number(document.querySelector('#request').dataset.totalS) === t",
                           arg=seen[2]["total"])
    request_on_screen(page)
    travel(page, "forward", "location.search.includes('mode=disagg')")
    page.wait_for_selector("#results .error[data-field=prefill_chips]")


def travel(pg, way: str, condition: str) -> None:
    """Back or Forward, then wait for the URL ``condition`` and the results of that entry."""
    mark(pg)
    getattr(pg, "go_back" if way == "back" else "go_forward")()
    pg.wait_for_function("() => " + condition)
    settle(pg)


def _shot(name: str):
    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS / f"{name}.png"


KIND_SUMS = """() => { const s = document.querySelector('#summary'); const rows = [...document.querySelectorAll('#kind-table tbody tr')];
    return {compute: rows.reduce((a, r) => a + Number(r.dataset.computeS), 0), memory: rows.reduce((a, r) => a + Number(r.dataset.memoryS), 0),
            pass_compute: Number(s.dataset.computeS), pass_memory: Number(s.dataset.memoryS), kinds: rows.map(r => r.dataset.kind)}; }"""


def kinds_add_up(pg) -> list:
    got = pg.evaluate(KIND_SUMS)
    assert got["compute"] == pytest.approx(got["pass_compute"], rel=1e-9), got
    assert got["memory"] == pytest.approx(got["pass_memory"], rel=1e-9), got
    return got["kinds"]


def click_roofline_op(pg, name: str) -> None:
    """Click the roofline's point of op ``name`` where Plotly drew it (its marker's centre on screen)."""
    pg.locator("#fig-roofline").scroll_into_view_if_needed()
    box = pg.evaluate("""(name) => { const gd = document.getElementById('fig-roofline');
        const i = gd.data.findIndex(t => t.name === 'ops'); const k = gd.data[i].text.indexOf(name);
        const pt = gd.querySelectorAll('.scatterlayer .trace')[i].querySelectorAll('.point')[k];
        const b = pt.getBoundingClientRect(); return {x: b.x + b.width / 2, y: b.y + b.height / 2}; }""", name)
    pg.mouse.move(box["x"], box["y"])
    pg.mouse.click(box["x"], box["y"])


def test_roofline_point_opens_its_op_and_kinds_add_up(page, live_server):
    page.goto(live_server + "/serve?model=deepseek-v3&hardware=gb200-nvl72&ep=64&batch=256&kv_dtype=fp8")
    assert kinds_add_up(page) == ["embed", "matmul", "attention", "expert"]
    click_roofline_op(page, "experts")
    page.wait_for_selector("#op-table tr.picked[data-op='experts']")
    detail = page.inner_text("#op-detail")
    assert detail.startswith("experts (expert, 58 layers)") and "per layer" in detail
    page.click("#op-table tr[data-op='lm_head']")  # a row opens its detail too
    assert page.inner_text("#op-detail").startswith("lm_head") and page.locator("tr.picked").count() == 1
    for selector, value in (("input[name=batch]", "8"), ("select[name=kind]", "prefill"), ("input[name=context]", "2048")):
        change(page, selector, value)
        kinds_add_up(page)
        assert page.query_selector("#op-detail:not([hidden])") is None  # a new answer: nothing picked yet
    click_roofline_op(page, "attn.scores")
    page.wait_for_selector("#op-table tr.picked[data-op='attn.scores']")
    page.screenshot(path=str(_shot("serve-breakdown")), full_page=True)
    page.go_back()
    page.wait_for_function("() => location.search.includes('context=8192')")
    settle(page)
    kinds_add_up(page)


def test_serve_with_pools_fits_a_phone(browser, live_server):
    context = new_context(browser, viewport={"width": 390, "height": 844}, device_scale_factor=1)
    pg = context.new_page()
    try:
        pg.goto(live_server + "/serve?mode=disagg&prefill_chips=8&decode_chips=8")
        settle(pg)
        request_on_screen(pg)
        wide = pg.evaluate("() => ({scroll: document.documentElement.scrollWidth, inner: innerWidth})")
        assert wide["scroll"] <= wide["inner"], wide
    finally:
        context.close()
