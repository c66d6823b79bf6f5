"""D7 in a real browser (Debian's chromium): on the Workload page a number typed as abc, inf or 1e400, or a filled
field emptied, shows an error naming the field instead of the default's answer; 4k reads as on the CLI."""

from __future__ import annotations

import re

from .browsing import settle

URL = "/workload?model=llama-3.1-8b&hardware=h100-sxm&concurrency=4"


def typed(page, field: str, value: str) -> None:
    page.fill(f"input[name={field}]", value)
    page.dispatch_event(f"input[name={field}]", "change")


def test_workload_page_names_the_field_it_cannot_read(page, live_server):
    page.goto(live_server + URL)
    settle(page)
    for value in ("abc", "inf", "1e400", ""):
        typed(page, "isl", value)
        page.wait_for_selector("#results .error[data-field=isl]")
        text = page.inner_text("#results .error")
        assert "isl" in text and ("empty" if value == "" else value in text or "not a number" in text), text
        assert "invalid" in page.get_attribute("input[name=isl]", "class")
        assert page.query_selector("#results table") is None  # no old answer left beside the error
    typed(page, "isl", "4k")
    page.wait_for_function("() => !document.querySelector('#results .error') && document.querySelector('#results "
                           "table')")
    settle(page)
    assert re.search(r"isl=4k(&|$)", page.url) and "4096" in page.inner_text("#results").replace(",", "")
