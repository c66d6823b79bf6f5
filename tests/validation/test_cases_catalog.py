"""The validation catalog: every case loads, resolves to catalog models and chips, cites a source, and the split
is declared and deterministic."""

import collections

import pytest

from tokenomy.catalog import loader
from tokenomy.validation import load
from tokenomy.validation.schema import ServingCase

CASES = load.cases()


def test_ids_unique_and_every_case_resolves():
    assert len({c.id for c in CASES}) == len(CASES)
    for c in CASES:
        loader.model(c.case.model)
        loader.hardware(c.case.hardware)


def test_size_of_the_validation_set():
    serving = [c for c in CASES if c.kind == "serving"]
    chips = {c.case.hardware for c in serving}
    moe = {c.case.model for c in serving if loader.model(c.case.model).layers[-1].mlp.kind == "moe"}
    dense = {c.case.model for c in serving} - moe
    assert len(serving) >= 150 and len(chips) >= 4 and moe and dense
    assert sum(c.kind == "training" for c in CASES) >= 10


def test_every_source_cites_an_address_and_a_date():
    for f in load.validation_files():
        assert f.source.url.startswith("https://") and f.source.as_of[:2] in ("20",)
        assert f.source.framework and (f.serving or f.training)


def test_split_is_the_declared_hash_rule():
    rule = load.split_rule()
    for c in CASES[:50]:
        assert c.split == load.split_of(c.id, rule)
    share = collections.Counter(c.split for c in CASES)["train"] / len(CASES)
    assert 0.45 < share < 0.75  # the rule keeps about 60% for fitting


def test_fitted_terms_never_saw_a_held_out_case():
    held_out = {c.id for c in CASES if c.split == "test"}
    for chip in {c.case.hardware for c in CASES} | {"pooled"}:
        f = load.efficiency_file(chip)
        assert f is not None and not (set(f.fitted_on) & held_out)
        assert f.n_fitted == len(f.fitted_on)


def test_scenario_needs_its_load_setting():
    with pytest.raises(ValueError, match="needs 'concurrency'"):
        ServingCase(id="x", model="llama-3.1-8b", hardware="h100-sxm", chips=1, tp=1, weight_dtype="fp8",
                    kv_dtype="fp8", scenario="concurrency", metric="tpot_s", isl=1, osl=2, value=1.0, published="")
