"""The Lecture page in Debian's chromium (issue 30): the lecture's argument as five steps, each with its plots
drawn and a paragraph of computed numbers; every claim's value with its unit; a claim opens its preset page and
Back returns to the argument. Its screenshot is docs/screenshots/lecture.png (TOKENOMY_SCREENSHOTS)."""

from __future__ import annotations

import re

import pytest

from .browsing import SHOTS, settle

pytestmark = pytest.mark.browser

BARE = re.compile(r"^[-+0-9.,e ]+$")  # a number without a unit


def test_the_argument_with_plots_units_and_links(page, live_server):
    page.goto(live_server + "/lecture")
    settle(page)
    steps = page.eval_on_selector_all("article.step", "a => a.map(s => s.id)")
    assert steps == ["step-batch", "step-latency", "step-context", "step-lifecycle", "step-cache"]
    drawn = page.eval_on_selector_all("article.step .plot", "ps => ps.map(p => !!p.querySelector('.gtitle'))")
    assert len(drawn) >= 5 and all(drawn)
    prose = page.inner_text("#step-batch .prose")
    assert "B* ≈ R × sparsity" in prose and "sequences" in prose and "per M tokens" in prose
    values = page.eval_on_selector_all("#claims td.computed, #claims td.lecture-value", "t => t.map(c => c.innerText)")
    assert len(values) == 2 * page.locator("#claims tbody tr").count()
    assert not [v for v in values if BARE.match(v)], [v for v in values if BARE.match(v)]
    l6 = page.inner_text("#claim-L6 td.computed")
    assert l6 == "14.4 ms"  # 288 GB / 20 TB/s (lecture.md L6)
    assert page.inner_text("#claim-L1 td.computed") == "2,400 sequences"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "lecture.png"), full_page=True)
    page.click("#step-batch a[href='#claim-L25']")
    assert page.url.endswith("#claim-L25")
    page.click("#claim-L27 a.claim-link")
    page.wait_for_selector("#step-time")
    assert "usd_per_chip_hour=2" in page.url and page.input_value("input[name=batch]") == "2000"
    page.go_back()
    page.wait_for_selector("article.step")
    settle(page)
    assert page.eval_on_selector_all("article.step .plot", "ps => ps.every(p => !!p.querySelector('.gtitle'))")
    page.go_forward()
    page.wait_for_selector("#step-time")
