"""Engine versions (catalog/versions.release) order by their first three numbers padded with zeros, a string with no
digits is refused naming its field, and every version the catalog and its validation cases state reads as one;
"no version given" means the engine file's own, through one rule (EngineFile.version_run)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tokenomy.catalog import loader
from tokenomy.catalog.loader import ROOT, CatalogError, _validate
from tokenomy.catalog.schema import KvTierValidationFile
from tokenomy.catalog.schema.engine_host import EngineRuntime
from tokenomy.catalog.versions import release
from tokenomy.serving.engine_profile import profile_of
from tokenomy.validation import load


def test_a_version_pads_with_zeros_and_orders_by_its_release():
    assert release("1") == release("1.0") == release("1.0.0") == (1, 0, 0)
    assert release("0.10") == release("0.10.0") > release("0.9.9")
    assert release("1.1.0rc2.post2") == (1, 1, 0) and release("0.5.8.post1") == (0, 5, 8)
    assert release("v0.5.12") > release("0.5.9")


@pytest.mark.parametrize("bad", ["not stated", "", "latest"])
def test_a_version_without_digits_is_a_value_error_naming_the_field(bad):
    with pytest.raises(ValueError, match="^engine_version: .* is not a version"):
        release(bad, "engine_version")
    with pytest.raises(ValidationError, match="since: .* is not a version"):
        EngineRuntime(name="x", since=bad, sequence_s=1e-5, low_s=1e-6, high_s=2e-5, source="test", as_of="2025-01-01")


def test_every_version_in_the_catalog_and_its_cases_reads_as_one():
    for name in loader.engine_names():
        f = loader.engine_file(name)
        stated = [f.version, f.host.overlap_since, *(r.since for r in f.host.runtimes),
                  f.prefill_launch.since if f.prefill_launch else None, loader.engine_flags(name).version]
        for v in filter(None, stated):
            assert len(release(v)) == 3, (name, v)
    runs = [c.case.engine_version for c in load.cases() if hasattr(c.case, "engine_version")]
    runs += [f.source.engine_version for f in loader.kv_tier_validation()]
    assert len(runs) > 1000
    for v in filter(None, runs):  # '' : not stated, the engine file's version
        assert len(release(v)) == 3, v


def test_a_kv_tier_source_with_an_unreadable_version_is_refused(tmp_path):
    p = tmp_path / "bad.toml"
    text = (ROOT / "validation" / "kv_tiering" / "vllm-offloading-connector.toml").read_text()
    p.write_text(text.replace('engine_version = "0.11.0"', 'engine_version = "not stated"', 1))
    with pytest.raises(CatalogError, match="engine_version: 'not stated' is not a version"):
        _validate(p, KvTierValidationFile)


def test_no_version_given_runs_the_files_own():
    """None and '' run the file's version, and a version written short ('1') is its release padded ('1.0'): before,
    TensorRT-LLM "1" ordered below the PyTorch flow's since = "1.0" and ran the C++ executor without eager launches."""
    for name in loader.engine_names():
        f = loader.engine_file(name)
        assert f.version_run(None) == f.version_run("") == f.version
        assert f.terms_at(None) == f.terms_at("") == f.terms_at(f.version) == loader.engine_terms(name)
        assert profile_of(f, 8) == profile_of(f, 8, version="") == profile_of(f, 8, version=f.version)
    trt = loader.engine_file("trtllm")
    assert trt.terms_at("1") == trt.terms_at("1.0") and trt.runtime_at("1").name == "PyTorch flow (PyExecutor)"
    assert trt.eager_prefill_at("1") == trt.eager_prefill_at("1.0") > 0
