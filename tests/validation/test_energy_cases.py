"""Energy validation (validation/energy_cases.py): J per output token against published measurements, held out by
source; the catalog's fitted HBM energy is what its fit on the named sources gives."""

from __future__ import annotations

import numpy as np
import pytest

from tokenomy.catalog import loader
from tokenomy.validation import energy_cases as ec


def test_every_source_cites_where_and_how():
    for f in loader.energy_validation():
        assert f.source.url.startswith("https://") and len(f.source.how) > 40 and f.case


def test_catalog_hbm_energy_is_its_fit_on_the_named_sources():
    split = loader.facility().split
    cases = [p for p in ec.predicted() if p.source in split.fitted_on]
    assert cases and all(p.case.power_w for p in cases)
    assert split.hbm_j_per_byte == pytest.approx(ec.fit_power(cases), rel=0.02)
    lo, hi = split.hbm_range
    assert lo < split.hbm_j_per_byte < hi


def test_power_model_reproduces_measured_board_power():
    cases = list(ec.predicted())
    err = ec.power_errors(cases, loader.facility().split.hbm_j_per_byte)
    assert err.size >= 20 and np.median(np.abs(err)) < 0.10


def test_held_out_by_source_median_error_within_20_percent():
    parts = ec.held_out()
    assert len(parts) >= 3
    for h in parts:  # a source never predicts itself
        assert all(p.source == h.source for p in h.cases)
    assert ec.median_abs_error(parts) <= 0.20
