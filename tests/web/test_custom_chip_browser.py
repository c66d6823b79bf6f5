"""The Serve page's custom-chip panel in a real browser: typing x2 into its HBM-bandwidth field puts set= in the URL,
the answer moves (a memory-bound decode gets faster), a banner names the number set; a bad field is shown against
the set input; Back restores the panel's fields with the answer."""

from __future__ import annotations

from .browsing import change, settle
from .conftest import screenshot

START = "/serve?model=llama-3.1-70b&hardware=hgx-h100-8&tp=8&batch=8&context=4096"


def _step_ms(page) -> float:
    text = page.inner_text("#step-time")  # '13.98 ms'
    value, unit = text.split()
    return float(value) * {"ms": 1.0, "s": 1e3, "us": 1e-3}[unit]


def test_custom_chip_panel(page, live_server):
    page.goto(live_server + START)
    settle(page)
    base = _step_ms(page)
    assert page.locator("#what-if").count() == 0
    page.click("#custom-chip summary")
    change(page, "input[data-set-field=hbm_bytes_per_s]", "x2")
    assert "set=hbm_bytes_per_s%3Dx2" in page.url
    assert page.input_value("input[name=set]") == "hbm_bytes_per_s=x2"
    banner = page.inner_text("#what-if")
    assert "hbm_bytes_per_s" in banner and "×2" in banner
    fast = _step_ms(page)
    assert fast < base  # memory-bound: twice the bandwidth, a shorter step
    screenshot(page, "custom-chip")
    fast_url = page.url

    change(page, "input[name=set]", "hbm_bytes_per_s=x2,hbm=3")
    err = page.locator("#results .error[data-field=set]")
    assert "hbm: not a hardware field" in err.inner_text()
    assert "invalid" in (page.get_attribute("input[name=set]", "class") or "")

    page.go_back()
    page.wait_for_function("(u) => location.href === u", arg=fast_url)
    settle(page)
    page.wait_for_function("() => document.querySelector('#what-if') !== null")
    assert page.input_value("input[data-set-field=hbm_bytes_per_s]") == "x2"
    assert _step_ms(page) == fast
