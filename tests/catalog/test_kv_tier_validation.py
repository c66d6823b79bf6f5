"""The published tiered-KV and prefix-routing measurements (catalog/validation/kv_tiering, issue 28 item 7): every file
validates, names catalog models, hardware and policies, and a malformed case is refused naming its field."""

import pytest

from tokenomy.catalog import loader
from tokenomy.catalog.loader import ROOT, CatalogError, _validate
from tokenomy.catalog.schema import KvTierValidationFile

DIR = ROOT / "validation" / "kv_tiering"


def test_enough_cases_from_enough_sources():
    files = loader.kv_tier_validation()
    assert len(files) >= 4 and sum(len(f.case) for f in files) >= 10
    metrics = {c.metric for f in files for c in f.case}
    assert {"ttft_mean_s", "hit_rate"} <= metrics
    # tiered caching and routing are both covered: a case with an offload policy, a case with a routing policy
    assert any(c.policy not in ("hbm", "recompute") for f in files for c in f.case)
    assert any(c.routing.startswith("prefix") for f in files for c in f.case)


def test_paired_runs_differ_only_in_the_tier():
    """The MiniMax-M3 recipe's on/off runs: the LMCache arm reads more prompt tokens from cache and starts sooner."""
    cases = {c.id: c for f in loader.kv_tier_validation() for c in f.case}
    on, off = cases["atom-m3-prefix-lmcache-hit"], cases["atom-m3-prefix-hbm-hit"]
    assert on.workload == off.workload and on.hbm_kv_tokens == off.hbm_kv_tokens
    assert on.value > off.value and cases["atom-m3-prefix-lmcache-ttft"].value < cases["atom-m3-prefix-hbm-ttft"].value


def _broken(tmp_path, old: str, new: str):
    """The M3 recipe's file with its first occurrence of ``old`` replaced by ``new``."""
    text = (DIR / "atom-lmcache-minimax-m3-mi355x.toml").read_text()
    assert old in text
    p = tmp_path / "broken.toml"
    p.write_text(text.replace(old, new, 1))
    return p


@pytest.mark.parametrize("old,new,msg", [
    ('value = 0.7665', 'value = 76.65', "a hit rate is a fraction"),
    ('policy = "lmcache"\nhbm_kv_tokens', 'policy = "lmcache"\nhit_tier = "ddr"\nhbm_kv_tokens', "hit_tier is given exactly"),
    ('policy = "lmcache"\nhbm_kv_tokens', 'policy = "lmcache"\nrouting = "random"\nhbm_kv_tokens', "needs replicas >= 2"),
    ('groups = 4, ', '', "needs groups"),
    ('metric = "hit_rate"', 'metric = "hit_rate_p99"', "field 'case.0.metric'"),
])
def test_a_malformed_case_names_its_field(tmp_path, old, new, msg):
    with pytest.raises(CatalogError, match=msg):
        _validate(_broken(tmp_path, old, new), KvTierValidationFile)


def test_a_ratio_names_its_baseline_and_only_a_ratio_does(tmp_path):
    text = (DIR / "lmcache-gke-tiered-h100.toml").read_text()
    p = tmp_path / "no_baseline.toml"
    p.write_text(text.replace('baseline_policy = "hbm"\n', "", 1))
    with pytest.raises(CatalogError, match="baseline_policy is given exactly for a _ratio metric"):
        _validate(p, KvTierValidationFile)
    p.write_text(text.replace('metric = "ttft_mean_ratio"', 'metric = "ttft_mean_s"', 1))
    with pytest.raises(CatalogError, match="baseline_policy is given exactly"):
        _validate(p, KvTierValidationFile)
