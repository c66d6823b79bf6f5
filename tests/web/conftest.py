"""Fixtures for the web tests: an in-process TestClient, a live uvicorn server on a free loopback port, and
Debian's chromium driven by Playwright (never ``playwright install``; a missing chromium is a failure)."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.fixture(scope="session")
def app():
    from tokenomy.web.app import create_app

    return create_app(allowed_hosts=("testserver",))  # the TestClient's Host; the live server is 127.0.0.1


@pytest.fixture(scope="session")
def client(app):
    from fastapi.testclient import TestClient

    with TestClient(app) as c:
        yield c


@pytest.fixture(autouse=True)
def fresh_views_for_swapped_bands(request):
    """A test that swaps the error bands (hopper_bands) neither reads pages kept under the catalog's bands nor leaves
    its own in the app's view cache (web/view_cache.py: a page is keyed by its path and query alone)."""
    if "hopper_bands" not in request.fixturenames:
        yield
        return
    views = request.getfixturevalue("app").state.views
    views.clear()
    yield
    views.clear()


@pytest.fixture(scope="session")
def live_server(app):
    """uvicorn in a thread on a loopback socket bound here and handed over still bound (a port chosen, released
    and bound again could be taken in between by another worker of the parallel run); stopped after the session."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:  # no deadline: a loaded machine starts it late, a failed start ends the thread
        if not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()


@pytest.fixture(scope="session")
def browser():
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: `make test` installs Debian's chromium (apt-get)"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def browser_context(browser):
    """One browser context for the session's pages, as one person's browser: its HTTP cache keeps plotly.min.js
    (4.8 MB, Cache-Control max-age 3600) and the app's scripts from one test to the next instead of fetching them
    again for every page. The app keeps no state in the browser (no cookie, no storage: htmx's history cache is
    off), so a test's page starts as a fresh one would; permissions a test grants are cleared after it."""
    from .browsing import new_context

    context = new_context(browser, viewport={"width": 1400, "height": 1000})
    yield context
    context.close()


@pytest.fixture
def page(browser_context, live_server):
    """A new page (tab) of its own; JavaScript errors and failed requests fail the test."""
    pg = browser_context.new_page()
    problems: list[str] = []
    pg.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    # htmx aborts a superseded request (hx-sync replace): that is not a failure
    pg.on("requestfailed", lambda r: None if "ABORTED" in (r.failure or "") else problems.append(f"failed: {r.url}"))
    pg.on("response", lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 500 else None)
    pg.problems = problems
    yield pg
    pg.close()
    browser_context.clear_permissions()
    assert not problems, problems


def screenshot(pg, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"web-{name}.png"
    pg.screenshot(path=str(path), full_page=True)
    return path
