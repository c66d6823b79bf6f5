"""Megatron-Core's selective recompute by module: what each of ``recompute_modules`` drops from the stored
activations and what it runs again.

Source: Megatron-Core megatron/core/transformer/transformer_config.py, ``recompute_modules`` (core_r0.13 .. r0.16,
NVIDIA/Megatron-LM): "choices: core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts. default:
[core_attn]. moe_act, layernorm and mla_up_proj use output-discarding checkpointing, core_attn, mlp, moe and
shared_experts use normal checkpointing"; the list applies under recompute_granularity "selective" and replaces the
default. Per module, stored per token of a layer (core/memory.py's terms) and repeated forward FLOPs per token:

    core_attn       the s² scores (0 under FlashAttention)         + the core attention's forward
    layernorm       the norms' outputs                              ~0 (elementwise)
    mla_up_proj     MLA's up-projected q, k, v (latents kept)       + the up-projections' GEMMs (2·r·H·d each)
    moe_act         the routed experts' activation output (the      ~0 (elementwise)
                    gate/up output kept)
    mlp             a dense layer's MLP inside (its input kept)     + the dense MLP's GEMMs
    moe             the MoE layer inside: router logits, shared     + the routed experts' GEMMs (k of them), the
                    and routed experts (its input kept)               shared experts' and the router's
    shared_experts  the shared experts' inside                      + the shared experts' GEMMs

The Megatron-Bridge DeepSeek-V3 workload presets (scripts/performance/configs/deepseek/
deepseek_workload_base_configs.py, NVIDIA-NeMo/Megatron-Bridge v0.3.x..v0.5.x) use ["mla_up_proj"] on GB300/GB200/B200
and ["mla_up_proj", "mlp"] on H100; the DeepSeek-V3 report's own policy is the strategy "modules" (core/memory.py).
"""

from __future__ import annotations

from tokenomy.arch.model import Layer, ModelArch
from tokenomy.core.efficiency import FLOPS_PER_WEIGHT
from tokenomy.refusal import choice

MODULES = ("core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts")
DEFAULT = ("core_attn",)  # Megatron-Core's default list under "selective"


def check_modules(modules, strategy: str) -> tuple[str, ...]:
    """The list as a tuple of names, given as 'a,b' (CLI, web) or a sequence (Python); a name outside MODULES, or a
    list under any recompute but "selective", is refused."""
    parts = (modules or "").split(",") if isinstance(modules, str) or modules is None else list(modules)
    mods = tuple(str(x).strip() for x in parts if str(x).strip())
    for x in mods:
        choice("recompute_modules", x, MODULES, "a module")
    if mods and strategy != "selective":
        raise ValueError(f"recompute_modules: only with recompute 'selective' (Megatron-Core's granularity for a "
                         f"module list), got recompute {strategy!r}")
    return mods


def effective(strategy: str, modules) -> frozenset:
    """The modules recomputed: the list under "selective" (Megatron's default [core_attn] when empty), else none."""
    if strategy != "selective":
        return frozenset()
    return frozenset(modules or DEFAULT)


def up_projection_layer_flops(a) -> float:
    """FLOPs per token of one MLA layer's up-projections (q from its latent, k_nope and v from the KV latent)."""
    if a.kind != "mla":
        return 0.0
    q_up = (a.q_lora_rank or 0) * a.num_heads * a.head_dim
    return 2.0 * (q_up + a.kv_lora_rank * a.num_heads * (a.head_dim - a.qk_rope_head_dim + a.v_head_dim))


def layer_module_flops(ly: Layer, D: int, mods: frozenset) -> float:
    """Forward weight-GEMM FLOPs per token one layer repeats under ``mods`` (the module docstring's right column;
    core attention is the engine's, counted apart)."""
    out = up_projection_layer_flops(ly.attention) if "mla_up_proj" in mods else 0.0
    mlp = ly.mlp  # 2 FLOPs a weight per token (the model's own counts: Mlp.dense_params, expert_params)
    if mlp.kind == "dense":
        return out + (FLOPS_PER_WEIGHT * mlp.dense_params(D) if "mlp" in mods else 0.0)
    if "moe" in mods:  # the router, the shared experts and k routed experts
        return out + FLOPS_PER_WEIGHT * (mlp.dense_params(D) + mlp.experts_per_tok * mlp.expert_params(D))
    router = D * mlp.num_experts + mlp.num_experts * mlp.router_bias  # Mlp.dense_params' router term
    return out + (FLOPS_PER_WEIGHT * (mlp.dense_params(D) - router) if "shared_experts" in mods else 0.0)


def module_flops(m: ModelArch, mods: frozenset) -> float:
    """Forward weight-GEMM FLOPs per token (all layers) the modules repeat."""
    return sum(layer_module_flops(ly, m.hidden_size, mods) for ly in m.layers) if mods else 0.0
