"""Adapters: a Hugging Face config.json (already parsed to a dict) -> ModelArch.

One small function per ``model_type``. Defaults, where a config omits a field, are the defaults of the
corresponding ``transformers`` config class (named in each adapter), never guesses. hf_config.py reads the fields,
hf_quant.py the checkpoint's weight dtypes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from tokenomy.arch.hf_config import ConfigError, _Cfg  # noqa: F401  (re-exported: the families import them here)
from tokenomy.arch.hf_quant import CHECKPOINT_DTYPES, _quant, checkpoint_dtype  # noqa: F401
from tokenomy.arch.model import Attention, Layer, Mlp, ModelArch


def _gqa(c: _Cfg, window: int | None = None, bias: bool = False, qk_norm: bool = False) -> Attention:
    H = c.pos("num_attention_heads")
    K = c.pos("num_key_value_heads", H)
    if H % K:  # each KV head serves a whole group of query heads (GQA)
        raise ConfigError(f"config {c.name}: field 'num_key_value_heads' ({K}) must divide "
                          f"num_attention_heads ({H})")
    d = c.pos("head_dim", c.pos("hidden_size") // H)
    kind = "mha" if K == H else ("mqa" if K == 1 else "gqa")
    return Attention(kind, H, K, d, d, window=window, bias=bias, qk_norm=qk_norm)


def _dense_mlp(c: _Cfg, gated: bool = True, bias: bool = False) -> Mlp:
    return Mlp("dense", intermediate_size=c.pos("intermediate_size"), gated=gated, bias=bias)


def _base(c: _Cfg, name: str, layers: list[Layer], **kw: Any) -> ModelArch:
    window = c.opt("max_position_embeddings", None)
    if window is not None:
        c.pos("max_position_embeddings")  # 0 or a fraction is no context window: refused naming the field
    return ModelArch(
        name=name, model_type=c.req("model_type"), hidden_size=c.pos("hidden_size"),
        vocab_size=c.pos("vocab_size"), layers=tuple(layers),
        tie_word_embeddings=bool(c.opt("tie_word_embeddings", False)), quantization=_quant(c),
        max_position_embeddings=c.opt("max_position_embeddings", None), **kw)


def llama(c: _Cfg, name: str) -> ModelArch:
    """LlamaConfig / MistralConfig / Qwen2Config / Qwen3Config: GQA + gated MLP in every layer."""
    window = c.opt("sliding_window", None) if c.opt("use_sliding_window", True) else None
    bias = bool(c.opt("attention_bias", c.req("model_type") == "qwen2"))
    att = _gqa(c, window=window, bias=bias, qk_norm=c.req("model_type") == "qwen3")
    mlp = _dense_mlp(c, bias=bool(c.opt("mlp_bias", False)))
    return _base(c, name, [Layer(att, mlp)] * c.pos("num_hidden_layers"))


def mixtral(c: _Cfg, name: str) -> ModelArch:
    """MixtralConfig: GQA + top-k of ``num_local_experts`` SwiGLU experts of width intermediate_size."""
    moe = Mlp("moe", num_experts=c.pos("num_local_experts"), experts_per_tok=c.pos("num_experts_per_tok"),
              expert_intermediate_size=c.pos("intermediate_size"))
    return _base(c, name, [Layer(_gqa(c, window=c.opt("sliding_window", None)), moe)] * c.pos("num_hidden_layers"))


def qwen3_moe(c: _Cfg, name: str) -> ModelArch:
    """Qwen3MoeConfig: MoE every ``decoder_sparse_step`` layers except ``mlp_only_layers``; no shared expert."""
    att = _gqa(c, qk_norm=True, bias=bool(c.opt("attention_bias", False)))
    moe = Mlp("moe", num_experts=c.pos("num_experts"), experts_per_tok=c.pos("num_experts_per_tok"),
              expert_intermediate_size=c.pos("moe_intermediate_size"))
    step, dense_only = c.pos("decoder_sparse_step", 1), set(c.opt("mlp_only_layers", []))
    layers = [Layer(att, moe if (i not in dense_only and (i + 1) % step == 0) else _dense_mlp(c))
              for i in range(c.pos("num_hidden_layers"))]
    return _base(c, name, layers)


def _group_limit(c: _Cfg, num_experts: int) -> dict[str, int]:
    """Group-limited routing (Mlp): ``n_group`` groups of experts, a token's experts from ``topk_group`` of them.
    HF DeepseekV2/V3 MoEGate applies the groups unless ``topk_method`` is "greedy" (plain top-k); a config without
    the fields has no limit (1, 1)."""
    if c.opt("topk_method", "") == "greedy":
        return {"n_group": 1, "topk_group": 1}
    n, top = c.pos("n_group", 1), c.pos("topk_group", 1)
    if top > n or num_experts % n:
        raise ConfigError(f"config {c.name}: fields 'n_group' {n} and 'topk_group' {top}: topk_group must be at most "
                          f"n_group, and n_group must divide the {num_experts} routed experts")
    return {"n_group": n, "topk_group": top}


def deepseek(c: _Cfg, name: str) -> ModelArch:
    """DeepseekV3Config (also Kimi-K2, DeepSeek-V2): MLA + shared/routed MoE after ``first_k_dense_replace``.

    The multi-token-prediction module (``num_nextn_predict_layers``) is not part of the served model and is
    excluded, as in DeepSeek's own 671B count (DeepSeek-V3 report, arXiv 2412.19437, §4.2).
    """
    H, rope = c.pos("num_attention_heads"), c.pos("qk_rope_head_dim")
    att = Attention("mla", H, H, c.pos("qk_nope_head_dim") + rope, c.pos("v_head_dim"),
                    q_lora_rank=c.opt("q_lora_rank", None), kv_lora_rank=c.pos("kv_lora_rank"), qk_rope_head_dim=rope)
    Fe = c.pos("moe_intermediate_size")
    E = c.pos("n_routed_experts")
    moe = Mlp("moe", num_experts=E, experts_per_tok=c.pos("num_experts_per_tok"), **_group_limit(c, E),
              expert_intermediate_size=Fe, num_shared_experts=c.opt("n_shared_experts", 0), shared_intermediate_size=Fe)
    first_dense, freq = c.opt("first_k_dense_replace", 0), c.pos("moe_layer_freq", 1)
    layers = [Layer(att, moe if (i >= first_dense and i % freq == 0) else _dense_mlp(c))
              for i in range(c.pos("num_hidden_layers"))]
    return replace(_base(c, name, layers), mtp_layers=c.opt("num_nextn_predict_layers", 0))


def gpt_oss(c: _Cfg, name: str) -> ModelArch:
    """GptOssConfig: GQA with biases and per-head sinks, alternating sliding/full layers, biased SwiGLU experts."""
    L = c.pos("num_hidden_layers")
    types = c.opt("layer_types", ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(L)])
    moe = Mlp("moe", num_experts=c.pos("num_local_experts"),
              experts_per_tok=c.opt("num_experts_per_tok", None) or c.pos("experts_per_token"),
              expert_intermediate_size=c.pos("intermediate_size"), bias=True, router_bias=True)
    window = c.pos("sliding_window")
    layers = [Layer(_gqa(c, window=window if t == "sliding_attention" else None, bias=True), moe) for t in types]
    return _base(c, name, layers, extra_params=L * c.pos("num_attention_heads"))  # attention sinks: H per layer


def gemma3(c: _Cfg, name: str) -> ModelArch:
    """Gemma3TextConfig (nested as ``text_config`` in the multimodal config): 5 local : 1 global layers.

    Defaults from transformers' Gemma3TextConfig: vocab 262,208, head_dim 256, sliding_window 4096, pattern 6.
    The vision tower (SigLIP, ~0.4B) is not counted: it does not run per generated token.
    """
    outer = c
    text = c.d.get("text_config") or c.d  # a new dict below: the caller's config is never modified
    c = _Cfg({"vocab_size": 262208, "head_dim": 256, "model_type": "gemma3", **text}, c.name)
    L, window = c.pos("num_hidden_layers"), c.pos("sliding_window", 4096)
    pattern = c.pos("sliding_window_pattern", 6)
    types = c.opt("layer_types", ["full_attention" if (i + 1) % pattern == 0 else "sliding_attention" for i in range(L)])
    layers = [Layer(_gqa(c, window=window if t == "sliding_attention" else None, qk_norm=True), _dense_mlp(c), norms=4)
              for t in types]
    return replace(_base(c, name, layers), tie_word_embeddings=bool(outer.opt("tie_word_embeddings", True)),
                   model_type=outer.req("model_type"))


def palm(c: _Cfg, name: str) -> ModelArch:
    """PaLM (Chowdhery et al. 2022, arXiv 2204.02311): multiquery, parallel blocks, SwiGLU, tied embeddings."""
    att = _gqa(c)
    layers = [Layer(att, _dense_mlp(c), norms=1)] * c.pos("num_hidden_layers")
    return _base(c, name, layers, parallel_block=bool(c.opt("parallel_block", True)), source=c.opt("source", ""))


ADAPTERS: dict[str, Callable[[_Cfg, str], ModelArch]] = {
    "llama": llama, "mistral": llama, "qwen2": llama, "qwen3": llama,
    "mixtral": mixtral, "qwen3_moe": qwen3_moe,
    "deepseek_v3": deepseek, "deepseek_v2": deepseek, "kimi_k2": deepseek,
    "gpt_oss": gpt_oss, "gemma3": gemma3, "gemma3_text": gemma3, "palm": palm,
}


# The families released since early 2025 live in arch/families/ and use the helpers above (so they import here,
# after those helpers are defined).
from tokenomy.arch.families import hybrid, recent, sparse  # noqa: E402

for _family in (sparse, hybrid, recent):
    ADAPTERS.update(_family.ADAPTERS)


def from_config(d: Any, name: str) -> ModelArch:
    """Build a ModelArch from a parsed config.json dict; ConfigError names what is wrong."""
    if not isinstance(d, dict):
        raise ConfigError(f"config {name}: expected a JSON object at the top level")
    c = _Cfg(d, name)
    mt = c.req("model_type")
    if mt not in ADAPTERS:
        raise ConfigError(f"config {name}: model_type {mt!r} not supported; allowed: {', '.join(sorted(ADAPTERS))}")
    try:
        m = ADAPTERS[mt](c, name)
    except (TypeError, AttributeError, ZeroDivisionError) as e:
        raise ConfigError(f"config {name}: malformed field ({e})") from None
    _routes_within_experts(m, name)
    return m


def _routes_within_experts(m: ModelArch, name: str) -> None:
    """Each token is routed to k of E experts, so k <= E (a config with k > E counts more active parameters than
    the model has)."""
    for layer in m.layers:
        mlp = layer.mlp
        if mlp.num_experts and not 0 < mlp.experts_per_tok <= mlp.num_experts:
            raise ConfigError(f"config {name}: field 'num_experts_per_tok' ({mlp.experts_per_tok}) must be in "
                              f"1..{mlp.num_experts} (the routed experts of a layer)")
