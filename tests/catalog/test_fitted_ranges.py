"""Every fitted serving term sits inside the plausible range its public anchor allows (catalog/efficiency/ranges.toml):
a term that leaves it has been made to stand in for another mechanism. And every term the fit moves has a range."""

import tomllib
from pathlib import Path

import pytest

from tokenomy.catalog import loader
from tokenomy.validation import anchors
from tokenomy.validation.theta import SERVING_FIELDS
from tokenomy.validation.terms_schema import EfficiencyFile

EFF = loader.ROOT / "efficiency"
RANGES = tomllib.loads((EFF / "ranges.toml").read_text())
FILES = sorted(p for p in EFF.glob("*.toml") if "terms" in tomllib.loads(p.read_text()))


def test_every_fitted_term_has_a_range_with_an_anchor():
    fitted = set(SERVING_FIELDS) - set(anchors.ANCHORED_FIELDS)
    assert fitted <= set(RANGES), f"no range for {sorted(fitted - set(RANGES))}"
    for name, r in RANGES.items():
        assert r["low"] < r["high"] and len(r["anchor"]) > 20 and len(r["source"]) > 10, name


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_fitted_terms_stay_in_their_ranges(path):
    terms = EfficiencyFile(**tomllib.loads(path.read_text())).terms
    out = {name: getattr(terms, name) for name, r in RANGES.items()
           if getattr(terms, name) is not None and not r["low"] <= getattr(terms, name) <= r["high"]}
    assert not out, f"{path.name}: outside catalog/efficiency/ranges.toml: {out}"
