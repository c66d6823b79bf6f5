"""The pass engine (core/engine.py) at the roofline vs independent closed forms, and its invariants (hypothesis)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenomy.catalog.loader import hardware, model
from tokenomy.core import engine
from tokenomy.core.coeffs import coefficients
from tokenomy.core.deployment import Deployment
from tokenomy.core.efficiency import Efficiency
from tokenomy.core.layout import Layout

LLAMA70 = model("llama-3.1-70b")
DSV3 = model("deepseek-v3")
H100 = hardware("hgx-h100-8")


def even(m, hw, n, eff=Efficiency()):
    """The ideal even split over n chips at the given efficiency set (a bound, asked for by name)."""
    return Deployment(m, hw, Layout.even_split(n), eff=eff)


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
    r = even(LLAMA70, H100, n).run(B, C)
    assert float(r.flops) == pytest.approx(flops, rel=1e-12)
    kv, bw = 2 * L * K * d * 2, 3.35e12
    assert float(r.kv_s) * n * bw == pytest.approx(B * C * kv + B * kv, rel=1e-12)
    assert float(r.weights_read_s) * n * bw == pytest.approx(n_matmul * 2, rel=1e-12)
    assert float(r.weight_bytes_per_chip) == pytest.approx(n_total * 2 / n, rel=1e-12)
    assert float(r.compute_s) == pytest.approx(flops / (n * 989.4e12), rel=1e-12)
    assert float(r.memory_s) == pytest.approx(float(r.weights_read_s + r.kv_s + r.act_s), rel=1e-12)


def test_experts_touched_matches_simulation():
    # Monte Carlo of top-k routing without replacement, independent of the engine's balls-in-bins count (EP 1).
    rng = np.random.default_rng(0)
    E, k = 256, 8
    dep = Deployment(DSV3, H100, Layout(tp=8))
    for T in (1, 4, 32, 256):
        sims = [len(np.unique(np.concatenate([rng.choice(E, k, replace=False) for _ in range(T)])))
                for _ in range(300)]
        assert float(dep.run(T, 128).experts_read) == pytest.approx(np.mean(sims), rel=0.03)


def test_moe_weight_reads_grow_with_batch_between_active_and_total():
    r = even(DSV3, hardware("gb200-nvl72"), 64).run(np.array([1, 8, 64, 512, 8192]), 128)
    w = np.asarray(r.weights_read_s)
    assert np.all(np.diff(w) > 0)
    assert w[0] < 0.07 * w[-1]  # ~37B of 671B touched at batch 1


def test_prefill_attention_is_causal_average():
    # Prefill of S fresh tokens: token j attends to j positions, mean (S+1)/2.
    S = 1000
    r = even(LLAMA70, H100, 8).run(1, S, S)
    c = coefficients(LLAMA70)
    assert float(r.flops) == pytest.approx(S * (c.matmul_flops_per_token + float(c.attn_score_plain.sum()) * (S + 1) / 2))


def test_does_not_fit_returns_no_numbers():
    dep = Deployment(LLAMA70, hardware("h100-sxm"), Layout())
    r = dep.run(np.array([1, 4096]), 32768)
    assert int(r.reason[0]) == engine.FITS_REASON  # 141 GB of weights on one 80 GB chip
    assert np.isnan(r.step_s[0]) and np.isnan(r.tokens_per_s[0]) and "weights" in engine.why_not(r, dep.layout, 0)


def test_efficiency_terms_slow_the_estimate():
    base = even(LLAMA70, H100, 8).run(64, 2048)
    slow = even(LLAMA70, H100, 8, Efficiency(flops_fraction=0.5, hbm_fraction=0.8, overhead_s=1e-3)).run(64, 2048)
    assert float(slow.memory_s) == pytest.approx(float(base.memory_s) / 0.8)
    assert float(slow.step_s) == pytest.approx(float(base.step_s) / 0.8 + 1e-3)


def test_efficiency_rejects_bad_fraction():
    with pytest.raises(ValueError, match="flops_fraction"):
        Efficiency(flops_fraction=1.5)


shapes = st.tuples(st.integers(1, 8192), st.integers(1, 262144), st.sampled_from([(1, 1), (8, 1), (1, 8), (2, 4)]))


@settings(max_examples=60, deadline=None)
@given(shapes, st.sampled_from(["llama-3.1-70b", "deepseek-v3", "gpt-oss-120b", "mixtral-8x7b-v0.1"]))
def test_estimate_at_least_each_term(shape, name):
    B, C, (tp, ep) = shape
    m = model(name)
    if ep > 1 and not coefficients(m).moe_layers:
        ep = 1
    r = Deployment(m, H100, Layout(tp=tp, ep=ep),
                   eff=Efficiency(overhead_s=1e-4)).run(B, C)
    if int(r.reason) == 0:
        for term in (r.compute_s, r.memory_s, r.comms_s, r.overhead_s):
            assert float(r.step_s) >= float(term)
    else:
        assert np.isnan(float(r.step_s))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 131072), st.sampled_from(["llama-3.1-8b", "deepseek-v3", "qwen3-30b-a3b"]))
def test_cost_per_token_non_increasing_in_batch_while_fits(C, name):
    B = np.unique(np.geomspace(1, 4096, 25).astype(int)).astype(float)
    r = even(model(name), hardware("gb200-nvl72"), 8).run(B, C)
    per_token = np.asarray(r.step_s) / B
    ok = np.asarray(r.reason) == 0
    assert np.all(np.diff(per_token[ok]) <= 1e-12 * per_token[ok][:-1])


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 2048), st.integers(16, 65536))
def test_memory_per_chip_falls_with_chips_and_kv_linear_in_context(B, C):
    a, b = even(LLAMA70, H100, 4).run(B, C), even(LLAMA70, H100, 8).run(B, C)
    assert float(b.memory_per_chip_bytes) < float(a.memory_per_chip_bytes)
    c2 = even(LLAMA70, H100, 4).run(B, 2 * C)
    assert float(c2.kv_bytes_per_chip) == pytest.approx(2 * float(a.kv_bytes_per_chip))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 512), st.sampled_from([Layout(tp=8), Layout(ep=8), Layout(tp=2, ep=4), Layout(dp=8)]))
def test_flops_conserved_under_parallel_splits(B, lay):
    a = Deployment(DSV3, H100, lay).run(B, 4096)
    b = even(DSV3, H100, 1).run(B, 4096)
    assert float(a.flops) == pytest.approx(float(b.flops), rel=1e-12)
