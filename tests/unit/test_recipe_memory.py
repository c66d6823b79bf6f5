"""What published recipes store, by hand: torchtitan's op-level selective checkpointing (core/op_sac.py), FP8 GEMM
inputs kept quantized (core/memory.with_gemm_inputs), the loss's bytes per logit."""

import pytest

from tokenomy.catalog.loader import hardware, model
from tokenomy.core.deployment import Deployment
from tokenomy.core.memory import Stored, TrainBytes, layer_bytes_per_token, train_memory, with_gemm_inputs
from tokenomy.core.training import TrainPlan, train_flops_per_token

L8 = model("llama-3.1-8b")
D, F, KV, H = 4096, 14336, 8 * 128, 32


def test_op_policy_keeps_every_other_mm_and_the_attention_output_by_hand():
    # torchtitan parallelize_llama.py (9dec370): mms q, k, v, o, w1, w3, w2 in forward order; the 1st, 3rd, 5th and
    # 7th are saved (q: D, v: 8·128, w1: F, w2: D), with the SDPA output (D) and its fp32 log-sum-exp (4 B per
    # head), and the block's input (D); bf16.
    per_tok = 2 * (D + D + KV + F + D + D) + 4 * H
    assert float(layer_bytes_per_token(L8.layers[0], D, 8192, Stored(strategy="op"))) == per_tok
    # less than Korthikanti's selective (which keeps every GEMM input and the SwiGLU's three F)
    assert per_tok < float(layer_bytes_per_token(L8.layers[0], D, 8192, Stored(strategy="selective", flash=True)))


def test_op_policy_recomputes_k_o_and_w3_and_never_the_attention():
    dep = Deployment(L8, hardware("h100-sxm"))
    op = train_flops_per_token(dep, 8192, strategy="op")
    # every-second mms: k (D x 8·128), o (D x D), w3 (D x F), 2 FLOPs per multiply-add, 32 layers
    by_hand = 32 * 2 * (D * KV + D * D + D * F)
    assert float(op.recompute) == pytest.approx(by_hand, rel=1e-12)
    # what the chips run a token: 3·(2·N + causal attention) + the recompute, by hand — N the weights a token
    # multiplies (q, k, v, o, w1, w2, w3 and the RMSNorm gains of 32 layers, the final norm, the LM head), causal
    # attention 4·L·H·d·(s + 1)/2 at s = 8192 (the SDPA output saved: none of it repeated)
    n = 32 * (D * (D + 2 * KV + D) + 3 * D * F + 2 * D) + D + D * 128256
    attention = 4 * 32 * H * 128 * (8192 + 1) / 2
    assert float(op.hardware) == pytest.approx(3 * (2 * n + attention) + by_hand, rel=1e-9)


def test_op_policy_is_refused_where_it_is_not_defined():
    with pytest.raises(ValueError, match=r"^recompute: op"):
        train_memory(model("deepseek-v3"), TrainPlan(recompute="op", seq_len=4096, global_batch=1), 192e9)


def test_quantized_gemm_inputs_follow_the_recipe():
    b = TrainBytes()
    assert with_gemm_inputs(b, "fp8", "fused").gemm_input_bytes == 1.0  # Transformer Engine: saved FP8 copy
    assert with_gemm_inputs(b, "fp4", "fused").gemm_input_bytes == 0.5 + 1 / 16  # NVFP4: 4 bits + a scale per 16
    assert with_gemm_inputs(b, "fp8", "tensorwise").gemm_input_bytes == 2.0  # torchao saves the bf16 input
    assert with_gemm_inputs(b, "bf16", "fused").gemm_input_bytes == 2.0
    assert with_gemm_inputs(TrainBytes(act_bytes=1.0), "fp4", "fused").gemm_input_bytes == 0.5625
    assert with_gemm_inputs(TrainBytes(gemm_input_bytes=2.0), "fp8", "fused").gemm_input_bytes == 2.0  # stated


def test_fp8_gemm_inputs_of_a_deepseek_v3_layer_by_hand():
    # Per token of an MoE layer, the GEMM inputs: attention input D, the q and kv latents, the attention output
    # (input of the output projection) H·dv, the MLP input D, the shared expert's SwiGLU output, and per routed copy
    # (k of them) the dispatched token D and its SwiGLU output F_e. At 1 B instead of 2 each saves one byte.
    m = model("deepseek-v3")
    ly = m.layers[-1]
    a, mlp = ly.attention, ly.mlp
    Dm = m.hidden_size
    gemm_elems = (Dm + a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim + a.num_heads * a.v_head_dim + Dm
                  + mlp.num_shared_experts * mlp.shared_intermediate_size
                  + mlp.experts_per_tok * (Dm + mlp.expert_intermediate_size))
    bf16 = float(layer_bytes_per_token(ly, Dm, 4096, Stored(flash=True)))
    fp8 = float(layer_bytes_per_token(ly, Dm, 4096, Stored(flash=True, gemm_bytes=1.0)))
    assert bf16 - fp8 == pytest.approx(gemm_elems)


def test_logit_bytes_scale_the_last_stages_logits():
    plan = TrainPlan(seq_len=8192, micro_batch=2, global_batch=2, recompute="op")
    four, ten = (float(train_memory(L8, plan, 96e9, TrainBytes(flash=True, logit_bytes=x)).logits_bytes)
                 for x in (4.0, 10.0))
    assert four == 4.0 * 2 * 8192 * L8.vocab_size and ten == pytest.approx(2.5 * four)


def test_offloaded_layers_leave_hbm_but_one_in_flight():
    # Megatron-Core cpu_offloading_num_layers: n of the stage's layers keep their activations on the host; the layer
    # whose copy is in flight stays (min(n, 1)); no offload changes nothing, and n never exceeds the stage.
    L70 = model("llama-3.1-70b")
    plan = lambda n: TrainPlan(dp=64, zero=3, seq_len=8192, micro_batch=2, global_batch=128,  # noqa: E731
                               recompute="none", offload_layers=n)
    acts = {n: float(train_memory(L70, plan(n), 186e9, TrainBytes(flash=True)).act_stored_bytes)
            for n in (0, 40, 80, 200)}
    assert acts[40] == pytest.approx(acts[0] * 41 / 80) and acts[80] == pytest.approx(acts[0] / 80)
    assert acts[200] == acts[80]
    with pytest.raises(ValueError, match=r"^offload_layers"):
        TrainPlan(offload_layers=-1)
