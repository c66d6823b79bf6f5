"""tk.what_if / tokenomy hardware --what-if: one field swept through serve on a held layout. Monotone where the
physics is: more FLOP/s or link bandwidth never slows a step; on the roofline, more HBM bandwidth never does
either; the price moves dollars only. R at x1 is the datasheet ratio (lecture §2.2: "~300"; H100 SXM bf16
989.4 TFLOP/s / 3.35 TB/s = 295, nvidia.com/en-us/data-center/h100)."""

from __future__ import annotations

import numpy as np
import pytest

import tokenomy as tk
from tokenomy.answers.hardware_sweep import factors_of

MODEL, HW = "llama-3.1-70b", "hgx-h100-8"


def _sweep(field, factors="x0.5..x4", **kw):
    return tk.what_if(MODEL, HW, field=field, factors=factors, concurrency=64, **kw)


def _col(res, key):
    return np.array([r[key] for r in res.rows()])


def test_the_range_grammar():
    assert factors_of("x0.5..x4") == pytest.approx([0.5, 2**-0.5, 1, 2**0.5, 2, 2**1.5, 4], rel=1e-5)
    assert factors_of("x2,x0.5") == [0.5, 2.0]
    assert 1.0 in factors_of("x0.3..x3")
    for bad, says in (("x4..x0.5", "must rise"), ("2..4", "is not a multiplier"), ("x0..x2", "is not a multiplier"),
                      ("x1,,xq", "'xq' is not a multiplier")):
        with pytest.raises(ValueError, match=says):
            factors_of(bad)


@pytest.mark.parametrize("field", ["peak_flops_per_s", "scale_up_bytes_per_s"])
def test_more_flops_or_link_bandwidth_never_slows_serving(field):
    res = _sweep(field)
    tpot, tput, usd = _col(res, "tpot_s"), _col(res, "tokens_per_s_per_chip"), _col(res, "usd_per_mtok_output")
    assert np.all(np.diff(tpot) <= 1e-12) and tpot[0] > tpot[-1]
    assert np.all(np.diff(tput) >= -1e-9) and np.all(np.diff(usd) <= 1e-12)
    assert len({r["plan"] for r in res.rows()}) == 1  # the layout is held: only the field moves


def test_on_the_roofline_hbm_bandwidth_lowers_tpot_at_every_step():
    tpot = _col(_sweep("hbm_bytes_per_s", efficiency="roofline"), "tpot_s")
    assert np.all(np.diff(tpot) < 0)


def test_price_moves_dollars_only():
    res = _sweep("usd_per_chip_hour", "x0.5,x1,x2")
    tpot, usd = _col(res, "tpot_s"), _col(res, "usd_per_mtok_output")
    assert np.ptp(tpot) == 0
    assert usd == pytest.approx(usd[1] * np.array([0.5, 1, 2]), rel=1e-12)


def test_r_is_the_datasheet_ratio_and_moves_inversely_with_bandwidth():
    res = _sweep("hbm_bytes_per_s", "x0.5,x1,x2")
    r = _col(res, "flops_per_hbm_byte")
    assert r[1] == pytest.approx(989.4e12 / 3.35e12, rel=1e-9)  # 295: the lecture's "~300"
    assert r == pytest.approx(r[1] / np.array([0.5, 1, 2]), rel=1e-12)
    assert _col(res, "balance_batch") == pytest.approx(r, rel=1e-12)  # dense: N_total = N_active
    assert "what-if hbm_bytes_per_s x0.5..x2" in res.title


def test_bad_sweeps_name_the_field():
    with pytest.raises(ValueError, match="^field: 'hbm' is not a hardware field"):
        tk.what_if(MODEL, HW, field="hbm")
    with pytest.raises(ValueError, match="^factors:"):
        tk.what_if(MODEL, HW, field="hbm_bytes_per_s", factors="x0..x2")


def test_the_plot_draws_the_rows_it_is_given():
    from tokenomy.plots.what_if import PANELS, what_if_figure

    res = _sweep("hbm_bytes_per_s", "x0.5,x1,x2")
    fig = what_if_figure(res.rows(), res.title)
    assert [t["x"] for t in fig["data"]] == [[0.5, 1.0, 2.0]] * len(PANELS)
    assert [t["y"] for t in fig["data"]] == [list(_col(res, key)) for key, _ in PANELS]
    assert fig["layout"]["xaxis"]["type"] == "log"
