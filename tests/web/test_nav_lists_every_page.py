"""The navigation bar (web/pages.NAV, hand-ordered for people) lists every page the router serves and no page it
does not: a new page missing from the bar, or a bar entry left after its page moved, fails here."""

from __future__ import annotations

from fastapi.responses import HTMLResponse

from tokenomy.web.pages import NAV, router


def test_nav_lists_exactly_the_html_pages():
    pages = {r.path for r in router.routes if r.response_class is HTMLResponse}
    listed = [path for path, _ in NAV]
    assert len(listed) == len(set(listed)), "a page is listed twice"
    assert set(listed) == pages, (sorted(pages - set(listed)), sorted(set(listed) - pages))
    assert all(title.strip() for _, title in NAV)
