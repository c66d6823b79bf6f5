"""Error bands: each regime's percentiles of the leave-one-source-out errors, coarsened where a cell is thin, and
no band where no validated case is near (validation/bands.py, answers/error_bars.py)."""

import numpy as np
import pytest

from tokenomy.answers import error_bars
from tokenomy.validation import bands as vb


def _rows(n, errors, **kw):
    base = {"metric": "tpot_s", "chip_family": "hopper", "engine": "trtllm", "moe": False, "mode": "agg",
            "batch": 32.0, "length": 1500.0}
    return [{**base, **kw, "calibrated_error": float(e)} for e in np.resize(errors, n)]


def _q(**kw):
    q = {"metric": "tpot_s", "chip_family": "hopper", "engine": "trtllm", "moe": "dense", "mode": "agg",
         "batch_band": "9-64", "length_band": "<=2k"}
    return {**q, **kw}


def test_a_full_cell_gives_its_own_percentiles():
    errs = np.linspace(-0.2, 0.3, 11)
    b = vb.lookup(vb.compute(_rows(11, errs)), _q()).band
    assert b.n == 11 and b.key["length_band"] == "<=2k" and b.key["engine"] == "trtllm"
    assert b.p10 == pytest.approx(np.percentile(errs, 10)) and b.p90 == pytest.approx(np.percentile(errs, 90))


def test_a_thin_cell_is_coarsened_first_over_length_then_engine():
    rows = _rows(6, [0.1], length=1500.0) + _rows(6, [0.3], length=5000.0)  # 6 + 6 < 10: no length band
    found = vb.lookup(vb.compute(rows), _q())
    assert found.band.n == 12 and found.band.key["length_band"] == vb.ANY and found.band.key["engine"] == "trtllm"
    rows = _rows(5, [0.1]) + _rows(6, [0.2], engine="vllm")  # only engines pooled reach 10
    found = vb.lookup(vb.compute(rows), _q())
    assert found.band.n == 11 and found.band.key["engine"] == vb.ANY and found.band.key["moe"] == "dense"


def test_a_query_without_an_engine_uses_a_band_that_pools_engines():
    table = vb.compute(_rows(12, [0.1, -0.1]))
    found = vb.lookup(table, _q(engine=None))
    assert found.band is not None and found.band.key["engine"] == vb.ANY


def test_no_band_for_a_chip_family_or_batch_never_measured():
    table = vb.compute(_rows(20, [0.1, -0.05]))
    far = vb.lookup(table, _q(chip_family="cdna4"))
    assert far.band is None and far.note.startswith("no validated case near this configuration") and "cdna4" in far.note
    big = vb.lookup(table, _q(batch_band="513+"))
    assert big.band is None and "batch 513+" in big.note


def test_the_table_round_trips_through_its_toml(tmp_path):
    import tomllib

    table = vb.compute(_rows(12, np.linspace(-0.1, 0.2, 12)) + _rows(10, [0.05], metric="ttft_s", batch=600.0))
    back = vb.from_table(tomllib.loads(vb.to_toml(table, 22, 2, "2026-12-05"))["band"])
    assert back == table


def test_a_row_gets_the_measured_range_its_regime_predicts(monkeypatch):
    """A time measures v/(1 + e): the band's p10 comes from the error's p90; a throughput measures v·(1 + e)."""
    table = tuple(vb.compute(_rows(10, np.linspace(-0.1, 0.2, 10)) + _rows(10, np.linspace(-0.3, 0.0, 10),
                                                                           metric="throughput_per_chip")))
    monkeypatch.setattr(error_bars, "_bands", lambda: table)
    error_bars._find.cache_clear()
    reg = error_bars.Regime("hopper", "trtllm", False, "agg", (("tpot_s", "tpot_s"),
                                                              ("tokens_per_s_per_chip", "throughput_per_chip")))
    rows = error_bars.attach([{"tpot_s": 0.02, "tokens_per_s_per_chip": 1000.0, "running_batch": 30.0}], reg,
                             "running_batch", 1200.0)
    e = np.linspace(-0.1, 0.2, 10)
    assert rows[0]["tpot_s_p10"] == pytest.approx(0.02 / (1 + np.percentile(e, 90)))
    assert rows[0]["tpot_s_p90"] == pytest.approx(0.02 / (1 + np.percentile(e, 10)))
    assert rows[0]["tokens_per_s_per_chip_p10"] == pytest.approx(1000 * (1 + np.percentile(np.linspace(-0.3, 0, 10), 10)))
    assert "chip_family=hopper" in rows[0]["error_band"] and rows[0]["error_band_note"] is None
    far = error_bars.attach([{"tpot_s": 0.02, "tokens_per_s_per_chip": 1.0, "running_batch": 2000.0}], reg,
                            "running_batch", 1200.0)[0]
    assert far["tpot_s_p10"] is None and far["error_band"] is None
    assert far["error_band_note"].startswith("no validated case near this configuration")
    error_bars._find.cache_clear()


def test_without_a_table_no_band_and_the_note_says_so():
    found = vb.lookup([], _q())
    assert found.band is None and "error_bands.toml" in found.note
