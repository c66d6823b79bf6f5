"""Energy on the Workload page in a real browser (Chromium through Playwright): the table's energy and TCO columns
and the tokens/s per all-in MW vs interactivity figure, drawn with the API's numbers, for aggregated and for
disaggregated serving (each pool's power from its own terms: answers/energy_cols.disagg_energy)."""

from __future__ import annotations

import pytest

from tokenomy.headers import header

from .browsing import settle

# the energy columns' headers, from the one field -> header table (tokenomy.headers)
HEADERS = tuple(header(f) for f in ("j_per_output_token", "tokens_per_s_per_mw", "tco_usd_per_mtok_output"))


def _drawn(page) -> dict:
    """The energy figure as Plotly drew it: its title and its first trace's points."""
    return page.evaluate("""() => { const gd = [...document.querySelectorAll('#results .plot')]
        .find(p => (p.querySelector('.gtitle') || {}).textContent.startsWith('Tokens/s per all-in MW'));
        return gd ? {x: [...gd.data[0].x], y: [...gd.data[0].y], n: gd.querySelectorAll('.scatterlayer .point').length}
                  : null; }""")


@pytest.mark.parametrize("query", [
    "model=llama-3.1-8b&hardware=h100-sxm&chips=1&concurrency=1,16,64&isl=1024&osl=512",
    "model=llama-3.1-8b&hardware=hgx-h100-8&mode=disagg&prefill_chips=1&decode_chips=1&concurrency=1,16,64"
    "&isl=1024&osl=512"])
def test_energy_columns_and_the_per_mw_figure_show_the_apis_numbers(page, live_server, query):
    page.goto(f"{live_server}/workload?{query}")
    settle(page)
    header = page.inner_text("#results table thead")
    for h in HEADERS:
        assert h in header, (h, header)
    drawn = _drawn(page)
    assert drawn is not None and drawn["n"] >= 3  # one marker per load point, drawn
    api = page.request.get(live_server + page.get_attribute("#api-link", "href")).json()
    assert drawn["x"] == pytest.approx([r["interactivity"] for r in api])
    assert drawn["y"] == pytest.approx([r["tokens_per_s_per_mw"] for r in api])
    assert all(r["j_per_output_token"] > 0 and r["mode"] == ("disagg" if "disagg" in query else "agg") for r in api)
    # more users, more tokens per MW: the figure's points rise with the load
    assert drawn["y"][0] < drawn["y"][-1]
