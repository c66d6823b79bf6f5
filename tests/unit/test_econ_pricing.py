"""Prefill vs decode pricing (lecture.md §2.12)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenomy.answers.economics import deployment_request, serving
from tokenomy.catalog import loader
from tokenomy.econ import pricing as ep


def test_lecture_l22():
    # lecture.md §4.1 L22: output/input = 5 -> decode t_mem/t_compute ~ 5, decode MFU ~ 1/5 of prefill
    assert ep.implied_decode_memory_over_compute(25, 5) == 5
    assert ep.implied_decode_mfu(25, 5) == pytest.approx(0.2)


@given(o=st.floats(0.1, 100), i=st.floats(0.1, 100), m=st.floats(0.05, 1))
def test_implied_mfu_round_trip(o, i, m):
    assert ep.implied_decode_mfu(o, i, m) * ep.implied_decode_memory_over_compute(o, i, m) == pytest.approx(1)


def test_engine_ratio_falls_with_batch():
    # the even split at the roofline (asked for by name), where the lecture's MFU argument holds exactly
    sv = serving(deployment_request("deepseek-v3", "hgx-h200-8", None,
                                    {"kv_dtype": "fp8", "layout": "ideal", "efficiency": "roofline"}), [16], [8192])
    rs = [ep.price_ratio(sv, b, 8192, 4096) for b in (16, 128, 1024)]
    assert all(r.prefill_mfu == pytest.approx(1.0) for r in rs)  # long prompts run at the roofline
    ratios = [r.output_over_input for r in rs]
    assert ratios == sorted(ratios, reverse=True) and ratios[-1] > 1
    dec, pre = sv.terms(1024.0, 8192.0), sv.terms(1.0, 4096.0, 4096.0)
    assert rs[-1].output_over_input == pytest.approx((dec.step_s / 1024) / (pre.step_s / 4096), rel=1e-9)
    # with attention FLOPs negligible (short context, dense GQA) the ratio is MFU_prefill / MFU_decode
    sv = serving(deployment_request("llama-3.1-8b", "h100-sxm", None, {"efficiency": "roofline"}), [8], [512])
    small = ep.price_ratio(sv, 8, 512, 512)
    assert small.output_over_input == pytest.approx(small.prefill_mfu / small.decode_mfu, rel=0.05)
    with pytest.raises(ValueError):
        ep.price_ratio(sv, 1, 1000, 2000)


def test_price_sheet_rows():
    rows = {r["price_sheet"]: r for r in ep.price_sheet_rows(loader.price_file(n) for n in loader.price_names())}
    assert rows["claude-opus-4-6"]["output_over_input"] == 5
