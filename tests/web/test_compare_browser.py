"""The Compare page as a person uses it, in Debian's chromium: three input changes (one in each configuration's
column or the page's own fields), then Back twice and Forward once. After each step every plot is whole (Plotly's
js-plotly-plot class, its title inside its box) and draws one trace per configuration, named as the headline
table's columns; the URL is the state (Back/Forward restore the form and the plots). A screenshot after the three
changes goes to docs/screenshots/compare.png."""

from __future__ import annotations


import pytest

from .browsing import SHOTS, change, mark, settle

pytestmark = pytest.mark.browser

START = ("/compare?batch=64&context=8192&a.model=llama-3.1-70b&a.hardware=hgx-h100-8"
         "&b.model=llama-3.1-70b&b.hardware=hgx-b200-8&c.model=deepseek-v3&c.hardware=gb200-nvl72&c.ep=64&c.chips=64")
CHANGES = [("select[name='b.kv_dtype']", "fp8"), ("input[name='batch']", "256"),
           ("select[name='c.efficiency']", "roofline")]

PLOTS = """() => [...document.querySelectorAll('#results .plot')].map(el => {
  const box = el.getBoundingClientRect(), t = el.querySelector('.gtitle'), tb = t && t.getBoundingClientRect();
  return {id: el.id, plotly: el.classList.contains('js-plotly-plot'),
    titleInside: !!tb && tb.width > 0 && tb.left >= box.left - 1 && tb.right <= box.right + 1 &&
                 tb.top >= box.top - 1 && tb.bottom <= box.bottom + 1,
    names: (el.data || []).map(d => d.name)}; })"""
HEADS = "() => [...document.querySelectorAll('#headline th[data-column]')].map(th => th.textContent)"




def check(pg, where: str, configurations: int = 3) -> list[str]:
    """Every plot whole and one trace per configuration; the configurations' labels (the table's columns)."""
    assert pg.query_selector("#results .error") is None, f"{where}: {pg.inner_text('#results .error')}"
    heads, plots = pg.evaluate(HEADS), pg.evaluate(PLOTS)
    assert len(heads) == configurations and [p["id"] for p in plots] == ["fig-step", "fig-pareto", "fig-cost"], where
    for p in plots:
        assert p["plotly"], f"{where}: {p['id']} lost Plotly's class"
        assert p["titleInside"], f"{where}: {p['id']}'s title is outside its box"
        assert p["names"] == heads, f"{where}: {p['id']} draws {p['names']}, the configurations are {heads}"
    return heads



def test_compare_survives_use(page, live_server):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(live_server + START)
    settle(page)
    labels = [check(page, "load")]
    urls = [page.url]
    for sel, value in CHANGES:
        change(page, sel, value)
        labels.append(check(page, f"after {sel}={value}"))
        urls.append(page.url)
        assert page.input_value(sel) == value
    assert "KV fp8" in labels[1][1] and "roofline" in labels[3][2]  # the change reached its configuration
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "compare.png"), full_page=True)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 1280, "the page scrolls sideways"
    for i, step in ((2, "back"), (1, "back"), (2, "forward")):
        mark(page)
        getattr(page, "go_back" if step == "back" else "go_forward")()
        page.wait_for_function("(u) => location.href === u", arg=urls[i])
        settle(page)
        assert check(page, f"{step} to {urls[i]}") == labels[i]
        assert page.input_value("input[name='batch']") == ("256" if i == 2 else "64")


def test_a_bad_column_marks_its_field_and_removing_c_leaves_two(page, live_server):
    page.goto(live_server + START)
    settle(page)
    change(page, "input[name='a.tp']", "3")
    err = page.query_selector("#results .error")
    assert err is not None and err.get_attribute("data-field") == "a.tp"
    assert "invalid" in page.get_attribute("input[name='a.tp']", "class")
    change(page, "input[name='a.tp']", "")
    check(page, "a.tp cleared")
    for sel in ("c.ep", "c.chips"):
        change(page, f"input[name='{sel}']", "")
    change(page, "select[name='c.hardware']", "")
    change(page, "select[name='c.model']", "")
    check(page, "without C", configurations=2)
