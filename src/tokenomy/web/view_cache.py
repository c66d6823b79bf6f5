"""The results a page computed, kept per app for the next ask of the same state.

One state of a page is asked for again and again: htmx asks for the results fragment, the link opens the whole
page, and Back/Forward restore history from the server (``historyCacheSize`` 0 in templates/base.html: every Back
is a request). A page's results are a function of its path and query alone (the catalog is read once; an
uploaded config travels in the query as its token; the simulators are seeded), so the view a query computed
answers the same query again: the KV tiers page's default (256 sessions over four DRAM sizes) takes ~10 CPU-s, a
Back to it none. A refusal (ValueError) is not kept: it is cheap and raised again.

Whatever changes what a page's compute reads besides its query (a test swapping the catalog's error bands) must
``clear()`` the cache. The least recently asked state goes first past ``MAX_VIEWS`` (a serve page's view, figures included, is ~0.2 MB).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Hashable

MAX_VIEWS = 64


class ViewCache:
    """Views by key (the page's path and query items), least recently used out first past ``size``."""

    def __init__(self, size: int = MAX_VIEWS):
        self.size = size
        self._views: OrderedDict[Hashable, dict] = OrderedDict()
        self._lock = threading.Lock()  # sync routes run in the server's thread pool

    def get(self, key: Hashable, compute: Callable[[], dict]) -> dict:
        """The view kept for ``key``, else ``compute()``'s, kept; a shallow copy, so that no caller replaces a field of
        the one kept (its rows and figures are shared: nothing downstream changes them)."""
        with self._lock:
            view = self._views.get(key)
            if view is not None:
                self._views.move_to_end(key)
                return dict(view)
        view = compute()
        with self._lock:
            self._views[key] = view
            while len(self._views) > self.size:
                self._views.popitem(last=False)
        return dict(view)

    def clear(self) -> None:
        """Forget every view: what a compute reads changed (a test that swaps the error bands, say)."""
        with self._lock:
            self._views.clear()

    def __len__(self) -> int:
        return len(self._views)
