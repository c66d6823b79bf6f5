"""Indexed sparse and compressed attention: DeepSeek-V3.2 and GLM-5 (DSA), DeepSeek-V4 (CSA / HCA + hyper-connections).

Each adapter states its formulas and the config fields it reads; families/__init__.py lists the modules.
Sources: DeepSeek-V3.2-Exp reference code (github.com/deepseek-ai/DeepSeek-V3.2-Exp, inference/model.py, class
Indexer) and report (arXiv 2512.02556, eq. 1-2); DeepSeek-V4 reference code (inference/model.py of the V4 release:
classes Attention, Compressor, Indexer, Gate, Block, ParallelHead, MTPBlock) and model card (CSA + HCA, mHC,
FP4 experts + FP8 linears); transformers' GlmMoeDsa (its indexer is DeepSeek-V3.2's, cross-layer sharing by
``indexer_types``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from tokenomy.arch.hf import ConfigError, _base, _Cfg, deepseek
from tokenomy.arch.model import Attention, Layer, Mlp, ModelArch, Quantization


def _dsa_indexer_params(D: int, q_lora_rank: int, n: int, d: int) -> int:
    """DSA lightning indexer of one layer (V3.2 inference/model.py, class Indexer):
    wq_b r_q·n·d (index queries from the MLA query latent) + wk D·d (one shared index key) + k_norm LayerNorm 2·d
    (weight and bias) + weights_proj D·n (per-head weights w_{t,j} of eq. 1)."""
    return q_lora_rank * n * d + D * d + 2 * d + D * n


def _with_dsa(c: _Cfg, m: ModelArch, indexed: list[bool]) -> ModelArch:
    """MLA layers of ``m`` plus the DSA indexer: index_n_heads x index_head_dim queries score every cached entry
    against one cached index key of index_head_dim; the core attends index_topk entries. ``indexed[i]`` False: the
    layer reuses an earlier layer's selection (GLM ``indexer_types`` "shared"): top-k, but no indexer of its own."""
    D, r = m.hidden_size, c.pos("q_lora_rank")
    n, d, k = c.pos("index_n_heads"), c.pos("index_head_dim"), c.pos("index_topk")
    layers = []
    for layer, own in zip(m.layers, indexed):
        a = layer.attention
        extra = _dsa_indexer_params(D, r, n, d) if own else 0
        a = replace(a, index_topk=k, index_n_heads=n if own else 0, index_head_dim=d if own else 0,
                    explicit_params=a.params(D) + extra, variant="dsa" if own else "dsa_shared")
        layers.append(replace(layer, attention=a))
    return replace(m, layers=tuple(layers), mtp_layers=c.opt("num_nextn_predict_layers", 0))


def deepseek_v32(c: _Cfg, name: str) -> ModelArch:
    """DeepseekV32: DeepSeek-V3 (hf.deepseek: MLA + 3 dense + 256/1 experts top-8) with DSA in every layer.

    Per layer the indexer adds r_q·n·d + D·d + 2·d + D·n weights (0.014B; 0.85B over 61 layers), which DeepSeek's
    671B (inherited from V3) leaves out and HF's 685B includes with the 14B MTP module. Cache per token per layer:
    kv_lora_rank + qk_rope_head_dim latent + index_head_dim index key (the index key cache is fp8 in the reference
    code; kv_bytes_at_context prices it at the cache dtype asked for).
    """
    m = deepseek(c, name)
    return _with_dsa(c, m, [True] * m.num_layers)


def _glm_indexer_types(c: _Cfg, L: int) -> list[bool]:
    """transformers' GlmMoeDsaConfig: ``indexer_types`` ("full"/"shared" per layer), else ``index_topk_pattern``
    ("F"/"S" per layer), else every ``index_topk_freq``-th layer from ``index_skip_topk_offset`` is full
    (default freq 1: every layer has its own indexer, as GLM-5's config, which sets none of them)."""
    types = c.opt("indexer_types", None)
    field = "indexer_types"
    if types is None and c.opt("index_topk_pattern", None) is not None:
        pattern, field = c.opt("index_topk_pattern", None), "index_topk_pattern"
        types = [{"F": "full", "S": "shared"}.get(ch, ch) for ch in pattern] if isinstance(pattern, str) else pattern
    if types is None:
        freq, offset = max(c.pos("index_topk_freq", 1), 1), c.opt("index_skip_topk_offset", 2)
        types = ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in range(L)]
    if not isinstance(types, list) or len(types) != L or any(t not in ("full", "shared") for t in types):
        raise ConfigError(f"config {c.name}: field '{field}' must list 'full' or 'shared' (F/S) for each of the "
                          f"{L} layers, got {types!r}")
    return [t == "full" for t in types]


def glm_moe_dsa(c: _Cfg, name: str) -> ModelArch:
    """GlmMoeDsa (GLM-5): DeepSeek-V3-shaped MLA + shared/routed MoE after first_k_dense_replace, with the
    DeepSeek-V3.2 DSA indexer (the card: "GLM-5 also integrates DeepSeek Sparse Attention"). GLM-5: 64 heads,
    q_lora 2048, kv_lora 512, nope 192 + rope 64, v 256; indexer 32 x 128, top-2048. The MTP layer is excluded."""
    m = deepseek(c, name)
    return _with_dsa(c, m, _glm_indexer_types(c, m.num_layers))


# DeepSeek-V4 layer kinds by compress_ratios entry (V4 inference/model.py, class Attention: ``if compress_ratio``
# a Compressor, ``if compress_ratio == 4`` also an Indexer): 0 sliding window only, 4 CSA, 128 HCA.
_V4_KINDS = {0: "swa", 4: "csa", 128: "hca"}


def _v4_compressor_params(D: int, r: int, d: int) -> int:
    """Compressor of ratio r to entries of d (V4 Compressor): ape r·c·d + wkv D·c·d + wgate D·c·d + norm d, with
    c = 2 for the overlapping r = 4 windows (two streams), 1 otherwise."""
    coff = 2 if r == 4 else 1
    return r * coff * d + 2 * D * coff * d + d


def _v4_hc_params(D: int, hc: int) -> int:
    """One mHC mixer (V4 Block: hc_*_fn (2+hc)·hc x hc·D, hc_*_base (2+hc)·hc, hc_*_scale 3): the pre, post and
    hc x hc combination weights of a sublayer computed from the hc·D-wide residual stream."""
    mix = (2 + hc) * hc
    return mix * hc * D + mix + 3


def _v4_attention(c: _Cfg, D: int, ratio: int) -> Attention:
    """One V4 attention layer. The single key-value head (num_key_value_heads 1, head_dim d = 512) is one cached
    vector per entry serving as key and value of all H heads (rope on its last qk_rope_head_dim dims, inverted on the
    output): the absorbed-MLA form with a d-wide latent, so kind "mla" with kv_lora_rank = d, no separate rope part
    (cache d per entry; q·k d + p·v d per head per entry). Weights:
        sinks H + wq_a D·r_q + q_norm r_q + wq_b r_q·H·d + wkv D·d + kv_norm d
        + wo_a H·d·o_rank (o_groups blocks of H·d/g -> o_rank) + wo_b g·o_rank·D
        + compressor (ratio > 0) + indexer (ratio 4: wq_b r_q·n·d_I + weights_proj D·n + its own ratio-4
          compressor to d_I-wide keys).
    Cache per sequence of context C: min(C, sliding_window) raw entries + C/ratio compressed ones (arch/positions.py);
    CSA layers also keep C/4 index keys of d_I."""
    H, d, K = c.pos("num_attention_heads"), c.pos("head_dim"), c.pos("num_key_value_heads")
    rq, ro, g, w = c.pos("q_lora_rank"), c.pos("o_lora_rank"), c.pos("o_groups"), c.pos("sliding_window")
    if K != 1:
        raise ConfigError(f"config {c.name}: field 'num_key_value_heads' must be 1 for deepseek_v4 (one shared "
                          f"key-value head), got {K}")
    if (H * d) % g:
        raise ConfigError(f"config {c.name}: field 'o_groups' must divide num_attention_heads·head_dim = {H * d}, "
                          f"got {g}")
    p = H + D * rq + rq + rq * H * d + D * d + d + H * d * ro + g * ro * D
    kw: dict = {}
    if ratio:
        p += _v4_compressor_params(D, ratio, d)
        kw["compress_ratio"] = ratio
    if ratio == 4:
        n, dI = c.pos("index_n_heads"), c.pos("index_head_dim")
        p += rq * n * dI + D * n + _v4_compressor_params(D, 4, dI)
        kw.update(index_topk=c.pos("index_topk"), index_n_heads=n, index_head_dim=dI)
    return Attention("mla", H, 1, d, d, window=w, q_lora_rank=rq, kv_lora_rank=d, qk_rope_head_dim=0,
                     explicit_params=p, variant=_V4_KINDS[ratio], **kw)


def deepseek_v4(c: _Cfg, name: str) -> ModelArch:
    """DeepseekV4 (V4-Pro 1.6T/49B, V4-Flash 284B/13B): every layer is attention ``compress_ratios[i]`` + MoE.

    ``compress_ratios`` has num_hidden_layers + num_nextn_predict_layers entries: the reference code builds
    ``MTPBlock(n_layers + j)`` and reads ``compress_ratios[layer_id]``, so the last entry (0: sliding window only)
    is the MTP block's; it is checked and left out with the MTP module.
    MoE (class MoE/Gate): n_routed_experts SwiGLU experts of moe_intermediate_size, num_experts_per_tok of them, one
    shared expert of the same width, router D·E (+ an E bias except in the first num_hash_layers layers, which route
    by token id through a fixed vocab x k table, tid2eid: an int lookup, not a weight, not counted).
    Hyper-connections (hc_mult = 4, mHC): the residual stream is hc·D wide; each block has two mixers
    (_v4_hc_params, counted in the layer's explicit_params since Layer has no field of its own; they also run as
    matmuls of 2·params FLOPs per token) and the head one more (hc·hc·D + hc + 1, in extra_params).
    Quantization (expert_dtype fp4; quantization_config fp8): routed experts FP4 e2m1 with one e8m0 scale per 32
    (the MXFP4 layout: 0.53125 B), other linears FP8 e4m3 (128x128 ue8m0 block scales), embedding / head bf16.
    """
    L, hc = c.pos("num_hidden_layers"), c.pos("hc_mult")
    D, mtp = c.pos("hidden_size"), c.opt("num_nextn_predict_layers", 0)
    ratios = c.req("compress_ratios")
    if not isinstance(ratios, list) or len(ratios) != L + mtp:
        raise ConfigError(f"config {c.name}: field 'compress_ratios' must list num_hidden_layers + "
                          f"num_nextn_predict_layers = {L + mtp} entries, got {ratios!r:.80}")
    for i, r in enumerate(ratios):
        if isinstance(r, bool) or r not in _V4_KINDS:
            raise ConfigError(f"config {c.name}: field 'compress_ratios[{i}]' = {r!r} not supported; allowed: "
                              f"{', '.join(f'{k} ({v})' for k, v in _V4_KINDS.items())}")
    E, k, Fe = c.pos("n_routed_experts"), c.pos("num_experts_per_tok"), c.pos("moe_intermediate_size")
    n_hash, hc_layer = c.opt("num_hash_layers", 0), 2 * _v4_hc_params(D, hc)
    layers = []
    for i in range(L):
        a = _v4_attention(c, D, ratios[i])
        a = replace(a, explicit_params=a.explicit_params + hc_layer)
        moe = Mlp("moe", num_experts=E, experts_per_tok=k, expert_intermediate_size=Fe,
                  num_shared_experts=c.pos("n_shared_experts"), shared_intermediate_size=Fe, router_bias=i >= n_hash)
        layers.append(Layer(a, moe))
    quant = _v4_quant(c)
    return replace(_base(c, name, layers), quantization=quant, mtp_layers=mtp, extra_params=hc * hc * D + hc + 1,
                   residual_streams=hc)


def _v4_quant(c: _Cfg) -> Quantization:
    expert = c.opt("expert_dtype", None)
    if expert not in (None, "fp4"):
        raise ConfigError(f"config {c.name}: field 'expert_dtype' = {expert!r} not supported; allowed: fp4 or absent")
    q = _base_quant_dense(c)
    if expert is None:
        return Quantization(q, q, "bf16")
    return Quantization(q, "mxfp4", "bf16", note="experts fp4 e2m1 + e8m0 scale per 32 (MXFP4 layout); other "
                        "linears " + q + "; mHC mixers, sinks, compressor gates fp32/bf16 in the checkpoint")


def _base_quant_dense(c: _Cfg) -> str:
    q = c.opt("quantization_config", None)
    if not q:
        return "bf16"
    if q.get("quant_method") != "fp8":
        raise ConfigError(f"config {c.name}: field 'quantization_config.quant_method' = {q.get('quant_method')!r} "
                          f"not supported for deepseek_v4; allowed: fp8")
    return "fp8"


ADAPTERS: dict[str, Callable[[_Cfg, str], ModelArch]] = {
    "deepseek_v32": deepseek_v32, "glm_moe_dsa": glm_moe_dsa, "deepseek_v4": deepseek_v4,
}
