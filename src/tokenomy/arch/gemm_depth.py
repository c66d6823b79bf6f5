"""How deep the K-loop of each weight GEMM runs: an op's weights per element of contraction depth, Σ p_j/K_j over
its GEMMs j (p_j weights, K_j the depth each output element sums over), split by what tensor parallelism does to K:

    whole   column-parallel GEMMs (q/k/v, MLA's q_a/q_b/kv_a/kv_b, up/gate, the router, the LM head): TP splits
            their N (output width), each rank runs the full depth K_j
    split   row-parallel GEMMs (the attention's output projection, the MLP's and each expert's down-projection):
            TP splits their K, each rank runs K_j/tp

so that on a chip running its 1/tp share of FLOPs F_j = 2·T·p_j, Σ_j (F_j/tp)/K_eff,j = 2·T·(whole/tp + split) (the
engine's depth FLOPs, core/work.py; charged per K-loop in core/times.py). DeepSeek-V3 at TP8: each routed expert's
down-projection runs K = 2048/8 = 256 deep, its up/gate K = 7168; the MLA kv_b projection K = kv_lora_rank = 512
whatever the TP. Biases and norms are no GEMM: they add no depth. A layer the adapter counts only as a total
(``explicit_params``: linear-attention mixers) is taken as column-parallel at K = D."""

from __future__ import annotations

from tokenomy.arch.model import Attention, Mlp


def attention_depth(a: Attention, D: int) -> tuple[float, float]:
    """(whole, split) weights per depth element of the attention's projections (module docstring)."""
    H, kv, d, dv = a.num_heads, a.num_kv_heads, a.head_dim, a.v_head_dim
    if a.explicit_params is not None:
        return a.explicit_params / D, 0.0
    if a.kind == "mla":
        c, rope = a.kv_lora_rank, a.qk_rope_head_dim
        q = H * d if a.q_lora_rank is None else a.q_lora_rank + H * d  # D -> H·d, or D -> r (K = D) and r -> H·d (K = r)
        kv_b = H * (d - rope + dv)  # the latent up to K_nope and V: K = kv_lora_rank
        return float(q + (c + rope) + kv_b), float(D)  # o_proj: H·dv -> D, K = H·dv split by TP
    return float(H * d + kv * d + kv * dv), float(D)  # q, k, v at K = D; o_proj at K = H·dv


def dense_mlp_depth(mlp: Mlp, D: int) -> tuple[float, float]:
    """(whole, split) of the weights every token uses: a dense MLP (up/gate at K = D, down at K = F), or an MoE's
    router (K = D) and shared experts (up/gate at K = D, down at K = n_shared·F_shared)."""
    ups = 2 if mlp.gated else 1
    if mlp.kind == "dense":
        return float(ups * mlp.intermediate_size), float(D) if mlp.intermediate_size else 0.0
    shared = mlp.num_shared_experts * mlp.shared_intermediate_size
    return float(mlp.num_experts + ups * shared), float(D) if shared else 0.0


def expert_depth(mlp: Mlp, D: int) -> tuple[float, float]:
    """(whole, split) of one routed expert: up/gate at K = D, down at K = F (split by the experts' TP)."""
    if mlp.kind != "moe":
        return 0.0, 0.0
    return float((2 if mlp.gated else 1) * mlp.expert_intermediate_size), float(D)

