"""The pages in Debian's chromium through Playwright: load, change an input, see the numbers and plots change,
follow links; a screenshot of each page goes to test-artifacts/."""

from __future__ import annotations

import re

import pytest

from tokenomy.catalog import loader

from .conftest import screenshot

pytestmark = pytest.mark.browser

SERVE = "/serve?model=llama-3.1-70b&hardware=hgx-h100-8&batch=64&context=8192"


def plot_state(pg, div: str) -> dict:
    """What plotly drew in ``div``: trace names and point counts, and how many times it was drawn."""
    return pg.evaluate("""(id) => { const el = document.getElementById(id);
        return {drawn: Number(el.dataset.drawn || 0), traces: (el.data || []).map(t => t.name),
                points: (el.data || []).map(t => (t.x || []).length),
                svg: el.querySelectorAll('svg.main-svg').length,
                laidOut: el.classList.contains('js-plotly-plot') &&
                    [...el.querySelectorAll('svg.main-svg')].every(s => getComputedStyle(s).position === 'absolute'),
                star: (el.data || []).filter(t => t.name === 'this pass').map(t => Array.from(t.x)[0])}; }""", div)


def wait_drawn(pg, div: str) -> None:
    """Until Plotly has drawn ``div`` (figures are drawn after htmx settles a swap)."""
    pg.wait_for_function("(id) => { const el = document.getElementById(id);"
                         " return el && el.querySelectorAll('svg.main-svg').length > 0; }", arg=div)


def test_serve_page_updates_on_input(page, live_server, hopper_bands):
    page.goto(live_server + SERVE)
    before = plot_state(page, "fig-roofline")
    assert before["svg"] >= 1 and before["traces"] == ["roof", "ridge", "ops", "this pass"]
    step = page.inner_text("#step-time")
    # the error band of the step (a Hopper decode at batch 64: tests/conftest.hopper_bands), in its card and
    # shaded on the latency plot
    assert re.search(r"measured \([+-]\d+%/[+-]\d+%\)", page.inner_text("#step-band"))
    wait_drawn(page, "fig-latency")
    assert page.evaluate("() => document.getElementById('fig-latency').data.some(t => t.fill === 'tonexty')")
    screenshot(page, "serve")
    page.fill("input[name=batch]", "8")
    page.wait_for_function("document.querySelector('#step-time') && "
                           f"document.querySelector('#step-time').innerText !== {step!r}")
    assert re.search(r"batch=8(&|$)", page.url)  # the state is in the URL
    wait_drawn(page, "fig-roofline")
    after = plot_state(page, "fig-roofline")
    assert after["svg"] >= 1 and after["star"] != before["star"]  # the pass moved on the roofline
    page.wait_for_load_state("networkidle")
    for div in page.eval_on_selector_all("#results .plot", "els => els.map(e => e.id)"):
        assert plot_state(page, div)["laidOut"], div  # Plotly's layers stay stacked after the htmx swap
    page.reload()  # the link reproduces the page
    assert page.input_value("input[name=batch]") == "8"


def test_serve_slider_and_bad_input_inline(page, live_server):
    page.goto(live_server + SERVE)
    page.locator("input[data-log2-for=context]").fill("12")  # the log2 slider: 2^12
    page.wait_for_url(re.compile(r"context=4096"))
    assert page.input_value("input[name=context]") == "4096"
    page.fill("input[name=batch]", "-3")
    page.wait_for_selector("#results .error[data-field=batch]")
    assert "batch" in page.inner_text("#results .error")
    assert "invalid" in page.get_attribute("input[name=batch]", "class")
    page.fill("input[name=batch]", "2")
    page.wait_for_selector("#step-time")


def test_serve_does_not_fit_and_upload(page, live_server, tmp_path):
    page.goto(live_server + "/serve?model=llama-3.1-405b&hardware=h100-sxm&batch=1")
    assert "DOES NOT FIT" in page.inner_text("#verdict")
    page.set_input_files("#config-file", str(loader.ROOT / "models" / "meta-llama--Llama-3.1-8B.json"))
    page.wait_for_url(re.compile(r"config="))
    page.wait_for_selector("#step-time")
    assert "uploaded:" in page.inner_text("#summary h2")
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "nonesuch"}')
    page.set_input_files("#config-file", str(bad))
    page.wait_for_selector("#upload-error:not([hidden])")
    assert "not supported" in page.inner_text("#upload-error")


def test_serve_json_link_matches_the_page(page, live_server):
    page.goto(live_server + SERVE)
    href = page.get_attribute("#api-link", "href")
    assert href.startswith("/api/decode?") and "kind=" not in href
    rows = page.request.get(live_server + href).json()
    assert page.get_attribute("#summary", "data-step-s") == repr(rows[0]["step_s"])


def test_lecture_claim_link_opens_the_preset_serve_page(page, live_server):
    page.goto(live_server + "/lecture")
    assert page.locator("#claims tbody tr").count() >= 28
    assert page.locator("#claims .verdict-pass, #claims .verdict-fail").count() >= 28
    screenshot(page, "lecture")
    page.click("#claim-L1 a.claim-link")
    page.wait_for_selector("#step-time")
    assert "/serve?" in page.url and page.input_value("input[name=batch]") == "2400"
    assert page.input_value("select[name=model]") == "deepseek-v3"
    assert plot_state(page, "fig-roofline")["svg"] >= 1


@pytest.mark.parametrize("path, field, value, watch", [
    ("/plan?top=6", "input[name=context]", "32768", "#summary"),
    ("/train", "input[name=tp]", "1", "#train-rows tbody"),
    ("/lifecycle", "input[name=demand_tokens_per_s]", "5e8", "#total-usd"),
    ("/cache", "input[name=prefix_tokens]", "131072", "#summary p"),
])
def test_bridged_page_updates_on_input(page, live_server, path, field, value, watch):
    page.goto(live_server + path)
    div = page.locator(".plot").first.get_attribute("id")
    assert plot_state(page, div)["svg"] >= 1
    before, fig_before = page.inner_text(watch), page.inner_text(f"#{div}")
    screenshot(page, path.strip("/").split("?")[0])
    page.fill(field, value)
    page.wait_for_function("([sel, old]) => document.querySelector(sel) && "
                           "document.querySelector(sel).innerText !== old", arg=[watch, before])
    name = field.split("name=")[1].rstrip("]")
    assert f"{name}={value}" in page.url
    wait_drawn(page, div)
    assert plot_state(page, div)["laidOut"] and page.inner_text(f"#{div}") != fig_before  # redrawn


def test_lifecycle_page_splits_a_published_run_with_the_engine(page, live_server):
    """lifecycle --run on the page: the phases' chip-hours in cards; fewer users at once -> more inference chip-hours
    (serve's steady state at a lighter load), the split's figure redrawn."""
    page.goto(live_server + "/lifecycle?run=deepseek-v3")
    div = page.locator(".plot").first.get_attribute("id")
    wait_drawn(page, div)
    before, fig_before = page.inner_text("#inference-chip-hours"), page.inner_text(f"#{div}")
    screenshot(page, "lifecycle-engine")
    page.fill("input[name=inference_concurrency]", "16")
    page.wait_for_function("([sel, old]) => document.querySelector(sel) && "
                           "document.querySelector(sel).innerText !== old", arg=["#inference-chip-hours", before])
    assert "inference_concurrency=16" in page.url
    wait_drawn(page, div)
    assert page.inner_text(f"#{div}") != fig_before
    num = lambda t: float(t.split()[0].replace(",", ""))  # noqa: E731  ("5.188e+07 chip-h")
    assert num(page.inner_text("#inference-chip-hours")) > num(before)


def test_catalog_page(page, live_server):
    page.goto(live_server + "/catalog")
    assert page.locator("#chips tbody tr").count() == len(loader.chip_names())
    assert page.locator("#models tbody tr").count() == len(loader.model_names())
    screenshot(page, "catalog")
    page.click("#models a[href='/serve?model=deepseek-v3']")
    page.wait_for_selector("#step-time, #verdict")
    assert page.input_value("select[name=model]") == "deepseek-v3"


def on_screen(page) -> dict:
    """What a person sees: the form's values and the results' numbers."""
    return page.evaluate("""() => { const f = document.querySelector('#serve-form');
        const v = Object.fromEntries(['batch', 'context', 'efficiency', 'tp', 'layout', 'redundant_experts']
            .map(n => [n, f.querySelector(`[name=${n}]`).value]));
        const s = document.querySelector('#summary');
        return {...v, step: s && s.dataset.stepS, layoutLabel: (document.querySelector('#layout') || {}).innerText,
                card: (document.querySelector('#step-time') || {}).innerText}; }""")


def change(page, selector: str, value: str, how: str = "fill") -> None:
    """Change one input the way a person does and wait until the results (and the URL) follow it."""
    old = page.url
    getattr(page, "select_option" if how == "select" else "fill")(selector, value)
    page.wait_for_function("(old) => window.location.href !== old", arg=old)
    page.wait_for_selector("#results:not(.htmx-request) #summary, #results .error")
    page.wait_for_load_state("networkidle")


def drawn(page) -> None:
    """Every figure laid out with its title (Plotly.react finishes after the swap): then a screenshot is true."""
    page.wait_for_function("() => { const p = document.querySelectorAll('#results .plot');"
                           " return p.length > 0 && document.querySelectorAll('#results .plot .gtitle').length"
                           " === p.length; }")


def api_step(page, live_server) -> str:
    href = page.get_attribute("#api-link", "href")
    return repr(page.request.get(live_server + href).json()[0]["step_s"])


def test_serve_changes_then_back_shows_each_earlier_state(page, live_server):
    """Batch, efficiency, an explicit layout, the ideal bound; then Back through every state: each is restored on
    screen (form and numbers) and equals the API answer of the same question; Forward again."""
    page.goto(live_server + SERVE)
    seen = [on_screen(page)]
    assert seen[0]["layoutLabel"] == "tp8 ep1 pp1 dp1" and seen[0]["efficiency"] == "calibrated"
    change(page, "input[name=batch]", "32")
    seen.append(on_screen(page))
    change(page, "select[name=efficiency]", "roofline", "select")
    seen.append(on_screen(page))
    assert "roofline efficiency" in page.inner_text("#summary h2")
    assert float(seen[2]["step"]) < float(seen[1]["step"])  # the bound is below the calibrated estimate
    page.click("details summary")  # the parallel layout section
    change(page, "input[name=tp]", "4")
    seen.append(on_screen(page))
    assert seen[-1]["layoutLabel"] == "tp4 ep1 pp1 dp1" and "efficiency=roofline" in page.url
    change(page, "input[name=tp]", "")  # degrees take precedence over layout=ideal: clear them first
    seen.append(on_screen(page))
    assert seen[-1] == {**seen[2], "tp": ""}
    change(page, "select[name=layout]", "ideal", "select")
    seen.append(on_screen(page))
    assert seen[-1]["layoutLabel"] == "ideal even split over 8 (no layout reaches it)"
    assert float(seen[-1]["step"]) <= min(float(s["step"]) for s in seen[:-1])  # no layout reaches it
    assert api_step(page, live_server) == seen[-1]["step"]
    drawn(page)
    screenshot(page, "serve-ideal")
    for want in reversed(seen[:-1]):
        page.go_back()
        page.wait_for_function("(w) => { const f = document.querySelector('#serve-form');"
                               " const s = document.querySelector('#summary');"
                               " return s && s.dataset.stepS === w.step && f.querySelector('[name=tp]').value === w.tp"
                               " && f.querySelector('[name=layout]').value === w.layout; }", arg=want)
        page.wait_for_load_state("networkidle")
        assert on_screen(page) == want
        assert api_step(page, live_server) == want["step"]  # the JSON link follows the restored form
        wait_drawn(page, "fig-latency")
        wait_drawn(page, "fig-roofline")
        assert plot_state(page, "fig-latency")["laidOut"] and plot_state(page, "fig-roofline")["laidOut"]
    drawn(page)
    screenshot(page, "serve-back")
    page.go_forward()
    page.wait_for_function("(b) => document.querySelector('#summary').dataset.stepS === b", arg=seen[1]["step"])
    assert on_screen(page) == seen[1]


def test_serve_redundant_experts_and_prefill(page, live_server):
    page.goto(live_server + "/serve?model=deepseek-v3&hardware=gb200-nvl72&ep=64&batch=256&kv_dtype=fp8")
    assert page.inner_text("#layout") == "tp1 ep64 pp1 dp1 attn-dp"
    before = page.inner_text("#step-time")
    change(page, "input[name=redundant_experts]", "64")
    assert "+64 redundant experts" in page.inner_text("#layout") and "redundant_experts=64" in page.url
    change(page, "input[name=redundant_experts]", "3")  # 256 + 3 slots do not split over 64 ranks
    page.wait_for_selector("#results .error[data-field]")
    assert "not valid" in page.inner_text("#results .error")
    field = page.get_attribute("#results .error", "data-field")
    assert "invalid" in (page.get_attribute(f"[name={field}]", "class") or "")  # the input to fix is marked
    change(page, "input[name=redundant_experts]", "0")
    page.wait_for_function("(old) => document.querySelector('#step-time') && "
                           "document.querySelector('#step-time').innerText === old", arg=before)
    assert page.is_hidden("input[name=len_pass]")
    page.select_option("select[name=kind]", "prefill")
    page.wait_for_url(re.compile(r"kind=prefill"))
    page.wait_for_selector("#summary")
    assert page.is_visible("input[name=len_pass]")
    change(page, "input[name=len_pass]", "512")
    assert "512 new token(s) per sequence" in page.inner_text("#explain")
    wait_drawn(page, "fig-latency")
    assert plot_state(page, "fig-latency")["traces"][:2] == ["step", "roofline bound"]
    drawn(page)
    screenshot(page, "serve-prefill")
