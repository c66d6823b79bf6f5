"""The KV tiers page as a person uses it, in Debian's chromium: four input changes (the policy, the DRAM sweep, the
workload, the simulator for TTFT by turn), then Back twice and Forward once. After each step the table has one row
per DRAM size asked, every plot is drawn with its title inside its box, the providers' published prices stand
beside the $ split, and the form shows the URL's state."""

from __future__ import annotations

import pytest

from .browsing import SHOTS, change, mark, settle

pytestmark = pytest.mark.browser

START = "/kv-tiers?model=llama-3.1-70b&hardware=hgx-h100-8&concurrency=16&dram_bytes=0,256G"  # 16 users: what is
# checked (rows, plots, titles, prices, history) is the same at any load, and 64 cost 1.6x the CPU (the sessions)
CHANGES = [("select[name='kv_tiering']", "hicache"), ("input[name='dram_bytes']", "0,64G,1024G"),
           ("select[name='workload']", "multiturn"), ("select[name='method']", "simulate")]
PLOTS = """() => [...document.querySelectorAll('#results .plot')].map(el => {
  const box = el.getBoundingClientRect(), t = el.querySelector('.gtitle'), tb = t && t.getBoundingClientRect();
  return {id: el.id, plotly: el.classList.contains('js-plotly-plot'), title: t ? t.textContent : '',
    titleInside: !!tb && tb.width > 0 && tb.left >= box.left - 1 && tb.right <= box.right + 1,
    traces: (el.data || []).length}; })"""


def state(pg, where: str) -> dict:
    assert pg.query_selector("#results .error") is None, f"{where}: {pg.inner_text('#results .error')}"
    plots = pg.evaluate(PLOTS)
    for p in plots:
        assert p["plotly"] and p["titleInside"] and p["traces"] >= 1, f"{where}: {p}"
    return {"rows": len(pg.query_selector_all("#kv-table tbody tr")), "plots": [p["id"] for p in plots],
            "title": pg.inner_text("#kv-title"), "policy": pg.input_value("select[name='kv_tiering']"),
            "dram": pg.input_value("input[name='dram_bytes']"),
            "published": [r.inner_text() for r in pg.query_selector_all("#kv-published tbody tr td:first-child")]}


def test_kv_tiers_survives_use(page, live_server):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(live_server + START)
    settle(page)
    seen, urls = [state(page, "load")], [page.url]
    assert seen[0]["rows"] == 2 and seen[0]["plots"] == ["fig-hits", "fig-cost"]
    assert seen[0]["published"], "the providers' published prices beside the $ split"
    for sel, value in CHANGES:
        change(page, sel, value)
        seen.append(state(page, f"after {sel}={value}"))
        urls.append(page.url)
    assert seen[1]["policy"] == "hicache" and "hicache" in seen[1]["title"]
    assert seen[2]["rows"] == 3 and seen[3]["rows"] == 3
    assert "multiturn" in seen[3]["title"] and "agentic" in seen[2]["title"]
    assert seen[4]["plots"] == ["fig-hits", "fig-cost", "fig-turns"]  # the simulator adds TTFT by turn
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "kv-tiers.png"), full_page=True)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 1280, "the page scrolls sideways"
    for want, step in ((3, "back"), (2, "back"), (3, "forward")):
        mark(page)
        getattr(page, f"go_{step}")()
        page.wait_for_function("(u) => location.href === u", arg=urls[want])
        settle(page)
        now = state(page, f"{step} to step {want}")
        assert now == seen[want], f"{step}: {now} != {seen[want]}"
