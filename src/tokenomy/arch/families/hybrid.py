"""Linear-attention / state-space mixers beside full attention: Qwen3.5/3.6 (Gated DeltaNet), Kimi-K3 (KimiLinear:
Kimi Delta Attention + gated MLA), Nemotron-3 (Mamba-2 + GQA + latent MoE). See arch/families/__init__.py.

A linear layer keeps a fixed state per sequence instead of a KV cache; every decode step reads and writes all of it.
Per head with key width dk and value width dv (state S of dk x dv), one token of the gated delta rule
    S_t = S_{t-1} a_t (I - b_t k_t k_t^T) + b_t v_t k_t^T,   o_t = S_t q_t
(Yang, Kautz, Hatamizadeh 2024, "Gated Delta Networks", arXiv 2412.06464, eq. 10) costs, as a kernel runs it:
u = S k (2·dk·dv), decay a·S (dk·dv), rank-1 update S += (b(v - a·u)) k^T (2·dk·dv), readout S q (2·dk·dv):
    7·dk·dv FLOPs per head per token
(KDA, Kimi Linear arXiv 2510.26692 eq. 1, replaces the scalar a_t by a per-key-channel Diag(a_t): the same count.)
Mamba-2 (Dao & Gu 2024, arXiv 2405.21060, SSD recurrence h_t = exp(dt·A) h_{t-1} + dt·x_t B_t^T, y_t = h_t C_t), per
head of head_dim P and state N: decay P·N, update 2·P·N, readout 2·P·N = 5·P·N. The short causal convolution in front
of each mixer adds 2·kernel FLOPs per conv channel and keeps (kernel - 1) inputs per channel in the state.

Weights a layer uses every token outside the ``Mlp`` fields (output gates, latent-MoE down/up projections) are in the
mixer's ``explicit_params``; they multiply every token, as the mixer's projections do.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from tokenomy.arch.hf import ConfigError, _base, _Cfg, _dense_mlp
from tokenomy.arch.model import Attention, Layer, Mlp, ModelArch

_STATE_DTYPE = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def _text(c: _Cfg) -> _Cfg:
    """The language model's config (``text_config`` of a multimodal wrapper), with the outer quantization_config
    when the text config has none (the NVIDIA NVFP4 repack keeps it at the top level)."""
    text = c.d.get("text_config") or c.d
    q = text.get("quantization_config") or c.d.get("quantization_config")
    return _Cfg({**text, "quantization_config": q}, c.name)


def _state_dtype(c: _Cfg, key: str, default: str) -> str:
    v = c.opt(key, default)
    if v not in _STATE_DTYPE:
        raise ConfigError(f"config {c.name}: field '{key}' must be one of {', '.join(_STATE_DTYPE)}, got {v!r}")
    return _STATE_DTYPE[v]


def _gqa_params(D: int, H: int, K: int, d: int) -> int:
    """q, k, v, o projections without bias: D·H·d + 2·D·K·d + H·d·D."""
    return 2 * D * H * d + 2 * D * K * d


# --------------------------------------------------------------------------------------------------- Qwen3.5 / 3.6


def _gated_deltanet(c: _Cfg, D: int) -> Attention:
    """Qwen3.5 Gated DeltaNet mixer (transformers Qwen3_5MoeGatedDeltaNet, as Qwen3NextGatedDeltaNet):
    in_proj_qkv D -> 2·Hk·dk + Hv·dv, in_proj_z D -> Hv·dv (output gate), in_proj_b / in_proj_a D -> Hv each,
    depthwise conv1d over the q, k, v channels (kernel K, no bias), A_log and dt_bias (Hv each), gated RMSNorm (dv),
    out_proj Hv·dv -> D. State: Hv·dk·dv (fp32: mamba_ssm_dtype) + (K-1)·conv channels."""
    Hk, Hv = c.pos("linear_num_key_heads"), c.pos("linear_num_value_heads")
    dk, dv, K = c.pos("linear_key_head_dim"), c.pos("linear_value_head_dim"), c.pos("linear_conv_kernel_dim")
    conv = 2 * Hk * dk + Hv * dv
    params = D * (conv + Hv * dv + 2 * Hv) + conv * K + 2 * Hv + dv + Hv * dv * D
    return Attention("linear", Hv, Hk, dk, dv, state_elems=Hv * dk * dv + (K - 1) * conv,
                     state_flops_per_token=7 * Hv * dk * dv + 2 * K * conv, explicit_params=params,
                     variant="gated_deltanet")


def _qwen_gated_attention(c: _Cfg, D: int) -> Attention:
    """Qwen3.5 full attention: GQA with q/k RMSNorm (head_dim each) and, with ``attn_output_gate``, a sigmoid gate
    on the attention output projected with q (q_proj D -> 2·H·d: Qiu et al. 2025, "Gated Attention", arXiv
    2505.06708). Partial rotary (partial_rotary_factor) changes no weight or cache size."""
    H, d = c.pos("num_attention_heads"), c.pos("head_dim")
    K = c.pos("num_key_value_heads", H)
    gate = D * H * d if c.opt("attn_output_gate", True) else 0
    if c.opt("attention_bias", False):
        raise ConfigError(f"config {c.name}: field 'attention_bias' true is not supported for qwen3_5_moe")
    kind = "mha" if K == H else ("mqa" if K == 1 else "gqa")
    return Attention(kind, H, K, d, d, qk_norm=True, explicit_params=_gqa_params(D, H, K, d) + gate + 2 * d,
                     variant="gated_attention" if gate else "")


def qwen3_5_moe(c: _Cfg, name: str) -> ModelArch:
    """Qwen3_5MoeConfig (Qwen3.5-397B-A17B, Qwen3.6-35B-A3B; text_config of the multimodal wrapper): ``layer_types``
    of linear_attention (Gated DeltaNet) and full_attention (gated GQA), default every ``full_attention_interval``-th
    layer full; MoE of ``num_experts`` experts top-``num_experts_per_tok`` plus one shared expert of width
    shared_expert_intermediate_size behind a sigmoid gate (a D-vector, counted as one more norm-sized weight);
    ``mlp_only_layers`` dense. Qwen's card: "15 * (3 * (Gated DeltaNet -> MoE) -> 1 * (Gated Attention -> MoE))"
    (hf.co/Qwen/Qwen3.5-397B-A17B). The vision tower is not counted (it runs on image tokens, not per generated
    token); the MTP module (mtp_num_hidden_layers) is excluded from the count and kept as ``mtp_layers``."""
    outer, c = c, _text(c)
    D, L = c.pos("hidden_size"), c.pos("num_hidden_layers")
    interval = c.pos("full_attention_interval", 4)
    types = c.opt("layer_types", ["full_attention" if (i + 1) % interval == 0 else "linear_attention"
                                  for i in range(L)])
    if not isinstance(types, list) or len(types) != L:
        raise ConfigError(f"config {c.name}: field 'layer_types' must list num_hidden_layers={L} entries")
    mixers = {"linear_attention": _gated_deltanet(c, D), "full_attention": _qwen_gated_attention(c, D)}
    Fs = c.opt("shared_expert_intermediate_size", 0)
    moe = Mlp("moe", num_experts=c.pos("num_experts"), experts_per_tok=c.pos("num_experts_per_tok"),
              expert_intermediate_size=c.pos("moe_intermediate_size"), num_shared_experts=1 if Fs else 0,
              shared_intermediate_size=Fs)
    step, dense_only = c.pos("decoder_sparse_step", 1), set(c.opt("mlp_only_layers", []))
    layers = []
    for i, t in enumerate(types):
        if t not in mixers:
            raise ConfigError(f"config {c.name}: field 'layer_types[{i}]' is {t!r}; allowed: {', '.join(mixers)}")
        is_moe = i not in dense_only and (i + 1) % step == 0
        layers.append(Layer(mixers[t], moe if is_moe else _dense_mlp(c), norms=2 + (1 if is_moe and Fs else 0)))
    m = _base(c, name, layers, state_dtype=_state_dtype(c, "mamba_ssm_dtype", "float32"),
              mtp_layers=c.opt("mtp_num_hidden_layers", 0))
    return replace(m, model_type=outer.req("model_type"),
                   tie_word_embeddings=bool(outer.opt("tie_word_embeddings", c.opt("tie_word_embeddings", False))))


# ------------------------------------------------------------------------------------------------------- Kimi-K3


def _kda(c: _Cfg, la: _Cfg, D: int) -> Attention:
    """Kimi Delta Attention (Kimi Linear, arXiv 2510.26692; K3 reference modeling_kimi_linear.py): q, k, v
    D -> H·d each, a short conv (kernel K, no bias) on each, the decay gate low-rank D -> d -> H·d (f_a, f_b), beta
    D -> H, the output gate full rank D -> H·d (``use_full_rank_gate``) or low-rank D -> d -> H·d, A_log (H),
    dt_bias (H·d), o_norm (d), o_proj H·d -> D. State: H·d·d (fp32 in the reference kernels) + 3·(K-1)·H·d."""
    H, d, K = la.pos("num_heads"), la.pos("head_dim"), la.pos("short_conv_kernel_size", 4)
    P = H * d
    gate = D * P if la.opt("use_full_rank_gate", False) else D * d + d * P
    params = 3 * D * P + 3 * P * K + (D * d + d * P) + D * H + gate + H + P + d + P * D
    return Attention("linear", H, H, d, d, state_elems=H * d * d + 3 * (K - 1) * P,
                     state_flops_per_token=7 * H * d * d + 2 * K * 3 * P, explicit_params=params, variant="kda")


def _kimi_mla(c: _Cfg, D: int) -> Attention:
    """KimiLinear MLA (DeepSeek-V2 form: q LoRA, joint kv down-projection, latent cache kv_lora_rank +
    qk_rope_head_dim) with ``mla_use_output_gate`` a sigmoid gate D -> H·v_head_dim. ``mla_use_nope``: no rotary is
    applied, but the rope slice of the key is still projected and cached."""
    H, rope = c.pos("num_attention_heads"), c.pos("qk_rope_head_dim")
    att = Attention("mla", H, H, c.pos("qk_nope_head_dim") + rope, c.pos("v_head_dim"),
                    q_lora_rank=c.opt("q_lora_rank", None), kv_lora_rank=c.pos("kv_lora_rank"), qk_rope_head_dim=rope)
    gate = D * H * att.v_head_dim if c.opt("mla_use_output_gate", False) else 0
    return replace(att, explicit_params=att.params(D) + gate, variant="gated_mla" if gate else "")


def _layer_numbers(la: _Cfg, key: str, L: int) -> set[int]:
    v = la.req(key)
    if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, int) or not 1 <= x <= L for x in v):
        raise ConfigError(f"config {la.name}: field 'linear_attn_config.{key}' must list layer numbers 1..{L}")
    return set(v)


def kimi_k3(c: _Cfg, name: str) -> ModelArch:
    """KimiK3Config -> text_config KimiLinearConfig (hf.co/moonshotai/Kimi-K3; Kimi Linear, arXiv 2510.26692).

    Layers (1-based in ``linear_attn_config``): ``kda_layers`` Kimi Delta Attention, ``full_attn_layers`` gated MLA;
    every layer must be in exactly one. MLP: dense (intermediate_size) below ``first_k_dense_replace``, else the
    latent MoE: router on the full hidden D (+ e_score_correction_bias), routed experts of width
    moe_intermediate_size running in ``routed_expert_hidden_size`` = L_e (a shared D -> L_e down and L_e -> D up
    projection around them, RMSNorm of L_e with ``latent_moe_use_norm``), ``num_shared_experts`` shared experts on
    the full D. ``Mlp`` has no latent width, so a routed expert is written with the width F·L_e/D that gives its
    exact weight count 3·L_e·F (FLOPs and bytes follow from the count), and the down/up projections and norm are in
    the layer's ``explicit_params``. ``attn_res_block_size``: Attention Residuals (Kimi K3 report) replace the plain
    residual sum by a softmax over the outputs of the previous blocks of that many layers; per layer two RMSNorms and
    two D -> 1 scoring vectors (norms = 6) and one pair after the last layer (``extra_params``). The vision tower
    (MoonViT-V2) is not counted."""
    outer, c = c, _text(c)
    D, L = c.pos("hidden_size"), c.pos("num_hidden_layers")
    la_d = c.req("linear_attn_config")
    if not isinstance(la_d, dict):
        raise ConfigError(f"config {c.name}: field 'linear_attn_config' must be an object")
    la = _Cfg(la_d, c.name)
    kda_at, full_at = _layer_numbers(la, "kda_layers", L), _layer_numbers(la, "full_attn_layers", L)
    if kda_at & full_at or len(kda_at | full_at) != L:
        raise ConfigError(f"config {c.name}: fields 'linear_attn_config.kda_layers' and 'full_attn_layers' must "
                          f"together name each of the {L} layers once")
    kda, mla = _kda(c, la, D), _kimi_mla(c, D)
    Le, F = c.pos("routed_expert_hidden_size", D), c.pos("moe_intermediate_size")
    if Le * F % D:
        raise ConfigError(f"config {c.name}: field 'routed_expert_hidden_size' ({Le}) x moe_intermediate_size ({F}) "
                          f"must be a multiple of hidden_size ({D}) to be written as an expert width")
    latent = 2 * D * Le + (Le if c.opt("latent_moe_use_norm", False) else 0) if Le != D else 0
    moe = Mlp("moe", num_experts=c.pos("num_experts"), experts_per_tok=c.pos("num_experts_per_token"),
              expert_intermediate_size=Le * F // D, num_shared_experts=c.opt("num_shared_experts", 0),
              shared_intermediate_size=F, router_bias=True)
    res = c.opt("attn_res_block_size", None)
    norms = 2 + (4 if res else 0)
    first_dense, freq = c.opt("first_k_dense_replace", 0), c.pos("moe_layer_freq", 1)
    layers = []
    for i in range(L):
        mixer = kda if i + 1 in kda_at else mla
        if i >= first_dense and i % freq == 0:
            layers.append(Layer(replace(mixer, explicit_params=mixer.params(D) + latent), moe, norms=norms))
        else:
            layers.append(Layer(mixer, _dense_mlp(c), norms=norms))
    m = _base(c, name, layers, extra_params=2 * D if res else 0, state_dtype="fp32",
              mtp_layers=c.opt("num_nextn_predict_layers", 0))
    return replace(m, model_type=outer.req("model_type"),
                   tie_word_embeddings=bool(outer.opt("tie_word_embeddings", c.opt("tie_word_embeddings", False))))


# --------------------------------------------------------------------------------------------------- Nemotron-H


_BLOCKS = {"M": "mamba", "*": "attention", "E": "moe", "-": "mlp"}


def _block_types(c: _Cfg) -> list[str]:
    """``layers_block_type`` (mamba / attention / moe / mlp) or ``hybrid_override_pattern`` (M * E -)."""
    types = c.opt("layers_block_type", None)
    if types is None:
        pattern = c.req("hybrid_override_pattern")
        bad = sorted(set(pattern) - set(_BLOCKS))
        if bad:
            raise ConfigError(f"config {c.name}: field 'hybrid_override_pattern' has unknown block {bad[0]!r}; "
                              f"allowed: M (Mamba-2), * (attention), E (MoE), - (MLP)")
        types = [_BLOCKS[ch] for ch in pattern]
    for i, t in enumerate(types):
        if t not in _BLOCKS.values():
            raise ConfigError(f"config {c.name}: field 'layers_block_type[{i}]' is {t!r}; "
                              f"allowed: {', '.join(_BLOCKS.values())}")
    L = c.opt("num_hidden_layers", len(types))
    if len(types) != L:
        raise ConfigError(f"config {c.name}: field 'hybrid_override_pattern' has {len(types)} blocks, "
                          f"num_hidden_layers is {L}")
    return types


def _mamba2(c: _Cfg, D: int) -> Attention:
    """NemotronHMamba2Mixer (transformers modeling_nemotron_h): in_proj D -> 2·I + 2·G·N + H (gate z, conv input
    x B C, dt), conv1d over I + 2·G·N channels (kernel K, bias with use_conv_bias), dt_bias, A_log, D (H each),
    gated group RMSNorm (I), out_proj I -> D; I = mamba_num_heads·mamba_head_dim, G = n_groups, N = ssm_state_size.
    State: H·P·N (mamba_ssm_cache_dtype) + (K-1)·conv channels.
    The chunked (SSD) scan a training forward runs (Dao & Gu 2024, arXiv 2405.21060 §6; mamba_ssm's ssd_bmm,
    ssd_chunk_state, ssd_chunk_scan kernels), per token, chunks of Q = chunk_size: C·Bᵀ within the chunk per group
    2·G·Q·N, the masked scores times x per head 2·H·Q·P, the chunk's state 2·H·P·N and its read-out 2·H·P·N."""
    H, P, N = c.pos("mamba_num_heads"), c.pos("mamba_head_dim"), c.pos("ssm_state_size")
    G, K = c.pos("n_groups", 1), c.pos("conv_kernel", 4)
    Q = c.pos("chunk_size", 128)
    I, bias = H * P, bool(c.opt("mamba_proj_bias", False))
    conv = I + 2 * G * N
    params = (D * (I + conv + H) + (I + conv + H) * bias + conv * K + conv * bool(c.opt("use_conv_bias", True))
              + 3 * H + I + I * D + D * bias)
    return Attention("linear", H, H, P, P, state_elems=H * P * N + (K - 1) * conv,
                     state_flops_per_token=5 * H * P * N + 2 * K * conv, explicit_params=params, variant="mamba2",
                     scan_flops_per_token=2 * (G * Q * N + H * Q * P + 2 * H * P * N))


def _nemotron_moe(c: _Cfg, D: int) -> tuple[Mlp, int]:
    """NemotronH MoE: router D -> E (+ e_score_correction_bias), routed relu² experts (up, down: ungated) of width
    moe_intermediate_size, run in ``moe_latent_size`` = L_e when set (fc1_latent_proj D -> L_e, fc2_latent_proj
    L_e -> D around them), n_shared_experts shared experts of moe_shared_expert_intermediate_size on the full D.
    Returns the Mlp (expert width F·L_e/D: exact weight count 2·L_e·F, see kimi_k3) and the latent projections."""
    Le, F = c.opt("moe_latent_size", None) or D, c.pos("moe_intermediate_size")
    if Le * F % D:
        raise ConfigError(f"config {c.name}: field 'moe_latent_size' ({Le}) x moe_intermediate_size ({F}) must be a "
                          f"multiple of hidden_size ({D}) to be written as an expert width")
    mlp = Mlp("moe", gated=False, num_experts=c.pos("n_routed_experts"), experts_per_tok=c.pos("num_experts_per_tok"),
              expert_intermediate_size=Le * F // D, num_shared_experts=c.opt("n_shared_experts", 0),
              shared_intermediate_size=c.opt("moe_shared_expert_intermediate_size", 0), router_bias=True,
              dispatch_size=Le if Le != D else 0)  # Megatron-Core moe_layer.py: fc1_latent_proj before dispatch
    return mlp, (2 * D * Le if Le != D else 0)


def nemotron_h(c: _Cfg, name: str) -> ModelArch:
    """NemotronHConfig (Nemotron-H, arXiv 2504.03624; Nemotron-3-Super, hf.co/nvidia/NVIDIA-Nemotron-3-Super-120B-A12B):
    a stack of single-mixer blocks (RMSNorm -> mixer -> residual), each a Mamba-2 mixer, a GQA attention (no
    rotary scaling, head_dim), an MoE or a relu² MLP. A ``Layer`` here is a token mixer with the MLP/MoE block that
    follows it (norms = 2), or a mixer alone (a zero-width MLP, norms = 1); an MLP block that follows no mixer is a
    ConfigError. The MTP block (mtp_hybrid_override_pattern, num_nextn_predict_layers) is excluded from the count."""
    D = c.pos("hidden_size")
    types = _block_types(c)
    mamba = _mamba2(c, D)
    H = c.pos("num_attention_heads")
    K, d = c.pos("num_key_value_heads", H), c.pos("head_dim", D // H)
    bias = bool(c.opt("attention_bias", False))
    attn = Attention("mha" if K == H else ("mqa" if K == 1 else "gqa"), H, K, d, d, bias=bias)
    moe, latent = _nemotron_moe(c, D) if "moe" in types else (None, 0)
    layers: list[Layer] = []
    pending: Attention | None = None
    for i, t in enumerate(types):
        if t in ("mamba", "attention"):
            if pending is not None:
                layers.append(Layer(pending, Mlp("dense", intermediate_size=0), norms=1))
            pending = mamba if t == "mamba" else attn
            continue
        if pending is None:
            raise ConfigError(f"config {c.name}: field 'hybrid_override_pattern' block {i} ({t}) follows no mixer "
                              f"block; a layer here is a mixer and the MLP after it")
        if t == "moe":
            layers.append(Layer(replace(pending, explicit_params=pending.params(D) + latent), moe))
        else:
            layers.append(Layer(pending, Mlp("dense", intermediate_size=c.pos("intermediate_size"), gated=False,
                                             bias=bool(c.opt("mlp_bias", False)))))
        pending = None
    if pending is not None:
        layers.append(Layer(pending, Mlp("dense", intermediate_size=0), norms=1))
    return _base(c, name, layers, state_dtype=_state_dtype(c, "mamba_ssm_cache_dtype", "bfloat16"),
                 mtp_layers=c.opt("num_nextn_predict_layers", 0))


ADAPTERS: dict[str, Callable[[_Cfg, str], ModelArch]] = {
    "qwen3_5_moe": qwen3_5_moe, "qwen3_5_moe_text": qwen3_5_moe, "kimi_k3": kimi_k3, "kimi_linear": kimi_k3,
    "nemotron_h": nemotron_h,
}
