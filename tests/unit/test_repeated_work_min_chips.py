"""Work serve's layout choice (and min_chips, which asks it once per chip count) no longer repeats (issue 27 item 9):
the exact layouts over the chips are enumerated once per question, for the ranking and the decode search alike."""

from __future__ import annotations

from tokenomy.answers import serve_layout
from tokenomy.answers.workloads import serve
from tokenomy.parallel import search as ps


def test_serve_enumerates_its_exact_layouts_once(monkeypatch):
    enumerated, searched = [], []
    layouts, search = ps.candidate_layouts, serve_layout.search

    def counted(shape, chips, *a, **kw):
        enumerated.append(chips)
        return layouts(shape, chips, *a, **kw)

    def counted_search(dep, **kw):
        searched.append(kw["layouts"])
        return search(dep, **kw)

    monkeypatch.setattr(ps, "candidate_layouts", counted)
    monkeypatch.setattr(serve_layout, "candidate_layouts", counted, raising=False)  # where imported by name
    monkeypatch.setattr(serve_layout, "search", counted_search)
    serve("qwen3-30b-a3b", "hgx-h100-8", concurrency=[16], chips=8, isl=2048, osl=512)
    assert enumerated == [8]
    assert len(searched) == 1 and searched[0] is not None
