"""Adapters for Kimi-K2.5, MiniMax-M2.5/M3, Llama-4, Gemma-4 (MoE) and MiMo-V2-Flash (arch/families/__init__.py).

Each adapter reads only its config's own fields and names the field when one is missing, malformed or of a kind
we do not model (an unknown layer type is a ConfigError, never a fallback). Vision/audio towers are not counted:
they run once per image, not per generated token. Multi-token-prediction (MTP) modules go to
``ModelArch.mtp_layers`` and are excluded from the served count, as DeepSeek-V3 (arXiv 2412.19437 §4.2) does.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from tokenomy.arch import hf
from tokenomy.arch.hf import ConfigError, _Cfg
from tokenomy.arch.model import Attention, Layer, Mlp, ModelArch, Quantization


def _text(c: _Cfg, defaults: dict[str, Any] | None = None) -> _Cfg:
    """The nested ``text_config`` of a multimodal config (a new dict: the caller's config is never modified)."""
    t = c.req("text_config")
    if not isinstance(t, dict):
        raise ConfigError(f"config {c.name}: field 'text_config' must be an object")
    return _Cfg({**(defaults or {}), **t}, c.name)


def _per_layer(c: _Cfg, key: str, L: int, allowed: tuple, default: list | None = None) -> list:
    """A per-layer list field (layer_types, hybrid_layer_pattern, moe_layer_freq...): length L, values in allowed."""
    v = c.opt(key, None)
    v = default if v is None else v
    if not isinstance(v, list) or len(v) != L:
        raise ConfigError(f"config {c.name}: field '{key}' must be a list of {L} entries (one per layer), got {v!r}")
    for x in v:
        if isinstance(x, bool) or x not in allowed:
            raise ConfigError(f"config {c.name}: field '{key}' has {x!r}; allowed: {', '.join(map(str, allowed))}")
    return v


def _finish(m: ModelArch, outer: _Cfg, **kw: Any) -> ModelArch:
    """The outer (multimodal) model_type and tie flag on a model built from its text config."""
    return replace(m, model_type=outer.req("model_type"),
                   tie_word_embeddings=bool(outer.opt("tie_word_embeddings", m.tie_word_embeddings)), **kw)


# ---- Kimi-K2.5 ---------------------------------------------------------------------------------------------


def _compressed_tensors(c: _Cfg, q: dict[str, Any]) -> Quantization:
    """compressed-tensors (pack-quantized) weights: the bits of ``config_groups.*.weights`` for Linear layers that
    the ``ignore`` patterns do not exclude. Kimi-K2.5 ignores lm_head, self_attn, shared_experts and the dense MLPs,
    so only the routed experts are int4 (group 32, symmetric; the bf16 scale per 32 weights, +0.5 bit/weight, is
    not counted). Source: the config's quantization_config; Kimi-K2.5 card (hf.co/moonshotai/Kimi-K2.5, "native
    INT4")."""
    base = hf.checkpoint_dtype(c, "dtype" if c.opt("dtype", None) is not None else "torch_dtype")
    groups = q.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        raise ConfigError(f"config {c.name}: field 'quantization_config.config_groups' missing")
    w = next(iter(groups.values())).get("weights") or {}
    kind = {(4, "int"): "int4", (8, "int"): "int8", (8, "float"): "fp8", (4, "float"): "fp4"}.get(
        (w.get("num_bits"), w.get("type")))
    if kind is None:
        raise ConfigError(f"config {c.name}: field 'quantization_config.config_groups.weights' num_bits/type "
                          f"{w.get('num_bits')!r}/{w.get('type')!r} not supported; allowed: 4/int, 8/int, 8/float, 4/float")
    ignore = " ".join(q.get("ignore", []))
    dense = base if ("self_attn" in ignore and "shared_experts" in ignore) else kind
    embed = base if "lm_head" in ignore else kind
    return Quantization(dense, kind, embed, note=f"compressed-tensors {kind} group {w.get('group_size')} routed experts "
                                                 f"(scales not counted); ignored: {', '.join(q.get('ignore', []))}")


def kimi_k25(c: _Cfg, name: str) -> ModelArch:
    """KimiK25Config: ``text_config`` is kimi_k2 = DeepSeek-V3 (MLA + 384 routed / 1 shared experts), lowered by
    hf.deepseek; the MoonViT vision tower (vision_config, ~0.4B) is not counted. Weights: compressed-tensors int4
    routed experts (``_compressed_tensors``). Kimi-K2.5 card: 1T total, 32B activated, 256K context."""
    t = _text(c)
    q = t.d.pop("quantization_config", None)
    m = hf.deepseek(t, name)
    quant = _compressed_tensors(t, q) if q and q.get("quant_method") == "compressed-tensors" else (
        hf._quant(_Cfg({**t.d, "quantization_config": q}, c.name)))
    return _finish(m, c, quantization=quant, mtp_layers=t.opt("num_nextn_predict_layers", 0))


# ---- MiniMax-M2.5 / M3 -------------------------------------------------------------------------------------


def _minimax_attention(c: _Cfg) -> Attention:
    """GQA with QK-norm: ``qk_norm_type`` per_layer = one RMSNorm over the whole projected q (H·d) and k (K·d)
    (MiniMax-M2 modeling_minimax_m2.py: q_norm(H·d), k_norm(K·d) before the head split); per_head = 2·d."""
    att = hf._gqa(c, bias=bool(c.opt("attention_bias", False)))
    if c.opt("attention_output_gate", False):
        raise ConfigError(f"config {c.name}: field 'attention_output_gate' = true is not modelled")
    norm = 0
    if c.opt("use_qk_norm", False):
        kind = c.opt("qk_norm_type", "per_layer")
        if kind not in ("per_layer", "per_head"):
            raise ConfigError(f"config {c.name}: field 'qk_norm_type' {kind!r}; allowed: per_layer, per_head")
        H, K, d = att.num_heads, att.num_kv_heads, att.head_dim
        norm = (H + K) * d if kind == "per_layer" else 2 * d
    return replace(att, explicit_params=att.params(c.pos("hidden_size")) + norm, qk_norm=norm > 0)


def _mtp(c: _Cfg) -> int:
    return c.opt("num_mtp_modules", 0) if c.opt("use_mtp", True) else 0


def minimax_m2(c: _Cfg, name: str) -> ModelArch:
    """MiniMaxM2Config (MiniMax-M2/M2.1/M2.5): full GQA attention in every layer (no lightning/linear layers: the
    config has no attention-type list), 256 routed SwiGLU experts of ``intermediate_size``, top-8, sigmoid router
    with a correction bias (``use_routing_bias``), shared experts only if ``shared_intermediate_size`` > 0;
    ``num_mtp_modules`` MTP modules excluded. Source: transformers models/minimax_m2/modeling_minimax_m2.py."""
    Fs = c.opt("shared_intermediate_size", 0)
    moe = Mlp("moe", num_experts=c.pos("num_local_experts"), experts_per_tok=c.pos("num_experts_per_tok"),
              expert_intermediate_size=c.pos("intermediate_size"), num_shared_experts=1 if Fs else 0,
              shared_intermediate_size=Fs, router_bias=bool(c.opt("use_routing_bias", False)))
    layers = [Layer(_minimax_attention(c), moe)] * c.pos("num_hidden_layers")
    return replace(hf._base(c, name, layers), mtp_layers=_mtp(c))


def minimax_m3(c: _Cfg, name: str) -> ModelArch:
    """MiniMaxM3Config: the first ``first_k_dense_replace`` layers dense (``dense_intermediate_size``) with full
    attention, then MoE (``moe_layer_freq`` per layer: 128 experts top-4 + ``n_shared_experts`` of
    ``shared_intermediate_size``) with MiniMax Sparse Attention (``sparse_attention_config.sparse_attention_freq``):
    GQA whose cache keeps every entry plus one index key of ``sparse_index_dim`` per entry; an indexer of
    ``sparse_num_index_heads`` query heads scores blocks of ``sparse_block_size``, and the core attends the
    ``sparse_topk_blocks`` best blocks (local block included): top-k = topk_blocks · block_size entries. Indexer
    projections D·(n_index + 1)·d_index (index q heads + one index key; vLLM MinimaxM3 qkv_proj with indexer).
    ``num_mtp_modules`` MTP modules excluded. Card: ~428B total, ~23B active (hf.co/MiniMaxAI/MiniMax-M3)."""
    L, D = c.pos("num_hidden_layers"), c.pos("hidden_size")
    moe_at = _per_layer(c, "moe_layer_freq", L, (0, 1))
    sp = _Cfg(c.opt("sparse_attention_config", {}) or {}, c.name)
    sparse_at = _per_layer(sp, "sparse_attention_freq", L, (0, 1)) if sp.opt("use_sparse_attention", False) else [0] * L
    dense_att = _minimax_attention(c)
    if any(sparse_at):
        ni, di = sp.pos("sparse_num_index_heads"), sp.pos("sparse_index_dim")
        topk = sp.pos("sparse_topk_blocks") * sp.pos("sparse_block_size")
        sparse_att = replace(dense_att, index_topk=topk, index_n_heads=ni, index_head_dim=di, variant="msa",
                             explicit_params=dense_att.explicit_params + D * (ni + 1) * di)
    Fs = c.opt("shared_intermediate_size", 0)
    moe = Mlp("moe", num_experts=c.pos("num_local_experts"), experts_per_tok=c.pos("num_experts_per_tok"),
              expert_intermediate_size=c.pos("moe_intermediate_size"),
              num_shared_experts=c.opt("n_shared_experts", 0) if Fs else 0, shared_intermediate_size=Fs,
              router_bias=bool(c.opt("use_routing_bias", False)))
    dense = Mlp("dense", intermediate_size=c.pos("dense_intermediate_size"))
    layers = [Layer(sparse_att if s else dense_att, moe if e else dense) for s, e in zip(sparse_at, moe_at)]
    return replace(hf._base(c, name, layers), mtp_layers=_mtp(c))


# ---- Llama-4 -----------------------------------------------------------------------------------------------

LLAMA4_LAYER_TYPES = ("chunked_attention", "full_attention")


def llama4(c: _Cfg, name: str) -> ModelArch:
    """Llama4Config (Scout 17B-16E, Maverick 17B-128E), text tower only (the vision encoder is not counted).

    iRoPE: layer i uses RoPE with chunked local attention (``attention_chunk_size`` tokens: a token sees only its
    own chunk) unless it is a NoPE layer, which attends globally; ``no_rope_layers`` (1 = rope) defaults to a NoPE
    layer every ``no_rope_layer_interval`` (4) layers, ``layer_types`` to chunked/full from it. MoE in layers
    ``moe_layers`` (default every ``interleave_moe_layer_step``-th, from step − 1): ``num_local_experts`` SwiGLU
    experts of ``intermediate_size``, top-``num_experts_per_tok`` + one shared expert of the same width; the other
    layers are dense of ``intermediate_size_mlp``. QK-norm is a weightless L2 norm. Source: transformers
    models/llama4/configuration_llama4.py and modeling_llama4.py; Llama-4 model cards (hf.co/meta-llama)."""
    outer, c = c, _text(c, {"model_type": "llama4_text"})
    L = c.pos("num_hidden_layers")
    interval = c.pos("no_rope_layer_interval", 4)
    rope = _per_layer(c, "no_rope_layers", L, (0, 1), [int((i + 1) % interval != 0) for i in range(L)])
    types = _per_layer(c, "layer_types", L, LLAMA4_LAYER_TYPES,
                       ["chunked_attention" if r else "full_attention" for r in rope])
    step = c.pos("interleave_moe_layer_step", 1)
    moe_at = set(c.opt("moe_layers", None) or range(step - 1, L, step))
    base = hf._gqa(c, bias=bool(c.opt("attention_bias", False)))
    chunked = replace(base, chunk=c.pos("attention_chunk_size")) if "chunked_attention" in types else base
    F = c.pos("intermediate_size")
    moe = Mlp("moe", num_experts=c.pos("num_local_experts"), experts_per_tok=c.pos("num_experts_per_tok"),
              expert_intermediate_size=F, num_shared_experts=1, shared_intermediate_size=F)
    dense = Mlp("dense", intermediate_size=c.pos("intermediate_size_mlp"))
    layers = [Layer(chunked if t == "chunked_attention" else base, moe if i in moe_at else dense)
              for i, t in enumerate(types)]
    return _finish(hf._base(c, name, layers), outer)


# ---- Gemma-4 -----------------------------------------------------------------------------------------------

GEMMA4_LAYER_TYPES = ("sliding_attention", "full_attention")


def _gemma4_attention(c: _Cfg, full: bool) -> Attention:
    """Sliding layers: GQA of ``num_key_value_heads`` x ``head_dim`` over ``sliding_window``. Full layers:
    ``global_head_dim``; with ``attention_k_eq_v`` they have ``num_global_key_value_heads`` and no v_proj: V is the
    (weightless-normed, un-rotated) K projection, so a cache needs only K, K·d elements per entry (transformers
    modeling_gemma4.py Gemma4TextAttention, use_alternative_attention). We encode that cache as K/2 heads of
    d + d (variant "k_eq_v"): the cached elements, the q·k and p·v FLOPs (d each) and o_proj stay exact; the KV
    head count a tensor split sees is halved. Weights: q, k, o and the q/k norms (v_norm has no scale)."""
    D, H = c.pos("hidden_size"), c.pos("num_attention_heads")
    if not full:
        return hf._gqa(c, window=c.pos("sliding_window"), qk_norm=True)
    d = c.pos("global_head_dim", c.pos("head_dim"))
    if not c.opt("attention_k_eq_v", False):
        K = c.pos("num_key_value_heads")
        return Attention("gqa" if K < H else "mha", H, K, d, d, qk_norm=True)
    K = c.pos("num_global_key_value_heads")
    if K % 2:
        raise ConfigError(f"config {c.name}: field 'num_global_key_value_heads' must be even with attention_k_eq_v "
                          f"(a K-only cache is encoded as K/2 heads of d + d), got {K}")
    # kind stays "gqa" (what the layer is: K heads shared by H/K queries), whatever K/2 the encoding holds
    return Attention("gqa", H, K // 2, d, d, qk_norm=True, variant="k_eq_v",
                     explicit_params=D * H * d + D * K * d + H * d * D + 2 * d)


def gemma4(c: _Cfg, name: str) -> ModelArch:
    """Gemma4TextConfig (nested ``text_config``; Gemma-4 26B-A4B): ``layer_types`` sliding/full (5:1), each layer
    a GeGLU MLP of ``intermediate_size`` and, with ``enable_moe_block``, beside it ``num_experts`` experts of
    ``moe_intermediate_size``, top ``top_k_experts`` (the card's "1 shared" expert is that dense MLP). Per layer:
    7 norms with the MoE block (4 without), router scale D + per-expert scale E. Per-layer embeddings
    (``hidden_size_per_layer_input`` > 0) are counted as extras: a V_pl x L·P table, a D x L·P projection and a
    norm, and per layer a D x P gate, a P x D projection and a norm (transformers modeling_gemma4.py). KV sharing
    across layers (``num_kv_shared_layers`` > 0) is not modelled. Vision tower (~550M, card) not counted."""
    outer, c = c, _text(c, {"model_type": "gemma4_text"})
    L, D = c.pos("num_hidden_layers"), c.pos("hidden_size")
    if c.opt("num_kv_shared_layers", 0):
        raise ConfigError(f"config {c.name}: field 'num_kv_shared_layers' > 0 (KV shared across layers) "
                          "is not modelled")
    types = _per_layer(c, "layer_types", L, GEMMA4_LAYER_TYPES)
    dense = hf._dense_mlp(c)
    moe_block = bool(c.opt("enable_moe_block", False))
    E = c.pos("num_experts") if moe_block else 0
    mlp = Mlp("moe", num_experts=E, experts_per_tok=c.pos("top_k_experts"),
              expert_intermediate_size=c.pos("moe_intermediate_size"), num_shared_experts=1,
              shared_intermediate_size=dense.intermediate_size) if moe_block else dense
    att = {t: _gemma4_attention(c, t == "full_attention") for t in set(types)}
    layers = [Layer(att[t], mlp, norms=7 if moe_block else 4) for t in types]
    P = c.opt("hidden_size_per_layer_input", 0)
    ple = (c.pos("vocab_size_per_layer_input", c.pos("vocab_size")) * L * P + D * L * P + P
           + L * (2 * D * P + D)) if P else 0
    return _finish(hf._base(c, name, layers, extra_params=L * (D + E) * moe_block + ple), outer)


# ---- MiMo-V2-Flash -----------------------------------------------------------------------------------------


def mimo_v2_flash(c: _Cfg, name: str) -> ModelArch:
    """MiMoV2FlashConfig: ``hybrid_layer_pattern`` per layer, 0 = full GQA (num_key_value_heads, head_dim /
    v_head_dim), 1 = sliding-window GQA (swa_* fields, ``sliding_window_size`` 128) with a learned per-head sink
    bias when ``add_swa_attention_sink_bias`` (H per layer; ``add_full_attention_sink_bias`` likewise);
    ``moe_layer_freq`` per layer (1 = MoE of ``n_routed_experts`` x ``moe_intermediate_size``, top-8, sigmoid with
    a noaux_tc correction bias; 0 = dense ``intermediate_size``). MTP: the report's 3 MTP layers (arXiv 2601.02780)
    have no key in this config, so ``mtp_layers`` = num_nextn_predict_layers if present, else 0. Source:
    transformers models/mimo_v2_flash/modeling_mimo_v2_flash.py; card 309B total / 15B active."""
    L = c.pos("num_hidden_layers")
    pattern = _per_layer(c, "hybrid_layer_pattern", L, (0, 1))
    moe_at = _per_layer(c, "moe_layer_freq", L, (0, 1))
    bias = bool(c.opt("attention_bias", False))
    full = Attention("gqa", c.pos("num_attention_heads"), c.pos("num_key_value_heads"), c.pos("head_dim"),
                     c.pos("v_head_dim", c.pos("head_dim")), bias=bias)
    w = c.opt("sliding_window_size", None) or c.pos("sliding_window")
    Hs = c.pos("swa_num_attention_heads", full.num_heads)
    swa = Attention("gqa", Hs, c.pos("swa_num_key_value_heads", full.num_kv_heads), c.pos("swa_head_dim", full.head_dim),
                    c.pos("swa_v_head_dim", full.v_head_dim), window=w, bias=bias)
    moe = Mlp("moe", num_experts=c.pos("n_routed_experts"), experts_per_tok=c.pos("num_experts_per_tok"),
              expert_intermediate_size=c.pos("moe_intermediate_size"),
              num_shared_experts=c.opt("n_shared_experts", 0), shared_intermediate_size=c.pos("moe_intermediate_size"),
              router_bias=c.opt("topk_method", "") == "noaux_tc")
    layers = [Layer(swa if p else full, moe if e else hf._dense_mlp(c)) for p, e in zip(pattern, moe_at)]
    sinks = sum(Hs if p else full.num_heads for p in pattern
                if c.opt("add_swa_attention_sink_bias" if p else "add_full_attention_sink_bias", False))
    return replace(hf._base(c, name, layers, extra_params=sinks), mtp_layers=c.opt("num_nextn_predict_layers", 0))


ADAPTERS: dict[str, Callable] = {
    "kimi_k25": kimi_k25, "minimax_m2": minimax_m2, "minimax_m3": minimax_m3, "llama4": llama4, "gemma4": gemma4,
    "mimo_v2_flash": mimo_v2_flash,
}
