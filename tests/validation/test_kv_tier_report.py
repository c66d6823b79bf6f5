"""docs/validation.md's tiered-KV section (validation/kv_tier_report.py, called by report.kv_tier_section): it is
produced from the catalog's cases, its scores are the cases' errors, and what could not be cased is counted."""

import numpy as np
import pytest

from tokenomy.catalog import loader
from tokenomy.catalog.loader import CatalogError, _validate
from tokenomy.catalog.schema import KvTierValidationFile
from tokenomy.validation import kv_tier_report as kr
from tokenomy.validation import report
from tokenomy.validation.kv_tiering import Scored

# kv_tiering.scored() simulates every case once per process (~40 CPU-s, lru_cache): both files that read it run in one
# xdist worker (make test: --dist loadgroup), so the suite pays it once
pytestmark = pytest.mark.xdist_group("kv_tiering_scored")


def _rows(factor_of):
    """Every catalog case 'predicted' at a chosen multiple of its measured value."""
    return [Scored(f.source.id, c, c.value * factor_of(c), 0.5) for f in loader.kv_tier_validation() for c in f.case]


def test_the_headline_is_the_median_error_of_each_metric_family():
    # hit rates predicted 10% high, TTFTs 50% low (p50), 20% high (mean) or 40% high (a ratio to the baseline arm's),
    # throughputs 3x: each family's median known in advance
    factor = {"hit_rate": 1.1, "ttft_p50_s": 0.5, "ttft_mean_s": 1.2, "ttft_mean_ratio": 1.4,
              "input_tokens_per_s": 3.0, "output_tokens_per_s": 3.0, "input_tokens_per_s_ratio": 3.0}
    rows = _rows(lambda c: factor[c.metric])
    n = {m: sum(r.case.metric == m for r in rows) for m in factor}
    ttft = np.array([0.5] * n["ttft_p50_s"] + [0.2] * n["ttft_mean_s"] + [0.4] * n["ttft_mean_ratio"])
    tput = n["input_tokens_per_s"] + n["output_tokens_per_s"] + n["input_tokens_per_s_ratio"]
    line = kr.headline(rows)
    assert f"hit rate 10% ({n['hit_rate']} cases)" in line
    assert f"TTFT {100 * np.median(ttft):.0f}% ({len(ttft)} cases)" in line
    assert f"throughput 200% ({tput} cases)" in line
    assert len(rows) == sum(n.values())  # every metric of the catalog is in a family


def test_the_section_lists_every_case_and_counts_what_was_not_cased():
    rows = _rows(lambda c: 1.0)
    files = loader.kv_tier_validation()
    text = "\n".join(kr.report_lines(rows, files))
    assert text.startswith("## Tiered KV caching and prefix-aware routing")
    assert all(f"| {c.id} |" in text for f in files for c in f.case)
    for f in files:  # each source's count of published rows not used, and every read source's reasons
        assert f"| `{f.source.id}` | {len(f.case)} | {len(f.skipped)} |" in text
        if not f.case:
            assert all(k["why"] in text for k in f.skipped)
    assert any(not f.case for f in files), "the sources read with no case are part of the validation set"
    assert "Median |error|: hit rate 0%" in text


def test_a_residual_is_shown_with_its_sources_median_error():
    files = loader.kv_tier_validation()
    f = next(f for f in files if f.case and f.residual)
    rows = [Scored(f.source.id, c, c.value * 1.3, 0.5) for c in f.case]
    lines = kr.residual_lines(rows, [f])
    assert lines[0] == f"- `{f.source.id}` (median |error| 30% over {len(f.case)} cases):"
    assert lines[1:] == [f"  - {r}" for r in f.residual]


def test_the_validation_report_carries_the_section_scored_on_the_catalog():
    lines = report.kv_tier_section()
    assert lines[0] == "## Tiered KV caching and prefix-aware routing (issue 28)"
    n = sum(len(f.case) for f in loader.kv_tier_validation())
    assert lines[2].startswith(f"{n} published figures")
    head = next(x for x in lines if x.startswith("**Median |error|"))
    assert "hit rate" in head and "TTFT" in head and "throughput" in head


def test_a_source_with_no_case_must_say_why(tmp_path):
    text = (loader.ROOT / "validation" / "kv_tiering" / "mooncake-fast25.toml").read_text()
    p = tmp_path / "silent.toml"
    p.write_text(text[text.index("[source]"):])  # the source alone: no case, no skipped entry
    with pytest.raises(CatalogError, match="no case and no skipped entry"):
        _validate(p, KvTierValidationFile)
