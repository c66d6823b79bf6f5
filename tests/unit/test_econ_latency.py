"""Latency schedule and Pareto curve (lecture.md §2.3-2.4)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenomy.catalog import loader
from tokenomy.econ import latency as el
from tokenomy.answers.economics import deployment_request, serving


def test_lecture_l4_l6_l7():
    assert el.drain_time_s(288e9, 20e12) == pytest.approx(0.0144)  # L6: Rubin "about 15 ms"
    assert el.worst_case_latency_s(0.020) == pytest.approx(0.040)  # L7
    assert el.worst_case_latency_s(0.020, tick_s=0.005) == pytest.approx(0.025)
    assert el.tokens_per_s(2000, 1 / 64) == pytest.approx(128_000)  # L4
    assert el.fraction_of_traffic(128_000, 128e6) == pytest.approx(1e-3)  # L5


def test_drain_rows_match_lecture_arithmetic():
    # lecture.md §2.3 [I]: H100 80 GB / 3.35 TB/s = 23.9 ms; H200 141 / 4.8 = 29.4 ms; A100-80 = 39 ms
    rows = {r["chip"]: r["drain_s"] for r in el.drain_rows(loader.hardware(n).chip
                                                          for n in ("h100-sxm", "h200", "a100-80gb-sxm"))}
    assert rows["h100-sxm"] == pytest.approx(0.0239, abs=1e-4)
    assert rows["h200"] == pytest.approx(0.0294, abs=1e-4)
    assert rows["a100-80gb-sxm"] == pytest.approx(0.039, abs=5e-4)


@given(st.lists(st.tuples(st.floats(0.1, 1e4), st.floats(0.1, 1e4)), min_size=1, max_size=30))
def test_pareto_mask_keeps_exactly_the_undominated(points):
    u, c = np.array(points).T
    mask = el.pareto_mask(u, c)
    for i in range(len(u)):
        dominated = any(u[j] >= u[i] and c[j] >= c[i] and (u[j] > u[i] or c[j] > c[i]) for j in range(len(u)))
        assert mask[i] == (not dominated)


def test_schedule_trades_per_user_for_per_chip():
    sv = serving(deployment_request("llama-3.1-8b", "h100-sxm", None, {}), [1, 4, 16, 64, 256], [2048])
    rows = el.schedule_rows(sv.terms(np.array([1, 4, 16, 64, 256.0]), 2048), sv.chips)
    ok = [r for r in rows if r["fits"]]
    users = [r["tokens_per_s_per_user"] for r in ok]
    chips = [r["tokens_per_s_per_chip"] for r in ok]
    assert users == sorted(users, reverse=True) and chips == sorted(chips)
    assert all(r["pareto"] for r in ok)
    assert all(r["worst_case_latency_s"] == pytest.approx(2 * r["step_s"]) for r in ok)
