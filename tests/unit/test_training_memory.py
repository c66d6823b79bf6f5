"""Training memory per chip vs the closed forms of Korthikanti et al. 2022 and ZeRO, and its invariants."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenomy.arch.model import Attention, Layer, Mlp
from tokenomy.catalog.loader import hardware, model
from tokenomy.core.memory import Stored, TrainBytes, layer_activation_bytes, overflow_message, train_memory
from tokenomy.core.training import TrainPlan, train_step

# GPT-3 175B shapes (Brown et al. 2020, Table 2.1): h = 12288, a = 96, F = 4h, GeLU, dropout.
H, A = 12288, 96
GPT_LAYER = Layer(Attention("mha", A, A, H // A, H // A), Mlp("dense", 4 * H, gated=False), norms=2)
L8 = model("llama-3.1-8b")


@pytest.mark.parametrize("t", [1, 2, 8])
@pytest.mark.parametrize("s,b", [(2048, 1), (2048, 4), (8192, 1)])
def test_korthikanti_closed_forms(s, b, t):
    # Korthikanti et al. 2022 (arXiv 2205.05198), per layer, 16-bit activations with dropout:
    # eq. 2 sbh(34 + 5as/h); TP eq. 3 sbh(10 + 24/t + 5as/(ht)); TP+SP eq. 4 sbh/t(34 + 5as/h);
    # selective recompute with SP (eq. 6) 34sbh/t; full recompute stores the 2sbh layer input.
    kw = dict(act_bytes=2, dropout=True)
    got = lambda **k: float(layer_activation_bytes(GPT_LAYER, H, s, b, tp=t, **kw, **k))  # noqa: E731
    sbh = s * b * H
    assert got(sp=False) == pytest.approx(sbh * (10 + 24 / t + 5 * A * s / (H * t)), rel=1e-12)
    assert got(sp=True) == pytest.approx(sbh / t * (34 + 5 * A * s / H), rel=1e-12)
    assert got(sp=True, strategy="selective") == pytest.approx(34 * sbh / t, rel=1e-12)
    assert got(sp=False, strategy="full") == pytest.approx(2 * sbh, rel=1e-12)
    if t == 1:
        assert got(sp=False) == pytest.approx(sbh * (34 + 5 * A * s / H), rel=1e-12)


def test_matches_the_reversible_engineers_closed_form():
    mm = pytest.importorskip("tokenomy.reversible.memory_model")
    for s in (512, 4096):
        ours = float(layer_activation_bytes(GPT_LAYER, H, s, 2, act_bytes=2, dropout=True))
        assert ours == pytest.approx(float(mm.layer_activation_bytes(s, 2, H, A)), rel=1e-12)


def test_llama_layer_by_hand():
    # Llama 3.1 8B, no dropout, bf16, per token: two norm inputs 2·2D, attention input 2D, Q 2D, K and V
    # 2·2·(8·128), projection input 2D, MLP input 2D, SwiGLU gate/up/product 3·2F; scores 2·H·s.
    D, F, Hh, s = 4096, 14336, 32, 4096
    per_tok = 4 * D + 2 * D + 2 * D + 4 * 1024 + 2 * D + 2 * D + 6 * F
    layer = L8.layers[0]
    assert float(layer_activation_bytes(layer, D, s, 1, strategy="selective")) == s * per_tok
    assert float(layer_activation_bytes(layer, D, s, 1)) == s * (per_tok + 2 * Hh * s)


def test_zero_stages_and_sixteen_bytes_per_param():
    # Rajbhandari et al. 2020 (ZeRO) §3.1: bf16 weights + bf16 grads + 12 B of fp32 Adam state = 16 B/param;
    # stage 1 shards the 12, stage 2 also the grads, stage 3 also the weights, over N_d = 64.
    plan = lambda z: TrainPlan(dp=64, zero=z, seq_len=1024, global_batch=64, recompute="full")  # noqa: E731
    n = float(train_memory(L8, plan(0), 1e15).params_per_chip)
    states = lambda z: float(sum(getattr(train_memory(L8, plan(z), 1e15), k)  # noqa: E731
                                 for k in ("weights_bytes", "gradients_bytes", "optimizer_bytes")))
    assert states(0) == pytest.approx(16 * n)
    assert states(1) == pytest.approx((4 + 12 / 64) * n)
    assert states(2) == pytest.approx((2 + 14 / 64) * n)
    assert states(3) == pytest.approx(16 / 64 * n)


@settings(max_examples=40, deadline=None)
@given(s=st.sampled_from([512, 2048, 8192]), b=st.integers(1, 4), tp=st.sampled_from([1, 2, 8]),
       pp=st.sampled_from([1, 2, 4]), m=st.integers(1, 16), sp=st.booleans())
def test_memory_non_increasing_with_more_recompute(s, b, tp, pp, m, sp):
    # FlashAttention keeps the s^2 scores out of every strategy, so each step up the ladder stores less
    # (with >= 2 layers per stage: a reversible pair keeps two streams where a checkpoint keeps one).
    plan = lambda x: TrainPlan(tp=tp, pp=pp, sp=sp, seq_len=s, micro_batch=b, global_batch=m * b,  # noqa: E731
                               recompute=x)
    acts = [float(train_memory(L8, plan(x), 80e9, TrainBytes(flash=True)).activations_bytes)
            for x in ("none", "selective", "full", "reversible")]
    assert all(a >= b_ for a, b_ in zip(acts, acts[1:]))
    # Without FlashAttention, selective recompute never stores more than none.
    assert (float(train_memory(L8, plan("selective"), 80e9).activations_bytes)
            <= float(train_memory(L8, plan("none"), 80e9).activations_bytes))


def test_gpipe_holds_more_than_1f1b_and_interleaved_sits_between():
    kw = dict(seq_len=4096, micro_batch=1, global_batch=32, pp=8, recompute="selective")  # 32 micro-batches
    g, o = (float(train_memory(L8, TrainPlan(schedule=x, **kw), 80e9).act_stored_bytes) for x in ("gpipe", "1f1b"))
    i = float(train_memory(L8, TrainPlan(schedule="interleaved", virtual_stages=2, **kw), 80e9).act_stored_bytes)
    assert g == pytest.approx(o * 32 / 8) and o < i < g
    # Korthikanti §4.2.3: interleaving stores L(1 + (p-1)/(p·v)) layers' worth vs L for 1F1B.
    assert i / o == pytest.approx(1 + 7 / 16)


def test_a_plan_that_does_not_fit_names_the_term():
    st_ = train_step(model("llama-3.1-70b"), hardware("h100-sxm"),
                     TrainPlan(dp=8, seq_len=2048, global_batch=64, recompute="full"))
    assert not bool(st_.fits) and np.isnan(float(st_.step_s))
    msg = overflow_message(st_.memory)
    # 70.6e9 params x 2 B of bf16 weights = 141 GB on every chip without ZeRO-3 / TP / PP.
    assert msg.startswith("does not fit: weights is the largest term (141.1 GB alone exceeds HBM") and "85.52 GB usable" in msg
    st2 = train_step(model("llama-3.1-8b"), hardware("h100-sxm"),
                     TrainPlan(dp=8, seq_len=32768, global_batch=64, recompute="none"))
    assert "activations is the largest term" in overflow_message(st2.memory)


def test_dualpipe_holds_two_stages_and_one_more_micro_batch():
    # DeepSeek-V3 report Table 2: DualPipe keeps 2x the parameters (each rank holds stage i and stage p-1-i) and
    # PP+1 micro-batches of activations where 1F1B keeps PP.
    kw = dict(seq_len=4096, micro_batch=1, global_batch=64 * 8, pp=16, dp=8, recompute="selective")  # 64 each
    one = train_memory(L8, TrainPlan(schedule="1f1b", **kw), 80e9)
    two = train_memory(L8, TrainPlan(schedule="dualpipe", **kw), 80e9)
    for f in ("weights_bytes", "gradients_bytes", "optimizer_bytes"):
        assert float(getattr(two, f)) == pytest.approx(2 * float(getattr(one, f)))
    assert float(two.act_stored_bytes) == pytest.approx(float(one.act_stored_bytes) * 17 / 16)


def test_module_recompute_drops_norms_up_projections_and_swiglu_outputs():
    # DeepSeek-V3 §3.2.3 / §3.3.3 (Megatron-Core --recompute-modules layernorm mla_up_proj moe_act): per token of an
    # MoE layer the norms' 2·D, MLA's up-projected q, k, v (H·(2·192 + 128)) and one F of each SwiGLU (k routed
    # copies + the shared expert) are no longer stored; the latents and everything else are.
    from tokenomy.core.memory import layer_bytes_per_token

    m = model("deepseek-v3")
    ly = m.layers[-1]
    a, mlp = ly.attention, ly.mlp
    sel = float(layer_bytes_per_token(ly, m.hidden_size, 4096, Stored(strategy="selective", act_bytes=1.0)))
    mod = float(layer_bytes_per_token(ly, m.hidden_size, 4096, Stored(strategy="modules", act_bytes=1.0)))
    dropped = (ly.norms * m.hidden_size + a.num_heads * (2 * a.head_dim + a.v_head_dim)
               + (mlp.experts_per_tok * mlp.expert_intermediate_size
                  + mlp.num_shared_experts * mlp.shared_intermediate_size))
    assert sel - mod == pytest.approx(dropped)
