"""Plan evaluation: invariants (hypothesis), a cross-check against the even-split roofline, and every reason."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenomy.catalog import loader
from tokenomy.core.coeffs import coefficients
from tokenomy.core.inference import hw_coeffs
from tokenomy.core.roofline import step
from tokenomy.parallel.plan import REASONS, Plans, evaluate, shape_of, why_not
from tokenomy.parallel.topology import topology


@pytest.fixture(scope="module")
def llama():
    m = loader.model("llama-3.1-70b")
    return m, shape_of(m), topology(loader.hardware("hgx-h100-8")), hw_coeffs(loader.hardware("hgx-h100-8"), "bf16")[0]


@pytest.fixture(scope="module")
def ds():
    m = loader.model("deepseek-v3")
    return m, shape_of(m), topology(loader.hardware("gb200-nvl72")), hw_coeffs(loader.hardware("gb200-nvl72"), "fp8")[0]


def test_tp_matches_the_even_split_roofline(llama):
    # Llama-3.1-70B has 8 KV heads, so tp 8 splits weights, KV and work exactly 8 ways, as core.roofline does;
    # the plan adds only its all-reduces.
    m, sh, topo, hw = llama
    B, C = np.array([1.0, 16.0, 256.0]), 4096.0
    r = evaluate(sh, topo, hw, Plans(tp=8), B, C)
    s = step(coefficients(m), hw, B, C, 1, 8)
    for k in ("compute_s", "memory_s", "memory_per_chip_bytes", "weight_bytes_per_chip", "kv_bytes_per_chip"):
        assert np.allclose(getattr(r, k), getattr(s, k), rtol=1e-12), k
    assert np.allclose(r.step_s, s.step_s + r.comms_s)
    assert np.all(r.tp_comm_s > 0) and np.all(r.ep_comm_s == 0) and np.all(r.hop_s == 0)


@settings(max_examples=50, deadline=None)
@given(tp=st.sampled_from([1, 2, 4]), ep=st.sampled_from([1, 2, 8, 16]), pp=st.sampled_from([1, 2, 3, 4]),
       dp=st.sampled_from([1, 2]), b=st.sampled_from([16, 64]), prefill=st.booleans())
def test_flops_conserved_under_splits(tp, ep, pp, dp, b, prefill):
    # Σ over chips and micro-batches of per-chip FLOPs = B·S·FLOPs/token whatever the split, when pp divides the
    # layers (Qwen3-30B-A3B: 48) and every attention replica holds a sequence (b >= ep).
    sh = shape_of(loader.model("qwen3-30b-a3b"))
    topo, hw = topology(loader.hardware("gb200-nvl72")), hw_coeffs(loader.hardware("gb200-nvl72"), "bf16")[0]
    C = 2048.0
    S = 64.0 if prefill else 1.0
    r = evaluate(sh, topo, hw, Plans(tp, ep, pp, dp), float(b * dp * pp), C, S)
    assert int(r.reason) == 0
    chips, M = tp * ep * pp * dp, pp
    assert float(r.compute_s) * hw.peak_flops_per_s * chips * M == pytest.approx(float(r.flops), rel=1e-9)
    assert float(r.flops) == pytest.approx(float(evaluate(sh, topo, hw, Plans(), float(b * dp * pp), C, S).flops))


@settings(max_examples=60, deadline=None)
@given(tp=st.sampled_from([1, 2, 4]), ep=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2, 3]),
       dp=st.sampled_from([1, 2]), which=st.sampled_from(["tp", "ep", "pp", "dp"]), batch=st.sampled_from([48, 480]),
       attn_dp=st.booleans())
def test_memory_per_chip_non_increasing_in_chips(tp, ep, pp, dp, which, batch, attn_dp):
    sh = shape_of(loader.model("qwen3-30b-a3b"))
    topo, hw = topology(loader.hardware("hgx-h100-8")), hw_coeffs(loader.hardware("hgx-h100-8"), "bf16")[0]
    p = dict(tp=tp, ep=ep, pp=pp, dp=dp)
    more = dict(p, **{which: p[which] * 2})
    a = evaluate(sh, topo, hw, Plans(**p, attn_dp=attn_dp), batch, 8192.0)
    b = evaluate(sh, topo, hw, Plans(**more, attn_dp=attn_dp), batch, 8192.0)
    assert float(b.memory_per_chip_bytes) <= float(a.memory_per_chip_bytes) * (1 + 1e-12)


def test_head_sharded_kv_replicates_beyond_kv_heads(llama):
    # 8 KV heads: tp 16 cannot split KV further (each K/V head lives on 2 chips); batch-sharding can.
    m, sh, topo, hw = llama
    r = evaluate(sh, topo, hw, Plans(tp=np.array([8, 16, 16]), kv_batch=np.array([False, False, True])), 64.0, 8192.0)
    kv = r.kv_bytes_per_chip
    assert kv[1] == pytest.approx(kv[0]) and kv[2] == pytest.approx(kv[0] / 2)


def test_attention_dp_replicates_dense_weights(ds):
    # DeepSeek-style: with attn-dp every EP rank keeps the attention/dense weights; with attn-tp they are split,
    # but the single MLA latent is then replicated on every chip.
    m, sh, topo, hw = ds
    r = evaluate(sh, topo, hw, Plans(ep=8, attn_dp=np.array([True, False])), 64.0, 8192.0)
    w, kv = r.weight_bytes_per_chip, r.kv_bytes_per_chip
    assert w[0] > w[1] and kv[0] == pytest.approx(kv[1] / 8)
    assert float(r.ep_comm_s[0]) > 0 and float(r.ep_comm_s[1]) == 0 and float(r.tp_comm_s[1]) > 0


def test_every_reason(llama, ds):
    _, lsh, ltopo, lhw = llama
    _, dsh, dtopo, dhw = ds
    cases = [  # (shape, topo, hw, plan, batch, len_pass, expected reason)
        (lsh, ltopo, lhw, Plans(ep=2), 64, 1, 1),
        (dsh, dtopo, dhw, Plans(ep=72), 1024, 1, 2),
        (lsh, ltopo, lhw, Plans(tp=3), 64, 1, 3),
        (lsh, ltopo, lhw, Plans(pp=81), 1024, 1, 4),
        (lsh, ltopo, lhw, Plans(tp=8, pp=4), 2, 1, 5),
        (lsh, ltopo, lhw, Plans(tp=8, pp=4, microbatches=2), 64, 1, 6),
        (lsh, ltopo, lhw, Plans(tp=1), 64, 1, 7),
        (lsh, ltopo, lhw, Plans(tp=8, pp=4, microbatches=1), 1, 8192, 0),  # prefill may use fewer micro-batches
    ]
    for sh, topo, hw, p, B, S, want in cases:
        r = evaluate(sh, topo, hw, p, float(B), 8192.0, float(S))
        assert int(r.reason) == want, (p, REASONS[want])
        msg = why_not(r, p, 0)
        if want:
            assert msg and np.isnan(r.step_s) and np.isnan(r.tokens_per_s)
            assert REASONS[want] in msg or "usable HBM" in msg
        else:
            assert msg is None and np.isfinite(r.step_s)


def test_labels():
    assert Plans(tp=8).label() == "tp8 ep1 pp1 dp1"
    assert Plans(ep=64, pp=4).label() == "tp1 ep64 pp4 dp1 attn-dp"
    assert Plans(tp=2, ep=4, attn_dp=False, kv_batch=True).label() == "tp2 ep4 pp1 dp1 attn-tp kv-batch"
    grid = Plans(tp=np.array([[1], [8]]))
    assert grid.at((2, 3), 4).label() == "tp8 ep1 pp1 dp1"


def test_prefill_pipeline_fill_and_drain(llama):
    # prefill of M micro-batches over P stages: (M + P - 1)·t_stage + (P - 1)·t_hop.
    _, sh, topo, hw = llama
    r = evaluate(sh, topo, hw, Plans(tp=8, pp=2, microbatches=4), 8.0, 2048.0, 2048.0)
    assert float(r.step_s) == pytest.approx(5 * float(r.stage_s) + float(r.hop_s))
    assert int(r.hops) == 1
