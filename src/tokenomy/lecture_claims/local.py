"""The claims owned by other parts of tokenomy, one function per claim, each a call into the owning module.

L11-L15 (inference tokens, Chinchilla, over-training, the cost split): ``tokenomy.econ.lifecycle`` / ``econ.scaling``;
L16-L20 and L26 (MoE on racks, pipelining, the latency floor): ``tokenomy.parallel``. The claim table
(lecture/claims.py) calls only these names, so an owner can change its API by changing one function here.
"""

from __future__ import annotations

import numpy as np

from tokenomy.econ import lifecycle, scaling
from tokenomy.core import pipeline
from tokenomy.parallel import moe
from tokenomy.units import SECONDS_PER_DAY


def inference_tokens(tokens_per_s, days):
    """L11/L12: D_inf = rate × deployment time (lecture §2.10)."""
    return lifecycle.inference_tokens(tokens_per_s, np.asarray(days, float) * SECONDS_PER_DAY)


def chinchilla_tokens(active_params):
    """L13: D_Chinchilla = 20·N."""
    return scaling.chinchilla_tokens(active_params)


def overtraining(tokens, active_params):
    """L14: D / D_Chinchilla."""
    return scaling.overtraining_factor(tokens, active_params)


def token_split(rl_flops_per_token, rl_penalty, inf_penalty):
    """L15: equal spend 6·D_pre = f_RL·p_RL·D_RL = 2·p_inf·D_inf ⇒ (D_pre, D_RL, D_inf) relative to D_pre."""
    pen = lifecycle.Penalties(rl_flops_factor=rl_flops_per_token, rl_penalty=rl_penalty, inference_penalty=inf_penalty)
    return list(lifecycle.infer_from_inference(1.0, 1.0, 1.0, pen).ratio)


def scaleup_over_scaleout(experts_per_tok, layers_per_stage, bandwidth_ratio=8.0):
    """L16: t_scale-up / t_scale-out per stage = 2 (dispatch + combine)·k·ℓ / (scale-up/scale-out bandwidth);
    ≥ 1 keeps the rack hop off the critical path (lecture §2.8)."""
    return pipeline.rack_hop_ratio(experts_per_tok, layers_per_stage, bandwidth_ratio, 1.0)


def memory_per_gpu(total_bytes, micro_batch, context, bytes_per_token, ep, stages):
    """L17: (weights, KV) per GPU = (N_total/(E·P), b·len·bytes_tok/E) with B = P·b (P cancels in the KV term)."""
    return moe.lecture_memory_per_chip(total_bytes, micro_batch, context, bytes_per_token, ep, stages)


def expert_layout(num_experts: int, gpus: int) -> tuple[int, int]:
    """L18: the largest GPU count ≤ ``gpus`` dividing the experts evenly → (GPUs used, experts per GPU)."""
    p = moe.placement(num_experts, gpus)
    return p.ep, p.experts_per_chip


def scaleup_capacity(chips, hbm_bytes_per_chip):
    """L19: HBM of one scale-up domain."""
    return np.asarray(chips, float) * np.asarray(hbm_bytes_per_chip, float)


def pipeline_added_latency(stages, hop_s):
    """L20: every decode token crosses every stage boundary: P·t_hop (lecture §2.8)."""
    return pipeline.added_latency_per_token(stages, hop_s)


def weight_read_floor(weight_bytes, chips, hbm_bytes_per_s):
    """L26: a decode step cannot beat reading every weight once: N_total/(n_scale-up · HBM_bw)."""
    return moe.latency_floor_s(weight_bytes, chips, hbm_bytes_per_s)
