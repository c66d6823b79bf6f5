"""Speculative decoding and fast mode (lecture.md §2.14; Leviathan et al. 2023 eq. 1)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenomy.catalog import loader
from tokenomy.econ import speculative as es
from tokenomy.econ.cost import Serving


@given(a=st.floats(0, 1), k=st.integers(1, 16))
def test_expected_tokens_is_a_geometric_sum(a, k):
    # independent form: 1 + a + a^2 + ... + a^k
    assert float(es.expected_tokens_per_step(a, k)) == pytest.approx(sum(a ** i for i in range(k + 1)), rel=1e-9)


@given(a=st.floats(0, 1), k=st.integers(1, 16), d=st.floats(0, 0.5))
def test_regimes_order(a, k, d):
    assert es.speedup_compute_bound(a, k, d) <= es.speedup_memory_bound(a, k, d)
    assert es.speedup_compute_bound(a, k, d) <= 1.0 + 1e-12


@pytest.fixture(scope="module")
def llama():
    return Serving(loader.model("llama-3.1-70b"), loader.hardware("hgx-h100-8"), kv_dtype="fp8")


def test_memory_bound_engine_matches_closed_form(llama):
    sp = es.speculate(llama, np.array([4.0]), 4096, 3, 0.7, 0.05)
    assert sp.speedup[0] == pytest.approx(float(es.speedup_memory_bound(0.7, 3, 0.05)), rel=0.03)
    assert sp.cost_ratio[0] < 1


def test_compute_bound_engine_matches_closed_form():
    # Large batch, short context, dense model: compute-bound, so speculation costs more than it saves
    sv = Serving(loader.model("llama-3.1-8b"), loader.hardware("hgx-h100-8"))
    sp = es.speculate(sv, np.array([8192.0]), 256, 3, 0.7, 0.05)
    assert sp.base_bound[0] == 0  # compute
    assert sp.speedup[0] == pytest.approx(float(es.speedup_compute_bound(0.7, 3, 0.05)), rel=0.05)
    assert sp.cost_ratio[0] > 1


def test_fast_mode_point(llama):
    b, price = es.fast_mode_point(llama, 256, 4096, 1.5)
    t = llama.terms(np.array([256.0, b]), 4096)
    assert t.step_s[0] / t.step_s[1] == pytest.approx(1.5, rel=1e-6)
    assert price == pytest.approx(t.usd_per_mtok[1] / t.usd_per_mtok[0], rel=1e-9) and price > 1
    assert es.fast_mode_point(llama, 256, 4096, 1e6) == (None, None)


def test_bad_speculation_inputs():
    for k, a, d in ((0, 0.5, 0.1), (2, 1.5, 0.1), (2, 0.5, 1.0)):
        with pytest.raises(ValueError):
            es.check_speculation(k, a, d)
