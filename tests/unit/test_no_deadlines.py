"""No test depends on wall-clock speed (issue 14: `make test` failed once when a hypothesis test hit its default
200 ms deadline on a loaded machine). tests/conftest.py loads a deadline-free profile; this checks that it is the
profile in force, in whichever process runs the test (each pytest-xdist worker loads conftest.py itself), and that no
test sets a deadline of its own."""

from __future__ import annotations

import ast
import os
from pathlib import Path

from hypothesis import settings

TESTS = Path(__file__).resolve().parents[1]


def test_the_loaded_profile_has_no_deadline():
    assert settings.default.deadline is None
    assert settings().deadline is None  # what @settings(max_examples=...) inherits
    if os.environ.get("PYTEST_XDIST_WORKER"):  # under -n: this worker loaded it too
        assert settings.default.deadline is None


def _deadlines(path: Path) -> list[str]:
    """'file:line' of every settings(..., deadline=X) call with X other than None."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in (
                "settings", "register_profile"):
            for kw in node.keywords:
                if kw.arg == "deadline" and not (isinstance(kw.value, ast.Constant) and kw.value.value is None):
                    out.append(f"{path.relative_to(TESTS)}:{node.lineno}")
    return out


def test_no_test_sets_a_deadline():
    files = [p for p in TESTS.rglob("*.py") if "hypothesis" in p.read_text()]
    assert len(files) > 5  # the scan sees the hypothesis tests
    assert [hit for p in files for hit in _deadlines(p)] == []


def test_every_browser_context_waits_without_a_speed_limit():
    """Playwright's waits end after 30 s unless told otherwise, which a loaded machine reached (a kv-tiers page took
    70 s): every browser test opens its context through tests/web/browsing.new_context, whose limit is far beyond."""
    web = TESTS / "web"
    direct = [p.name for p in web.glob("*.py") if p.name != "browsing.py" and ".new_context(" in
              p.read_text().replace("browsing.new_context(", "").replace(" new_context(browser", "")]
    assert direct == []
    assert "set_default_timeout(WAIT_MS)" in (web / "browsing.py").read_text()
