"""One table names the serving terms a fit writes and the engine field each sets (validation/serving_terms.py):
the fit's per-case sets (Theta), the file schema and the engine's Efficiency must all agree with it."""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from tokenomy.catalog import loader
from tokenomy.core.efficiency import Efficiency
from tokenomy.validation import load
from tokenomy.validation.terms_schema import EfficiencyTerms
from tokenomy.validation.serving_terms import ENGINE_NAME, SERVING_FIELDS
from tokenomy.validation.theta import Theta, gather


def test_theta_the_file_and_the_engine_name_the_same_terms():
    assert sorted(f.name for f in fields(Theta)) == sorted(SERVING_FIELDS)
    assert set(SERVING_FIELDS) <= set(EfficiencyTerms.model_fields)
    engine_fields = {f.name for f in fields(Efficiency)}
    assert {ENGINE_NAME.get(f, f) for f in SERVING_FIELDS} <= engine_fields
    assert set(ENGINE_NAME) <= set(SERVING_FIELDS)


def test_a_chips_calibrated_set_is_what_the_fit_timed_it_under():
    """The loader's set for a chip (what users get) and the fit's set gathered from the same file (what validation
    timed) carry every serving term at the same value, the file's None read as the engine reads it."""
    chip = "h100-sxm"
    calibrated = load.efficiency_set(chip)
    fitted = gather(np.array([chip]), {chip: load.efficiency_for(chip).terms}).efficiency(0)
    for f in SERVING_FIELDS:
        name = ENGINE_NAME.get(f, f)
        mine, theirs = getattr(fitted, name), getattr(calibrated, name)
        if name == "kv_hbm_fraction":
            theirs = calibrated.kv_fraction
        elif name == "nccl_link_fraction" and theirs is None:
            theirs = calibrated.link_fraction
        assert float(mine) == float(theirs), f
    assert chip in loader.chip_names()
