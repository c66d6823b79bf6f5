"""What the browser tests do to a page, written once: change an input as a person does and wait for the new
answer (htmx pushes the URL before it swaps the results, so waiting for the URL alone can read the old ones)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# screenshots go to a temp dir unless TOKENOMY_SCREENSHOTS names one (docs/screenshots to refresh the committed
# ones): a test run must not rewrite tracked files
SHOTS = Path(os.environ.get("TOKENOMY_SCREENSHOTS") or tempfile.mkdtemp(prefix="tokenomy-shots-"))


# Playwright's waits end after 30 s by default: under load (8 agents on 2 cores) a page's answer took 70 s and failed
# a test that was right. No wait here is a measure of speed: the limit is one a loaded machine does not reach, kept
# only so that a page that never answers still ends the test
WAIT_MS = 600_000


def new_context(browser, **kw):
    """A browser context whose every wait and navigation has the WAIT_MS limit (viewport etc. in ``kw``)."""
    context = browser.new_context(**kw)
    context.set_default_timeout(WAIT_MS)
    context.set_default_navigation_timeout(WAIT_MS)
    return context


def mark(pg) -> None:
    """Remember the results on screen, so that settle waits for new ones."""
    pg.evaluate("() => { window.__old = document.querySelector('#results > *'); }")


def settle(pg) -> None:
    """The network idle, the marked results replaced, no htmx request in flight, every plot drawn with its title."""
    pg.wait_for_load_state("networkidle")
    pg.wait_for_function("() => !(window.__old && window.__old.isConnected) && !document.querySelector('.htmx-request')"
                         " && [...document.querySelectorAll('#results .plot')].every(p => p.querySelector('.gtitle'))")


def change(pg, selector: str, value: str) -> None:
    """Set one input (a select or a text field), then wait for the pushed URL and the new results."""
    old = pg.url
    mark(pg)
    if selector.startswith("select"):
        pg.select_option(selector, value)
    else:
        pg.fill(selector, value)
    pg.wait_for_function("(o) => location.href !== o", arg=old)
    settle(pg)
