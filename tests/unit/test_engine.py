"""The one pass engine: invariants (hypothesis), the corrections of issue 12, every reason, hand arithmetic."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenomy.arch.params import count_params
from tokenomy.catalog import loader
from tokenomy.core import engine
from tokenomy.core.deployment import Deployment
from tokenomy.core.efficiency import ROOFLINE
from tokenomy.core.engine import REASONS, why_not
from tokenomy.core.layout import Layout


def dep(model, hardware, layout=Layout(), **kw):
    m = _odd_kv() if model == ODD_KV else loader.model(model)
    return Deployment(m, loader.hardware(hardware), layout, **kw)


def test_tp_over_all_kv_heads_equals_the_even_split():
    # Llama-3.1-70B has 8 KV heads, so tp 8 splits weights, KV and work exactly 8 ways: the ideal even split over
    # 8 chips gives the same compute, memory and memory per chip; only the real layout pays all-reduces.
    B, C = np.array([1.0, 16.0, 256.0]), 4096.0
    r = dep("llama-3.1-70b", "hgx-h100-8", Layout(tp=8)).run(B, C)
    s = dep("llama-3.1-70b", "hgx-h100-8", Layout.even_split(8)).run(B, C)
    for k in ("compute_s", "memory_s", "memory_per_chip_bytes", "weight_bytes_per_chip", "kv_bytes_per_chip"):
        assert np.allclose(getattr(r, k), getattr(s, k), rtol=1e-12), k
    assert np.all(r.tp_comm_s > 0) and np.all(s.comms_s == 0)
    assert np.allclose(r.step_s, s.step_s + r.comms_s)


@settings(max_examples=40, deadline=None)
@given(tp=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2, 4]), dp=st.sampled_from([1, 2]),
       b=st.sampled_from([16, 64]), prefill=st.booleans())
def test_flops_conserved_under_splits_dense(tp, pp, dp, b, prefill):
    # Dense model, roofline: Σ over chips and micro-batches of per-chip FLOPs = the pass's FLOPs, whatever the split
    # (Llama-3.1-8B: 32 layers, 32 heads, 8 KV heads).
    d = dep("llama-3.1-8b", "gb200-nvl72", Layout(tp, 1, pp, dp))
    S = 64.0 if prefill else 1.0
    r = d.run(float(b * dp * pp), 2048.0, S)
    assert int(r.reason) == 0
    assert float(r.compute_s) * d.peaks.flops_per_s * d.chips * pp == pytest.approx(float(r.flops), rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(ep=st.sampled_from([2, 4, 8, 16, 32]), T=st.sampled_from([1, 4, 64, 4096]))
def test_busiest_expert_rank_carries_at_least_the_average(ep, T):
    # The step waits for the busiest EP rank: its assignments and experts read are >= the mean share, and it reads
    # at least one expert whenever a token is routed (the mean share at T=1 is k/ep < 1 expert).
    d = dep("qwen3-30b-a3b", "gb200-nvl72", Layout(ep=ep, attn_dp=False))
    w = d.work(float(T), 2048.0)
    c = d.shape.coeffs
    mean_read = c.num_experts * -np.expm1(T * np.log1p(-c.experts_per_tok / c.num_experts)) / ep
    assert float(w.experts_read) >= mean_read * (1 - 1e-12)
    assert float(w.experts_read) >= min(1.0, c.num_experts / ep) - 1e-12
    assert float(w.expert_flops) >= T * c.experts_per_tok / ep * 2 * c.expert_params * c.moe_layers * (1 - 1e-12)


def test_mla_attention_per_token_never_falls_with_pass_length():
    # Issue 12 (1): at len_pass 2 the old engine charged DeepSeek-V3 41 GF of attention per token vs 139 GF at
    # len_pass 1 (the plain form without expanding the cached latents). Per new token it can only rise or stay.
    d = dep("deepseek-v3", "hgx-h200-8", Layout(tp=8))
    S = np.array([1.0, 2.0, 4.0, 8.0, 64.0])
    C = 8192.0
    per_tok = d.run(64.0, C, S, eff=ROOFLINE).attention_flops / (64.0 * S)
    assert per_tok[0] == pytest.approx(61 * 2 * 128 * (2 * 512 + 64) * C, rel=1e-9)  # 139 GF
    # per attended position (the j-th of S new tokens sees C - S + j positions: C - (S-1)/2 on average)
    per_pos = per_tok / (C - (S - 1) / 2)
    assert np.all(per_pos >= per_pos[0] * (1 - 1e-12))


def test_fp8_on_a100_runs_bf16_math():
    # Issue 12 (3): no fp8 tensor cores on A100: fp8 weights multiply at the bf16 312 TF, never int8's 624 TOPS.
    chip = loader.hardware("a100-80gb-sxm").chip
    assert chip.flops_for("fp8") == ("bf16", 312e12)
    assert chip.flops_for("fp4")[0] == "bf16"
    assert loader.hardware("gb300").chip.flops_for("int8")[1] > 1e15  # not its 0.15 PF int8 units


def test_deepseek_ep144_with_32_redundant_experts_hand_arithmetic():
    # DeepSeek's published decode layout (inference-system overview, 2025-03): EP 144, attention DP 144, 32
    # redundant experts, 2 routed experts per GPU. Memory per chip by hand: every non-expert weight (attention
    # DP replicates them) + 2 expert slots x 58 MoE layers, at the checkpoint's bytes, + KV of its sequences.
    m = loader.model("deepseek-v3")
    d = Deployment(m, loader.hardware("hgx-h100-8"), Layout(ep=144, redundant_experts=32), kv_dtype="fp8")
    B, C = 144.0 * 16, 4096.0
    r = d.run(B, C)
    assert int(r.reason) == 0
    p, q = count_params(m), d.precision
    moe = [layer.mlp for layer in m.layers if layer.mlp.kind == "moe"]
    expert = moe[0].expert_params(m.hidden_size)
    dense = p.total - p.expert_total - p.embed - (0 if m.tie_word_embeddings else p.head)
    weights = dense * q.dense_w + (p.embed + p.head) * q.embed_w + 2 * len(moe) * expert * q.expert_w
    kv = 16 * C * 61 * 576 * 1.0  # 16 sequences per GPU, 576 latent + rope elements per layer, fp8
    assert float(r.weight_bytes_per_chip) == pytest.approx(weights, rel=1e-9)
    assert float(r.kv_bytes_per_chip) == pytest.approx(kv, rel=1e-9)


def test_deepseek_batch1_decode_is_memory_bound_calibrated_everywhere():
    # Issue 12 (2): a batch-1 decode step reads the weights of 8 experts per layer and its GEMMs have 1 row (per
    # expert too). Under the calibrated set on every chip it must be memory-bound; the old engine said compute-bound
    # (30 ms of compute on 8 x H200). Each chip gets the best layout over the fewest of 8/16/32/64 chips that holds it.
    from tokenomy.answers.resolve import efficiency_of
    from tokenomy.answers.layout_search import best_layout

    m = loader.model("deepseek-v3")
    for name in loader.chip_names():
        hw = loader.hardware(name)
        d = Deployment(m, hw, eff=efficiency_of(hw), kv_dtype="fp8")
        for n in (8, 16, 32, 64):
            lay, _ = best_layout(d, n, 1.0, 4096.0)
            r = d.with_(layout=lay).run(1.0, 4096.0)
            if int(r.reason) == 0:
                break
        assert int(r.reason) == 0, name
        # the engine's MoE kernel computes each expert read in whole tiles (16 rows, Triton fused_moe): on a chip
        # whose FP8 balance rows are no more than twice that (an H20: 296 TFLOP/s over 4 TB/s, ~17 rows), those
        # tiles cost about the read, and the step sits near the balance, not 20x past it as before. Within 25%, not
        # 10%: the K-loop's fill and epilogue (arch/gemm_depth: TP8 splits each expert's down-projection to K = 256)
        # are charged as FLOPs at the DeepGEMM H800 anchor's ratio, which a chip with 6.7x slower tensor cores pays
        # 6.7x longer (1.21x on the H20); where the fill is load latency, not tensor-core work, that overstates it
        e = d.eff.at_compute(d.peaks.narrow)
        balance = e.balance_rows(d.peaks.flops_per_s, d.peaks.hbm_bytes_per_s, 1.0)
        if balance > 2 * d.eff.expert_tile_rows:
            assert float(r.memory_s) > float(r.compute_s), (name, lay.label())
        else:
            assert float(r.compute_s) < 1.25 * float(r.memory_s), (name, lay.label(), balance)


def _odd_kv():
    # 40 query heads, 8 KV heads (as Qwen2.5-14B): tp 20 divides the heads but neither divides the other's KV split
    cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 5120, "intermediate_size": 13824,
           "num_hidden_layers": 4, "num_attention_heads": 40, "num_key_value_heads": 8, "vocab_size": 32000,
           "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}
    return loader.model_from_dict(cfg, "odd-kv")


ODD_KV = "odd-kv"


def test_every_reason():
    L = ("llama-3.1-70b", "hgx-h100-8")
    cases = [  # (model, hardware, layout, batch, len_pass, expected reason)
        (*L, Layout(ep=2), 64, 1, 1),
        (*L, Layout(tp=1, redundant_experts=4), 64, 1, 1),
        ("deepseek-v3", "gb200-nvl72", Layout(ep=72), 1024, 1, 2),
        (*L, Layout(tp=3), 64, 1, 3),
        ("qwen3-30b-a3b", "hgx-h100-8", Layout(tp=4, ep=1), 64, 1, 0),
        (ODD_KV, "gb200-nvl72", Layout(tp=20), 64, 1, 4),
        (*L, Layout(pp=81), 1024, 1, 5),
        (*L, Layout(tp=8), 1.5, 1, 6),
        (*L, Layout(tp=8, pp=4), 2, 1, 7),
        (*L, Layout(tp=8, pp=4, microbatches=2), 64, 1, 8),
        (*L, Layout(tp=1), 64, 1, 9),
        (*L, Layout(tp=8, pp=4, microbatches=1), 1, 8192, 0),  # prefill may use fewer micro-batches
    ]
    for model, hw, lay, B, S, want in cases:
        r = dep(model, hw, lay).run(float(B), 8192.0, float(S))
        assert int(r.reason) == want, (model, lay, REASONS[want], REASONS[int(r.reason)])
        msg = why_not(r, lay, 0)
        if want:
            assert msg and np.isnan(r.step_s) and np.isnan(r.tokens_per_s)
            assert REASONS[want] in msg or "usable HBM" in msg
        else:
            assert msg is None and np.isfinite(r.step_s)


def test_whole_sequences_on_the_busiest_replica():
    # 3 sequences on dp 2: the busiest replica holds 2, so the step is that of batch 2 on one replica.
    d3 = dep("llama-3.1-8b", "hgx-h100-8", Layout(tp=4, dp=2)).run(3.0, 2048.0)
    d2 = dep("llama-3.1-8b", "hgx-h100-8", Layout(tp=4, dp=1)).run(2.0, 2048.0)
    assert float(d3.step_s) == pytest.approx(float(d2.step_s))
    assert float(d3.tokens_per_s) == pytest.approx(3.0 / float(d3.step_s))


def test_labels():
    assert Layout(tp=8).label() == "tp8 ep1 pp1 dp1"
    assert Layout(ep=64, pp=4).label() == "tp1 ep64 pp4 dp1 attn-dp"
    assert Layout(tp=2, ep=4, attn_dp=False, kv_batch=True).label() == "tp2 ep4 pp1 dp1 attn-tp kv-batch"
    assert Layout(ep=144, redundant_experts=32).label() == "tp1 ep144 pp1 dp1 attn-dp +32 redundant experts"
    assert "no layout reaches it" in Layout.even_split(72).label()
    assert Layout(tp=np.array([[1], [8]])).at((2, 3), 4).label() == "tp8 ep1 pp1 dp1"


def test_prefill_pipeline_fill_and_drain():
    # prefill of M micro-batches over P stages: (M + P - 1)·t_stage + (P - 1)·t_hop.
    r = dep("llama-3.1-70b", "hgx-h100-8", Layout(tp=8, pp=2, microbatches=4)).run(8.0, 2048.0, 2048.0)
    assert float(r.step_s) == pytest.approx(5 * float(r.stage_s) + float(r.hop_s))
    assert int(r.hops) == 1


def test_head_sharded_kv_replicates_beyond_kv_heads():
    # 8 KV heads: tp 16 cannot split KV further (each K/V head lives on 2 chips); batch-sharding can.
    lay = Layout(tp=np.array([8, 16, 16]), kv_batch=np.array([False, False, True]))
    kv = dep("llama-3.1-70b", "gb200-nvl72", lay).run(64.0, 8192.0).kv_bytes_per_chip
    assert kv[1] == pytest.approx(kv[0]) and kv[2] == pytest.approx(kv[0] / 2)


def test_attention_dp_replicates_dense_weights():
    r = dep("deepseek-v3", "gb200-nvl72", Layout(ep=8, attn_dp=np.array([True, False]))).run(64.0, 8192.0)
    w, kv = r.weight_bytes_per_chip, r.kv_bytes_per_chip
    assert w[0] > w[1] and kv[0] == pytest.approx(kv[1] / 8)
    assert float(r.ep_comm_s[0]) > 0 and float(r.ep_comm_s[1]) == 0 and float(r.tp_comm_s[1]) > 0


def test_calibrated_is_slower_than_its_bound():
    from tokenomy.answers.resolve import efficiency_of

    hw = loader.hardware("hgx-h100-8")
    d = Deployment(loader.model("llama-3.1-70b"), hw, Layout(tp=8), eff=efficiency_of(hw))
    B = np.array([1.0, 8.0, 64.0, 512.0])
    assert np.all(d.run(B, 2048.0).step_s > d.run(B, 2048.0, eff=ROOFLINE).step_s)
    assert engine.BOUNDS[int(d.run(512.0, 2048.0).bound[()])] in engine.BOUNDS


def test_the_per_sequence_host_term_counts_the_busiest_schedulers_sequences():
    # o_seq is host work per running sequence of one scheduler: b sequences on a tp layout, b/ep on each
    # attention-DP rank (each runs its own scheduler) — not the whole batch
    o_seq = 1e-5
    B = np.array([1.0, 64.0])
    extra = _added("llama-3.1-8b", "h100-sxm", Layout(tp=1), B, "overhead_s", sequence_overhead_s=o_seq)
    assert np.allclose(extra, o_seq * B, rtol=1e-12)
    extra = _added("qwen3-30b-a3b", "hgx-h100-8", Layout(tp=1, ep=8), B, "overhead_s",  # attention-DP, 8 ranks
                   sequence_overhead_s=o_seq)
    assert np.allclose(extra, o_seq * np.ceil(B / 8), rtol=1e-12)


def _added(model, hardware, layout, B, term, **eff):
    """What the roofline's ``term`` gains at batches ``B`` (2048 context) when ``eff`` sets a term."""
    from dataclasses import replace
    d = dep(model, hardware, layout)
    return getattr(d.run(B, 2048.0, eff=replace(ROOFLINE, **eff)), term) - getattr(d.run(B, 2048.0), term)


def test_an_overlap_scheduler_hides_host_time_under_the_gpu_step():
    # h = 0: host time adds to the GPU's step; h = 1: the step is max(GPU, host) (SGLang's zero-overhead scheduler,
    # TensorRT-LLM's overlap scheduler): o_step = 1 ms hides under a 70B TP8 step of ~6 ms, and shows where the
    # host exceeds the GPU (o_step = 50 ms)
    from dataclasses import replace
    d = dep("llama-3.1-70b", "hgx-h100-8", Layout(tp=8))
    B = np.array([1.0, 64.0])
    gpu = d.run(B, 2048.0).step_s
    serial = d.run(B, 2048.0, eff=replace(ROOFLINE, overhead_s=1e-3)).step_s
    hidden = d.run(B, 2048.0, eff=replace(ROOFLINE, overhead_s=1e-3, host_overlap=1.0)).step_s
    assert np.allclose(serial - gpu, 1e-3, rtol=1e-9)
    assert np.allclose(hidden, gpu, rtol=1e-12)
    slow = d.run(B, 2048.0, eff=replace(ROOFLINE, overhead_s=5e-2, host_overlap=1.0))
    assert np.allclose(slow.step_s, 5e-2, rtol=1e-12) and np.all(slow.bound == engine.BOUNDS.index("overhead"))


def test_two_batch_overlap_hides_dispatch_and_combine_up_to_the_kernels():
    # ε = 1: two micro-batches, each streaming the weights and launching every kernel (2·W read, 2·K·κ), and one's
    # dispatch + combine under the other's kernels: ep − min(ep, max(compute, memory)) left exposed; TP comms untouched
    from dataclasses import replace
    d = dep("qwen3-30b-a3b", "hgx-h100-8", Layout(tp=1, ep=8))
    B = np.array([8.0, 256.0])
    kappa = replace(ROOFLINE, kernel_overhead_s=1e-6)
    full, tbo = d.run(B, 2048.0, eff=kappa), d.run(B, 2048.0, eff=replace(kappa, ep_overlap=1.0))
    kernels = np.maximum(tbo.compute_s, tbo.memory_s)
    assert np.all(full.ep_comm_s > 0)
    assert np.allclose(tbo.ep_comm_s, full.ep_comm_s - np.minimum(full.ep_comm_s, kernels), rtol=1e-12)
    assert np.allclose(tbo.weights_read_s, 2 * full.weights_read_s, rtol=1e-12)
    assert np.allclose(tbo.overhead_s, 2 * full.overhead_s, rtol=1e-12)  # the floor only: no host time here
    assert np.allclose(tbo.tp_comm_s, full.tp_comm_s)


def test_two_batch_overlap_leaves_the_sms_its_communication_holds_exposed():
    # under ε = 1: the low-latency kernels (a decode pass) hold every SM for a share s_ll of their time, which
    # serialises: ep − min((1 − s_ll)·ep, kernels); the normal kernels (a prefill pass) hold s_n of the SMs for the
    # whole layer, the kernels running on the rest: the pair takes max(ep, kernels/(1 − s_n))
    from dataclasses import replace
    d = dep("qwen3-30b-a3b", "hgx-h100-8", Layout(tp=1, ep=8))
    base = replace(ROOFLINE, ep_overlap=1.0)
    shares = replace(base, ep_sm_normal=0.15, ep_sm_low_latency=0.35)
    decode, prefill = (np.array([8.0, 256.0]), 2048.0, 1), (np.array([2.0, 8.0]), 4096.0, 4096)
    for args in (decode, prefill):
        ep = d.run(*args, eff=replace(base, ep_overlap=0.0)).ep_comm_s
        r = d.run(*args, eff=shares)
        k = np.maximum(r.compute_s, r.memory_s)
        assert np.all(ep > 0)
        if args is decode:
            assert np.allclose(r.ep_comm_s, ep - np.minimum(0.65 * ep, k), rtol=1e-12)
        else:
            assert np.allclose(k + r.ep_comm_s, np.maximum(ep, k / 0.85), rtol=1e-12)
        assert np.all(r.ep_comm_s > d.run(*args, eff=base).ep_comm_s)  # more exposed than with the SMs free


def test_two_batch_overlap_halves_each_micro_batchs_gemm_rows():
    # a dense model: every weight GEMM's rows are the tokens, so under ε = 1 the compute at B is twice a pass's at
    # B/2 (attention's rows are per sequence, the same in both)
    from dataclasses import replace
    d = dep("llama-3.1-8b", "hgx-h100-8", Layout(tp=1))
    eff = replace(ROOFLINE, gemm_half_tokens=128.0)
    B = np.array([16.0, 64.0, 512.0])
    tbo = d.run(B, 512.0, eff=replace(eff, ep_overlap=1.0))
    assert np.all(np.isfinite(tbo.compute_s))
    assert np.allclose(tbo.compute_s, 2 * d.run(B / 2, 512.0, eff=eff).compute_s, rtol=1e-9)
    assert tbo.compute_s[-1] > 1.1 * d.run(B, 512.0, eff=eff).compute_s[-1]  # 256 rows a GEMM, not 512



def test_latent_moe_dispatches_its_latent_width():
    """Nemotron-3-Super projects tokens from hidden 4,096 to moe_latent_size 1,024 before the EP dispatch and back
    after the combine (Megatron-Core moe_layer.py fc1_latent_proj / fc2_latent_proj): the all-to-all moves a quarter
    of what the hidden state would, nothing else changes."""
    from dataclasses import replace

    from tokenomy.core.layout import Layout

    m = loader.model("nemotron-3-super-120b-a12b")
    moe = next(ly.mlp for ly in m.layers if ly.mlp.kind == "moe")
    assert moe.dispatch_size == 1024 and m.hidden_size == 4096
    wide = replace(m, layers=tuple(replace(ly, mlp=replace(ly.mlp, dispatch_size=0)) if ly.mlp.kind == "moe" else ly
                                   for ly in m.layers))
    hw = loader.hardware("gb200-nvl72")
    lay = Layout(ep=8, dp=8, attn_dp=True)
    lat, full = (Deployment(x, hw, layout=lay).work(8, 1024.0, 1024.0) for x in (m, wide))
    assert float(np.ravel(lat.ep_bytes)[0]) == pytest.approx(float(np.ravel(full.ep_bytes)[0]) / 4)
    assert float(np.ravel(lat.flops)[0]) == pytest.approx(float(np.ravel(full.flops)[0]))
