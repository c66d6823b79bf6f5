"""Kernels one decoder layer launches in a forward step, by the kinds of its blocks: the count the per-kernel floor
κ (core/efficiency.py: the launch and tail time a kernel takes beyond its bytes and FLOPs under CUDA graphs) is
charged on. A deep MoE layer with MLA and an indexer launches ~4x a dense GQA layer's kernels, so a per-layer floor
fitted on dense models misses it (issue 25: GLM-5 FP8 on 8 B200 runs ~190 us a layer beyond its roofline at 4
users, a dense 70B ~50 us).

Counted on vLLM's decode path (the model files under vllm/model_executor/models/ and the layers they call), at
TP = 1: a TP > 1 layer's all-reduces are the engine's collectives, timed apart with their own latency.
    norm          1 a sublayer: residual add fused with RMSNorm (layers/layernorm.py fused_add_rms_norm)
    GQA/MHA/MQA   qkv GEMM, rotary, KV-cache write, attention, o GEMM = 5 (models/llama.py LlamaAttention;
                  reshape_and_cache_flash), + 1 for per-head q/k norms (models/qwen3.py)
    MLA           fused q_a/kv_a GEMM, q_a and kv_a norms, q_b GEMM, W_UK absorption, rotary, cache write, attention,
                  W_UV, o GEMM = 10 (models/deepseek_v2.py, attention/backends/mla)
    indexer (DSA) q GEMM, k GEMM + norm, rotary, FP8 quantize + cache write, logits, top-k = 6 (models/deepseek_v2.py
                  Indexer)
    linear / SSM  in_proj GEMM, conv1d, scan, gated norm, out_proj GEMM = 5 (layers/mamba/mamba_mixer2.py)
    dense MLP     gate_up GEMM, SiLU·mul, down GEMM = 3 (models/llama.py LlamaMLP)
    MoE           router GEMM, top-k, align/permute, grouped GEMM up, SiLU·mul, grouped GEMM down, unpermute and
                  reduce = 7 (layers/fused_moe), + a dense MLP's 3 for shared experts
Engines that fuse more (TensorRT-LLM's all-reduce + norm, rotary + cache write) launch a few fewer; κ is fitted on
each chip's cases across engines, so it carries their mean.
"""

from __future__ import annotations

from tokenomy.arch.model import Layer, ModelArch

NORM, DENSE_MLP, MOE = 1, 3, 7
ATTENTION = {"mha": 5, "gqa": 5, "mqa": 5, "mla": 10, "linear": 5}
QK_NORM, INDEXER = 1, 6


def layer_kernels(layer: Layer) -> int:
    """Kernels of one layer's forward (module docstring)."""
    a, mlp = layer.attention, layer.mlp
    attn = ATTENTION[a.kind] + (QK_NORM if a.qk_norm else 0) + (INDEXER if a.index_topk else 0)
    ffn = MOE + (DENSE_MLP if mlp.num_shared_experts else 0) if mlp.kind == "moe" else DENSE_MLP
    return layer.norms * NORM + attn + ffn


def model_kernels(m: ModelArch) -> int:
    """Kernels of every layer of ``m`` together (the per-step kernels outside the layers — embedding, final norm,
    LM head, sampling — are the host's and the step's, not counted here)."""
    return sum(layer_kernels(layer) for layer in m.layers)
