"""The roofline engine vs independent closed forms, and its invariants (hypothesis)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenomy.catalog.loader import hardware, model
from tokenomy.core.coeffs import coefficients, reshape, stack
from tokenomy.core.inference import run_pass
from tokenomy.core.roofline import Efficiency, HwCoeffs, experts_touched, step

LLAMA70 = model("llama-3.1-70b")
DSV3 = model("deepseek-v3")
H100 = hardware("h100-sxm")


def test_dense_decode_matches_textbook_closed_form():
    # Textbook decode step for a dense GQA model, written from scratch (Pope et al. 2022 §2):
    # FLOPs = B*(2*N_matmul + 2*L*H*(d+dv)*C), bytes = N_matmul*2 + B*C*kv + B*kv + B*act
    # (the input embedding is gathered: B rows, not the table, are read).
    L, D, H, K, d, F, V = 80, 8192, 64, 8, 128, 28672, 128256
    layer = 2 * D * H * d + 2 * D * K * d + 3 * D * F + 2 * D
    n_total = L * layer + 2 * V * D + D
    n_matmul = n_total - V * D  # the input embedding is a gather
    B, C, n = 16, 4096, 8
    flops = B * (2 * n_matmul + 2 * L * H * 2 * d * C)
    r = run_pass(LLAMA70, H100, batch=B, context=C, chips=n).step
    assert float(r.flops) == pytest.approx(flops, rel=1e-12)
    kv = 2 * L * K * d * 2
    assert float(r.kv_read_bytes) == B * C * kv
    assert float(r.weight_bytes) == pytest.approx(n_matmul * 2, rel=1e-12)
    assert float(r.weight_bytes_per_chip) == pytest.approx(n_total * 2 / n, rel=1e-12)
    assert float(r.compute_s) == pytest.approx(flops / (n * 989.4e12), rel=1e-12)
    total_bytes = n_matmul * 2 + B * C * kv + B * kv + float(r.act_bytes)
    assert float(r.memory_s) == pytest.approx(total_bytes / (n * 3.35e12), rel=1e-12)


def test_experts_touched_matches_simulation():
    # Monte Carlo of top-k routing without replacement, independent of the closed form.
    rng = np.random.default_rng(0)
    E, k = 256, 8
    for T in (1, 4, 32, 256):
        sims = [len(np.unique(np.concatenate([rng.choice(E, k, replace=False) for _ in range(T)])))
                for _ in range(300)]
        assert experts_touched(T, E, k) == pytest.approx(np.mean(sims), rel=0.03)
    assert experts_touched(1, E, k) == pytest.approx(k)
    assert experts_touched(1e6, E, k) == pytest.approx(E)


def test_moe_weight_bytes_grow_with_batch_between_active_and_total():
    r = run_pass(DSV3, H100, batch=np.array([1, 8, 64, 512, 8192]), context=128, chips=64).step
    w = np.asarray(r.weight_bytes)
    assert np.all(np.diff(w) > 0)
    assert w[0] < 0.07 * w[-1]  # ~37B of 671B touched at batch 1


def test_prefill_attention_is_causal_average():
    # Prefill of S fresh tokens: token j attends to j positions, mean (S+1)/2.
    S = 1000
    r = run_pass(LLAMA70, H100, batch=1, context=S, len_pass=S, chips=8).step
    c = coefficients(LLAMA70)
    expected = S * (c.matmul_flops_per_token + c.score_global_prefill * (S + 1) / 2)
    assert float(r.flops) == pytest.approx(expected)


def test_does_not_fit_returns_no_numbers():
    r = run_pass(LLAMA70, H100, batch=[1, 4096], context=32768, chips=1)
    rows = r.rows()
    assert rows[0]["fits"] is False  # 141 GB of weights on one 80 GB chip
    assert rows[0]["step_s"] is None and rows[0]["tokens_per_s"] is None and "weights" in rows[0]["why"]


def test_efficiency_terms_slow_the_estimate():
    base = run_pass(LLAMA70, H100, batch=64, context=2048, chips=8).step
    slow = run_pass(LLAMA70, H100, batch=64, context=2048, chips=8,
                    eff=Efficiency(flops_fraction=0.5, hbm_fraction=0.8, overhead_s=1e-3)).step
    assert float(slow.memory_s) == pytest.approx(float(base.memory_s) / 0.8)
    assert float(slow.step_s) == pytest.approx(float(base.step_s) / 0.8 + 1e-3)


def test_efficiency_rejects_bad_fraction():
    with pytest.raises(ValueError, match="flops_fraction"):
        Efficiency(flops_fraction=1.5)


def test_grid_over_models_equals_one_at_a_time():
    names = ["llama-3.1-8b", "deepseek-v3", "gpt-oss-120b", "gemma-3-27b-it"]
    cs = reshape(stack([coefficients(model(n)) for n in names]), (4, 1, 1))
    hw = HwCoeffs(989.4e12, 3.35e12, 1e15)
    B = np.array([1, 32, 1024])[None, :, None]
    C = np.array([1024, 65536])[None, None, :]
    grid = step(cs, hw, B, C, 1, 8)
    for i, n in enumerate(names):
        one = step(coefficients(model(n)), hw, B[0], C[0], 1, 8)
        np.testing.assert_allclose(np.asarray(grid.step_s)[i], one.step_s, rtol=1e-12)


shapes = st.tuples(st.integers(1, 8192), st.integers(1, 262144), st.integers(1, 72))


@settings(max_examples=60, deadline=None)
@given(shapes, st.sampled_from(["llama-3.1-70b", "deepseek-v3", "gpt-oss-120b", "mixtral-8x7b-v0.1"]))
def test_estimate_at_least_each_term(shape, name):
    B, C, n = shape
    s = run_pass(model(name), hardware("b200"), batch=B, context=C, chips=n,
                 eff=Efficiency(overhead_s=1e-4)).step
    if bool(s.fits):
        for term in (s.compute_s, s.memory_s, s.comms_s, s.overhead_s):
            assert float(s.step_s) >= float(term)
    else:
        assert np.isnan(float(s.step_s))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 131072), st.sampled_from(["llama-3.1-8b", "deepseek-v3", "qwen3-30b-a3b"]))
def test_cost_per_token_non_increasing_in_batch_while_fits(C, name):
    B = np.unique(np.geomspace(1, 4096, 25).astype(int))
    s = run_pass(model(name), hardware("gb200"), batch=B, context=C, chips=8).step
    per_token = np.asarray(s.step_s) / B
    ok = np.asarray(s.fits)
    assert np.all(np.diff(per_token[ok]) <= 1e-12 * per_token[ok][:-1])


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 2048), st.integers(16, 65536))
def test_memory_per_chip_falls_with_chips_and_kv_linear_in_context(B, C):
    m = model("llama-3.1-70b")
    a = run_pass(m, H100, batch=B, context=C, chips=4).step
    b = run_pass(m, H100, batch=B, context=C, chips=8).step
    assert float(b.memory_per_chip_bytes) < float(a.memory_per_chip_bytes)
    c2 = run_pass(m, H100, batch=B, context=2 * C, chips=4).step
    assert float(c2.kv_read_bytes) == pytest.approx(2 * float(a.kv_read_bytes))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 512), st.integers(2, 64))
def test_flops_independent_of_chip_count(B, n):
    a = run_pass(DSV3, H100, batch=B, context=4096, chips=n).step
    b = run_pass(DSV3, H100, batch=B, context=4096, chips=1).step
    assert float(a.flops) == float(b.flops)
