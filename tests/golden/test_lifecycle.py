"""Lecture cases L11-L15 (reference/lecture.md §2.10, §4.1): inference volume -> pre-training tokens ->
over-training."""

import pytest

from tokenomy.econ.lifecycle import Penalties, infer_from_inference, inference_tokens
from tokenomy.econ.scaling import chinchilla_tokens, overtraining_factor
from tokenomy.units import SECONDS_PER_DAY


def test_L11_inference_tokens_of_a_family():
    # [T] "Five hundred million tokens a second ... deployed for two months" -> 2.6e15 (±2%).
    assert float(inference_tokens(500e6, 60 * SECONDS_PER_DAY)) == pytest.approx(2.59e15, rel=0.02)


def test_L12_per_model():
    # [T] 50M tok/s per model x 2 months, "around two hundred trillion" (±30%); exactly 2.59e14.
    d = float(inference_tokens(50e6, 60 * SECONDS_PER_DAY))
    assert d == pytest.approx(200e12, rel=0.30) and d == pytest.approx(2.592e14, rel=1e-12)
    assert infer_from_inference(500e6, 60, 1e11, models_per_family=10).d_inf == pytest.approx(d)


def test_L13_chinchilla_tokens():
    # [T] 100B active parameters x 20 = 2T tokens (exact).
    assert float(chinchilla_tokens(100e9)) == 2e12


def test_L14_overtraining():
    # [T] 200T / 2T = 100x (factor 1.5); [I] 259T / 2T = 130x.
    assert float(overtraining_factor(200e12, 100e9)) == 100.0
    r = infer_from_inference(50e6, 60, 100e9)
    assert r.overtraining == pytest.approx(129.6, rel=1e-9)
    assert 100 / 1.5 <= r.overtraining <= 100 * 1.5


def test_L15_equal_costs_ratio():
    # [FC] 6·D_pre = 3·3·D_RL = 2·3·D_inf -> D_pre : D_RL : D_inf = 1 : 0.667 : 1 (exact).
    r = infer_from_inference(50e6, 60, 100e9, Penalties(3.0, 3.0, 3.0))
    assert r.ratio == pytest.approx((1.0, 2 / 3, 1.0), rel=1e-12)
    assert 6 * r.d_pre == pytest.approx(3 * 3 * r.d_rl) == pytest.approx(2 * 3 * r.d_inf)
