"""Adapters: a Hugging Face config.json (already parsed to a dict) -> ModelArch.

One small function per ``model_type``. Defaults, where a config omits a field, are the defaults of the
corresponding ``transformers`` config class (named in each adapter), never guesses.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Callable

from tokenomy.arch.model import Attention, Layer, Mlp, ModelArch, Quantization


class ConfigError(ValueError):
    """A config.json that cannot describe a model: the message names the field and what is allowed."""


class _Cfg:
    """A config dict that names the missing or malformed field when asked for it."""

    def __init__(self, d: dict[str, Any], name: str):
        self.d, self.name = d, name

    def req(self, key: str) -> Any:
        if key not in self.d or self.d[key] is None:
            raise ConfigError(f"config {self.name}: missing field '{key}'")
        return self._check(key, self.d[key])

    def opt(self, key: str, default: Any) -> Any:
        v = self.d.get(key)
        return default if v is None else self._check(key, v)

    MAX_SIZE = 2**40  # no dimension, count or length of a real model comes near it (vocab ~2^18, context ~2^24)
    MAX_LAYERS = 100_000  # layer counts become per-layer op lists; real models have ~10-200 layers
    MAX_WIDTH = 2**20  # hidden/intermediate sizes and head dims: real ones are below 2^17
    WIDTHS = ("hidden_size", "intermediate_size", "head_dim")

    def _check(self, key: str, v: Any) -> Any:
        if isinstance(v, float) and (v != v or abs(v) == float("inf") or abs(v) > self.MAX_SIZE):
            raise ConfigError(f"config {self.name}: field '{key}' must be a finite number of sensible size, got {v!r}")
        if isinstance(v, bool) or not isinstance(v, int):
            return v
        if v < 0:
            raise ConfigError(f"config {self.name}: field '{key}' must be >= 0, got {v}")
        cap = self.MAX_LAYERS if "layers" in key else self.MAX_WIDTH if key.endswith(self.WIDTHS) else self.MAX_SIZE
        if v > cap:
            got = f"{v:,}" if v < 10**15 else f"{v:.2e}"
            raise ConfigError(f"config {self.name}: field '{key}' must be at most {cap:,}, got {got}")
        return v

    def pos(self, key: str, default: Any = None) -> int:
        v = self.req(key) if default is None else self.opt(key, default)
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ConfigError(f"config {self.name}: field '{key}' must be a positive integer, got {v!r}")
        return v


# Representative module names per weight category, matched against a checkpoint's quantized / ignored module lists.
_CATEGORY_MODULES = {"dense": ("self_attn.o_proj", "linear_attn.out_proj", "mixer.out_proj"),
                     "expert": ("mlp.experts", "mlp.experts.0.down_proj", "block_sparse_moe.experts.0.w2", "mixer.experts.0.down_proj"),
                     "embed": ("lm_head",)}
# NVIDIA ModelOpt quant_algo names -> dtype (NVFP4: e2m1 values with one e4m3 scale per 16, units.DTYPE_BYTES).
_MODELOPT = {"FP8": "fp8", "NVFP4": "nvfp4", "W4A16_NVFP4": "nvfp4", "W4A8_NVFP4_FP8": "nvfp4", "MXFP4": "mxfp4",
             "W4A16_AWQ": "int4", "W4A8_AWQ": "int4", "INT8_SQ": "int8", "W8A8_SQ_PER_CHANNEL": "int8"}


def _modelopt(c: _Cfg, q: dict, base: str) -> Quantization:
    """ModelOpt (``quant_method: modelopt``): one ``quant_algo`` for all linears (minus ``exclude_modules``), or
    MIXED_PRECISION with a per-module ``quantized_layers`` map; modules not listed stay in the checkpoint dtype."""
    def dtype(algo: Any, field: str) -> str:
        if algo not in _MODELOPT:
            raise ConfigError(f"config {c.name}: quantization_config.{field} {algo!r} not supported; "
                              f"allowed: {', '.join(_MODELOPT)}")
        return _MODELOPT[algo]

    algo = q.get("quant_algo")
    per = {}
    if algo == "MIXED_PRECISION":
        layers = q.get("quantized_layers")
        if not isinstance(layers, dict):
            raise ConfigError(f"config {c.name}: quantization_config.quantized_layers must map modules to quant_algo")
        for cat, names in _CATEGORY_MODULES.items():
            hits = [v.get("quant_algo") for k, v in layers.items() if isinstance(v, dict) and k.endswith(names)]
            per[cat] = dtype(hits[0], "quantized_layers.*.quant_algo") if hits else base
    else:
        dt = dtype(algo, "quant_algo")
        excluded = [str(x).rstrip("*") for x in q.get("exclude_modules") or []]
        per = {cat: base if any(e and (e in n or n.startswith(e)) for e in excluded for n in names) or
               (cat == "embed" and "lm_head" not in str(q.get("quantized_layers", "lm_head"))) else dt
               for cat, names in _CATEGORY_MODULES.items()}
    note = f"modelopt {algo}: " + ", ".join(f"{k} {v}" for k, v in per.items())
    if per["embed"] != base:  # one dtype for both: the head's, which every token reads
        note += f" (lm_head's; embed_tokens stays {base})"
    return Quantization(per["dense"], per["expert"], per["embed"], note=note)


def _compressed_tensors(c: _Cfg, q: dict, base: str) -> Quantization:
    """compressed-tensors (``quant_method: compressed-tensors``): a config group's weight format (mxfp4: 4-bit float,
    group 32, uint8 scale; 8-bit float: fp8; 4-bit int: int4) applies to every Linear not matched by ``ignore``
    (entries ``re:<regex>`` or module names)."""
    groups = q.get("config_groups") or {}
    if len(groups) != 1:
        raise ConfigError(f"config {c.name}: quantization_config.config_groups must hold one group, got {len(groups)}")
    w = next(iter(groups.values())).get("weights") or {}
    fmt = (w.get("type"), w.get("num_bits"), w.get("group_size"))
    formats = {("float", 4, 32): "mxfp4", ("float", 8, None): "fp8", ("int", 4, 128): "int4", ("int", 8, None): "int8"}
    dt = formats.get(fmt) or formats.get(fmt[:2] + (None,))
    if dt is None:
        raise ConfigError(f"config {c.name}: quantization_config.config_groups weights {fmt} (type, num_bits, "
                          f"group_size) not supported; allowed: {', '.join(map(str, formats))}")

    def ignored(name: str) -> bool:
        return any(re.fullmatch(i[3:], name) if i.startswith("re:") else name.endswith(i) for i in q.get("ignore") or [])
    per = {cat: base if any(ignored(f"model.layers.1.{n}") for n in names) else dt
           for cat, names in _CATEGORY_MODULES.items()}
    per["embed"] = base if ignored("lm_head") else dt
    return Quantization(per["dense"], per["expert"], per["embed"],
                        note=f"compressed-tensors {dt}: " + ", ".join(f"{k} {v}" for k, v in per.items()))


CHECKPOINT_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}  # torch_dtype names a config uses


def checkpoint_dtype(c: _Cfg, key: str = "torch_dtype") -> str:
    """The checkpoint's dtype (``torch_dtype``, ``dtype`` in transformers 5; bfloat16 where absent): a name outside
    CHECKPOINT_DTYPES is refused naming the field, never read as bf16."""
    v = c.opt(key, "bfloat16")
    if v not in CHECKPOINT_DTYPES:
        raise ConfigError(f"config {c.name}: field '{key}' {v!r} not supported; allowed: "
                          f"{', '.join(CHECKPOINT_DTYPES)}")
    return CHECKPOINT_DTYPES[v]


def _quant(c: _Cfg) -> Quantization:
    """Per-category weight dtype from ``quantization_config`` / ``torch_dtype`` (``dtype`` in transformers 5)."""
    key = "torch_dtype" if c.opt("torch_dtype", None) is not None else "dtype"
    base = checkpoint_dtype(c, key)
    q = c.opt("quantization_config", None)
    if not q:
        return Quantization(base, base, base)
    method = q.get("quant_method", "")
    if method == "fp8":  # DeepSeek-V3/Kimi-K2: 128x128 block-scaled e4m3 linears, embeddings/head kept in bf16
        return Quantization("fp8", "fp8", base, note="fp8 e4m3 linears (block scales ignored: 1/16384 overhead)")
    if method == "mxfp4":  # gpt-oss: MoE experts in MXFP4, attention/router/embeddings in bf16
        return Quantization(base, "mxfp4", base, note="mxfp4 experts; " + ", ".join(q.get("modules_to_not_convert", [])))
    if method == "modelopt":  # NVIDIA ModelOpt checkpoints (FP8, NVFP4, mixed)
        return _modelopt(c, q, base)
    if method == "compressed-tensors":  # llm-compressor / vLLM checkpoints (Kimi-K3 mxfp4-pack-quantized)
        return _compressed_tensors(c, q, base)
    raise ConfigError(f"config {c.name}: quantization_config.quant_method {method!r} not supported; "
                      f"allowed: fp8, mxfp4, modelopt, compressed-tensors")


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
