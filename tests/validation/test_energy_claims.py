"""Vendors' throughput-per-MW claims (catalog/validation/energy_claims, validation/energy_claims.py): labelled as
claims, scored apart from the measured energy cases, each scored one predicted through the serving model."""

from __future__ import annotations

import numpy as np

from tokenomy.catalog import loader
from tokenomy.validation import energy_cases, energy_claims
from tokenomy.validation.report import energy_section


def test_claims_are_labelled_and_say_what_they_assume_or_why_unscored():
    files = loader.energy_claims()
    assert {f.source.vendor for f in files} >= {"NVIDIA", "AMD"}
    for f in files:
        assert f.source.kind == "claim" and f.source.url.startswith("https://")
        for c in f.claim:
            assert c.unscored or (c.assumed and c.interactivity and c.newer and c.older), c.id


def test_claims_stay_out_of_the_measured_cases_and_their_figure():
    claim_sources = {f.source.id for f in loader.energy_claims()}
    assert not claim_sources & {p.source for p in energy_cases.predicted()}
    assert all(f.source.kind == "measured" or f.source.id not in claim_sources for f in loader.energy_validation())


def test_scored_claims_predict_newer_systems_ahead_per_mw():
    scored = [s for s in energy_claims.scored() if not s.claim.unscored]
    assert len(scored) >= 3
    for s in scored:
        assert np.isfinite(s.predicted), s.claim.id
        assert s.predicted > 1.0, (s.claim.id, s.predicted)  # a Blackwell rack serves more per MW than Hopper
        assert s.predicted == s.newer_per_mw / s.older_per_mw
        assert s.at_interactivity in s.claim.interactivity


def test_the_report_puts_claims_in_their_own_table_after_the_measurements():
    lines = energy_section()
    text = "\n".join(lines)
    at = text.index("Vendor claims of throughput per MW (claims, not measurements; scored apart)")
    assert text.index("Held-out median |error|") < at
    for s in energy_claims.scored():
        assert s.claim.text in text[at:]
    assert "not scored" in text[at:]
