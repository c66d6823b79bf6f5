"""Small formulas for the claims owned by other parts of tokenomy, one function per claim.

L11-L15 (inference tokens, Chinchilla, over-training, the cost split) belong to ``tokenomy.econ.lifecycle``;
L16-L20 and L26 (MoE on racks, pipelining, the latency floor) to ``tokenomy.parallel``. Each function here
states the lecture's formula so it can be swapped for the owning module's call without touching the claim table.
"""

from __future__ import annotations

import numpy as np

from tokenomy.units import SECONDS_PER_DAY

CHINCHILLA_TOKENS_PER_PARAM = 20.0  # Hoffmann et al. 2022; lecture §2.10 "× 20"


def inference_tokens(tokens_per_s, days):
    """L11/L12: D_inf = rate × deployment time (lecture §2.10)."""
    return np.asarray(tokens_per_s, float) * np.asarray(days, float) * SECONDS_PER_DAY


def chinchilla_tokens(active_params, tokens_per_param=CHINCHILLA_TOKENS_PER_PARAM):
    """L13: D_Chinchilla = 20·N."""
    return np.asarray(active_params, float) * tokens_per_param


def overtraining(tokens, active_params):
    """L14: D / D_Chinchilla."""
    return np.asarray(tokens, float) / chinchilla_tokens(active_params)


def token_split(pre_flops_per_token, rl_flops_per_token, rl_penalty, inf_flops_per_token, inf_penalty):
    """L15: equal spend on pre-training, RL and inference: f_pre·D_pre = f_RL·p_RL·D_RL = f_inf·p_inf·D_inf
    ⇒ D ∝ 1/(f·p); returned relative to D_pre."""
    w = np.array([pre_flops_per_token, rl_flops_per_token * rl_penalty, inf_flops_per_token * inf_penalty], float)
    d = 1.0 / w
    return d / d[0]


def scaleup_over_scaleout(experts_per_tok, layers_per_stage, bandwidth_ratio=8.0, dispatch_combine=2.0):
    """L16: t_scale-up / t_scale-out per stage = dispatch_combine·k·ℓ / bandwidth_ratio; ≥ 1 keeps the rack hop
    off the critical path (lecture §2.8). Counterpart: tokenomy.parallel.pipeline.rack_hop_ratio."""
    return dispatch_combine * np.asarray(experts_per_tok, float) * np.asarray(layers_per_stage, float) / \
        bandwidth_ratio


def memory_per_gpu(total_bytes, micro_batch, context, bytes_per_token, ep, stages):
    """L17: (weights, KV) per GPU = (N_total/(E·P), b·len·bytes_tok/E) with B = P·b (P cancels in the KV term).
    Counterpart: tokenomy.parallel.moe.lecture_memory_per_chip."""
    B = stages * micro_batch
    return total_bytes / (ep * stages), B * context * bytes_per_token / (ep * stages)


def expert_layout(num_experts: int, gpus: int) -> tuple[int, int]:
    """L18: use the largest GPU count ≤ ``gpus`` that divides the experts evenly → (GPUs used, experts per GPU).
    Counterpart: tokenomy.parallel.moe.placement."""
    used = max(g for g in range(1, gpus + 1) if num_experts % g == 0)
    return used, num_experts // used


def scaleup_capacity(chips, hbm_bytes_per_chip):
    """L19: HBM of one scale-up domain."""
    return np.asarray(chips, float) * np.asarray(hbm_bytes_per_chip, float)


def pipeline_added_latency(stages, hop_s):
    """L20: every decode token crosses every stage boundary: P·t_hop (lecture §2.8).
    Counterpart: tokenomy.parallel.pipeline.added_latency_per_token."""
    return np.asarray(stages, float) * np.asarray(hop_s, float)


def weight_read_floor(weight_bytes, chips, hbm_bytes_per_s):
    """L26: a decode step cannot beat reading every weight once: N_total/(n_scale-up · HBM_bw).
    Counterpart: tokenomy.parallel.moe.latency_floor_s."""
    return np.asarray(weight_bytes, float) / (np.asarray(chips, float) * np.asarray(hbm_bytes_per_s, float))
