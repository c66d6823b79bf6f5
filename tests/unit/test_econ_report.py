"""Figure builders (plain plotly dicts, no plotly import) and the HTML report."""

import json
import subprocess
import sys

import numpy as np

from tokenomy.catalog import loader
from tokenomy.econ import batch as eb
from tokenomy.econ import context as ec
from tokenomy.econ import kv_tiers as kt
from tokenomy.econ import latency as el
from tokenomy.answers.economics import deployment_request, serving
from tokenomy.plots import serving as ps


def _sv():
    return serving(deployment_request("llama-3.1-8b", "h100-sxm", None, {}), [1, 8, 64], [2048])


def test_builders_return_json_figure_dicts_without_plotly():
    sv = _sv()
    t = sv.terms(np.array([1, 8, 64, 1e5]), 2048)
    rows = eb.batch_rows(t)
    figs = [ps.latency_vs_batch(rows, marks={"balance": 300.0, "none": None}), ps.cost_vs_batch(rows),
            ps.pareto(el.schedule_rows(t, 1)), ps.mfu_vs_context(ec.context_rows(sv, 8, [1024, 4096]),
                                                                 summary={"goldilocks_lo": 10, "goldilocks_hi": 1e9}),
            ps.tier_costs_vs_hold(kt.cost_curves(1e9, kt.tiers_from_catalog(), 1e-3, [1, 10, 100]))]
    for f in figs:
        json.dumps(f)
        assert set(f) == {"data", "layout"} and f["data"]
    # the non-fitting batch is left out of the latency and cost curves
    assert figs[0]["data"][0]["x"] == [1, 8, 64]
    assert len(figs[0]["layout"]["shapes"]) == 1
    assert figs[0]["layout"]["annotations"][0]["x"] == np.log10(300.0)  # plotly: annotations in log10 units
    assert figs[3]["layout"]["shapes"][0]["x0"] == 1024  # the zone is clipped to the plotted contexts


def test_cli_and_builders_do_not_import_plotly():
    code = ("import sys, tokenomy.cli.serving, tokenomy.cli.serving_econ, tokenomy.plots.serving, tokenomy.report; "
            "assert 'plotly' not in sys.modules, 'plotly imported'")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_report_html(tmp_path):
    from tokenomy.report import write_report

    p = write_report(tmp_path / "sub" / "r.html")
    text = p.read_text()
    assert "28/28 claims" in text and "Closing note" in text and "gb200" in text
    assert "Plotly.newPlot" in text and "tiers" in text
