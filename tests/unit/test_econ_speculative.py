"""Speculative decoding and fast mode (lecture.md §2.14; Leviathan et al. 2023 eq. 1)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenomy.answers.economics import deployment_request, serving
from tokenomy.core import engine
from tokenomy.econ import speculative as es


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
    # the even split at the roofline: no all-reduce, whose one-shot bandwidth term grows with the k + 1 tokens a
    # verify step carries, so the step is the weight and KV stream the closed form assumes
    return serving(deployment_request("llama-3.1-70b", "hgx-h100-8", None,
                                      {"kv_dtype": "fp8", "layout": "ideal", "efficiency": "roofline"}), [4], [4096])


def test_memory_bound_engine_matches_closed_form(llama):
    sp = es.speculate(llama, np.array([4.0]), 4096, 3, 0.7, 0.05)
    assert sp.speedup[0] == pytest.approx(float(es.speedup_memory_bound(0.7, 3, 0.05)), rel=0.03)
    assert sp.cost_ratio[0] < 1


def test_compute_bound_engine_matches_closed_form():
    # Large batch, short context, dense model: compute-bound, so speculation costs more than it saves (the even
    # split at the roofline, asked for by name: no comms, so the closed form holds)
    sv = serving(deployment_request("llama-3.1-8b", "hgx-h100-8", None, {"layout": "ideal", "efficiency": "roofline"}),
                 [8192], [256])
    sp = es.speculate(sv, np.array([8192.0]), 256, 3, 0.7, 0.05)
    assert sp.base_bound[0] == 0  # compute
    assert sp.speedup[0] == pytest.approx(float(es.speedup_compute_bound(0.7, 3, 0.05)), rel=0.05)
    assert sp.cost_ratio[0] > 1


def test_fast_mode_point(llama):
    b, price = es.fast_mode_point(llama, 256, 4096, 1.5)
    t = llama.terms(np.array([256.0, b]), 4096)
    assert t.step_s[0] / t.step_s[1] == pytest.approx(1.5, rel=0.01)  # whole sequences: steps move in jumps
    assert price == pytest.approx(t.usd_per_mtok[1] / t.usd_per_mtok[0], rel=1e-9) and price > 1
    assert es.fast_mode_point(llama, 256, 4096, 1e6) == (None, None)


def test_bad_speculation_inputs():
    for k, a, d in ((0, 0.5, 0.1), (2, 1.5, 0.1), (2, 0.5, 1.0)):
        with pytest.raises(ValueError):
            es.check_speculation(k, a, d)


def test_mla_verify_pass_pays_attention_per_token():
    # MLA (DeepSeek-V3): k new tokens take the cheaper of the absorbed and the plain + un-absorbed form, so a token
    # of a k-token pass costs as much attention as a decode token (less only by the causal mean: the j-th new token
    # sees C - k + j positions). The old pass priced k >= 2 in the plain form without expanding the latent cache,
    # ~0.3x of decode's.
    C = 8192.0
    sv = serving(deployment_request("deepseek-v3", "hgx-h200-8", None, {"layout": "ideal", "efficiency": "roofline"}),
                 [1], [C])
    one = float(sv.run(1.0, C, 1).attention_flops)
    for k in (2, 4, 16):
        assert float(sv.run(1.0, C, k).attention_flops) / k >= one * (C - (k - 1) / 2) / C * (1 - 1e-9)


def test_speculation_at_a_compute_bound_mla_batch_costs_more():
    # DeepSeek-V3 on 8 H200s, fp8 KV, batch 16384 at context 8192 (the point does not fit in HBM, so the unmasked
    # terms are read): attention binds, verifying k+1 = 4 tokens costs ~4x, so speculation slows decode down
    # (the old pass: 1.10x faster, 0.91x the cost; now ~0.61x and ~1.64x)
    sv = serving(deployment_request("deepseek-v3", "hgx-h200-8", None,
                                    {"kv_dtype": "fp8", "layout": "ideal", "efficiency": "roofline"}), [16384], [8192])
    sp = es.speculate(sv, np.array([16384.0]), 8192, 3, 0.7, 0.05)
    assert sp.base_bound[0] == engine.BOUNDS.index("compute")
    assert sp.speedup[0] < 0.8 and sp.cost_ratio[0] > 1.25
    assert sp.speedup[0] == pytest.approx(float(es.speedup_compute_bound(0.7, 3, 0.05)), rel=0.1)
