"""Error statistics against hand-computed values."""

import numpy as np
import pytest

from tokenomy.validation.metrics import grouped, optimism, signed_error, stats


def test_stats_by_hand():
    s = stats(np.array([-0.5, 0.1, 0.3, np.nan]))
    assert s.n == 3 and s.n_missing == 1
    assert s.mdape == 0.3 and abs(s.within - 1 / 3) < 1e-12 and s.bias == 0.1


def test_throughput_errors_read_as_time_errors():
    # predicting twice the measured throughput = promising half the time: -50% as a time error
    e = optimism(signed_error(2.0, 1.0), True)
    assert abs(e + 0.5) < 1e-12
    assert optimism(signed_error(2.0, 1.0), False) == 1.0


def test_grouped_keys_sorted():
    g = grouped([("b",), ("a",), ("b",)], np.array([0.1, 0.2, -0.3]))
    assert list(g) == [("a",), ("b",)] and g[("b",)].n == 2


def test_pseudo_huber_is_quadratic_near_zero_and_linear_far_out():
    from tokenomy.validation.metrics import pseudo_huber

    assert float(pseudo_huber(0.01, 0.15)) == pytest.approx(0.01 ** 2, rel=1e-2)
    far = float(pseudo_huber(3.0, 0.15) - pseudo_huber(2.0, 0.15))
    assert far == pytest.approx(2 * 0.15 * 1.0, rel=1e-2)  # slope 2s beyond the scale, not 2r
