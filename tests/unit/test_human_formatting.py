"""What people read on the pages' cards and tables (formatting.fmt_human and its parts): durations in days, money
in $ M, small shares and small dollars with significant figures, never '0.0%' or '5e-07'."""

from __future__ import annotations

import pytest

from tokenomy.formatting import fmt_duration, fmt_human, fmt_percent, fmt_usd


@pytest.mark.parametrize("v, want", [(5.076e6, "58.8 days"), (3.1557600e7 * 2, "2 years"), (7200, "2 h"),
                                     (90, "1.5 min")])
def test_durations_in_words(v, want):
    assert fmt_duration(v) == want
    assert fmt_human("training_time_s", v) == want


@pytest.mark.parametrize("v, want", [(5.183e6, "$5.18 M"), (2.5e9, "$2.5 B"), (1234.4, "$1,234"), (0.25, "$0.25"),
                                     (0.0012, "$0.0012"), (5e-5, "$0.000050"), (5e-7, "$5.0e-7"), (0, "$0")])
def test_dollars(v, want):
    assert fmt_usd(v) == want
    assert fmt_human("usd", v) == want


@pytest.mark.parametrize("v, want", [(0.486, "48.6%"), (0.0123, "1.2%"), (4e-4, "0.040%"), (1.2e-5, "0.0012%"),
                                     (1e-7, "0.000010%"), (0, "0%")])
def test_shares_keep_two_significant_figures_below_one_percent(v, want):
    assert fmt_percent(v) == want
    assert fmt_human("hit_fraction", v) == want


def test_no_share_between_a_thousandth_and_four_hundredths_of_a_percent_reads_zero():
    for v in (1e-5, 2e-5, 1e-4, 4e-4):
        assert fmt_human("hit_fraction", v) not in ("0.0%", "0%")
