"""Pipeline schedules: bubbles, the micro-batch rule, hop latency (lecture §2.8)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenomy.core import pipeline, schedules


def test_bubble_fraction_closed_form():
    # GPipe/1F1B: (P-1)/(M+P-1); 4 stages, 4 micro-batches: 3/7; interleaving 2 chunks: 3/11.
    assert pipeline.bubble_fraction(4, 4) == pytest.approx(3 / 7)
    assert pipeline.bubble_fraction(4, 4, interleave=2) == pytest.approx(3 / 11)
    assert pipeline.bubble_fraction(1, 8) == 0


def test_min_microbatches_is_the_number_of_stages():
    assert int(pipeline.min_microbatches(4)) == 4


@settings(max_examples=40, deadline=None)
@given(P=st.integers(1, 8), M=st.integers(1, 12), stage=st.floats(1e-4, 1e-2), hop=st.floats(0, 5e-3))
def test_timeline_matches_tpot_and_never_overlaps(P, M, stage, hop):
    pl = pipeline.DecodePipeline(P, M, stage, hop)
    boxes = pl.timeline(steps=3)
    for s in range(P):  # one stage works on one micro-batch at a time
        spans = sorted((a, b) for st_, _, a, b in boxes if st_ == s)
        assert all(b0 <= a1 + 1e-15 for (_, b0), (a1, _) in zip(spans, spans[1:]))
    # steady state: a micro-batch's successive tokens are tpot apart (from the 2nd to the 3rd step)
    starts = [a for st_, mb, a, _ in boxes if st_ == 0 and mb == 0]
    assert starts[2] - starts[1] == pytest.approx(pl.tpot_s, rel=1e-9, abs=1e-15)
    if M >= P and hop == 0:
        assert pl.idle_fraction == pytest.approx(0, abs=1e-12)
    if M < P:
        assert pl.idle_fraction > 0  # fewer micro-batches than stages: stages idle


def test_rack_hop_ratio_is_linear_in_k_and_layers():
    assert pipeline.rack_hop_ratio(8, 4, 900e9, 50e9) == pytest.approx(2 * 8 * 4 / 18)


def test_dualpipe_bubble_hand_checked():
    # DeepSeek-V3 report Table 2: DualPipe idles (PP/2-1)(F&B + B - 3W) against 1F1B's (PP-1)(F+B). With F = 1,
    # B = 2, W = 1 and F&B = 3, PP 16 and 120 micro-batches per rank (15,360 sequences over DP 128): 7·2 = 14 of
    # 120·3 + 14 = 374 units, 3.7%, where 1F1B idles 15/135 = 11.1%.
    assert pipeline.dualpipe_bubble_fraction(16, 120) == pytest.approx(14 / 374)
    assert schedules.schedule_bubble("1f1b", 16, 120) == pytest.approx(15 / 135)
    assert schedules.schedule_bubble("dualpipe", 2, 8) == 0.0  # PP/2 - 1 = 0: no bubble at two stages
    assert schedules.schedule_bubble("interleaved", 4, 4, 2) == pytest.approx(3 / 11)
