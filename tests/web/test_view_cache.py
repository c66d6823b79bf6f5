"""A page's results are computed once per path and query (web/view_cache.py): the htmx fragment, the whole page and
Back to the same state reuse them; another query is another answer; a refusal is not kept."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from tokenomy.web.app import create_app
from tokenomy.web.view_cache import ViewCache

HX = {"HX-Request": "true"}
RESTORE = {"HX-Request": "true", "HX-History-Restore-Request": "true"}  # Back: htmx asks the server for the page


def step_of(html: str) -> str:
    return re.search(r'data-step-s="([^"]+)"', html).group(1)


def test_one_state_is_computed_once_and_another_state_is_answered_anew():
    app = create_app(allowed_hosts=("testserver",))
    with TestClient(app) as c:
        first = c.get("/serve?batch=8")
        assert first.status_code == 200 and len(app.state.views) == 1
        fragment, back = c.get("/serve?batch=8", headers=HX), c.get("/serve?batch=8", headers=RESTORE)
        assert len(app.state.views) == 1  # the same state: nothing computed again
        assert "<html" not in fragment.text and "<html" in back.text
        assert step_of(fragment.text) == step_of(back.text) == step_of(first.text)
        other = c.get("/serve?batch=16")
        assert len(app.state.views) == 2 and step_of(other.text) != step_of(first.text)
        assert c.get("/serve?batch=-3").status_code == 422 and len(app.state.views) == 2  # a refusal is not kept
        assert c.get("/serve?batch=-3").status_code == 422


def test_the_least_recently_asked_goes_first_and_callers_get_copies():
    cache, calls = ViewCache(size=2), []

    def compute(key):
        def run():
            calls.append(key)
            return {"key": key}
        return run

    for key in ("a", "b", "a", "c"):  # c pushes out b (a was asked after b)
        assert cache.get(key, compute(key)) == {"key": key}
    assert calls == ["a", "b", "c"] and len(cache) == 2
    cache.get("a", compute("a"))
    cache.get("b", compute("b"))
    assert calls == ["a", "b", "c", "b"]
    view = cache.get("b", compute("b"))
    view["key"] = "changed"  # what a caller does to its copy is not kept
    assert cache.get("b", compute("b")) == {"key": "b"}

    def refuse():
        calls.append("refused")
        raise ValueError("batch: must be >= 1")

    for _ in range(2):
        with pytest.raises(ValueError):
            cache.get("bad", refuse)
    assert calls[-2:] == ["refused", "refused"]


def test_clear_forgets_every_view():
    cache, calls = ViewCache(size=4), []
    for k in ("a", "b"):
        cache.get(k, lambda k=k: calls.append(k) or {"v": k})
    cache.clear()
    assert len(cache) == 0
    assert cache.get("a", lambda: calls.append("a") or {"v": "a2"}) == {"v": "a2"} and calls == ["a", "b", "a"]
