"""A training plan lowered once, efficiency-free (``lower_step``): FLOPs and compute at peak through the pass engine,
memory per chip (core/memory.py), TP/EP/CP/DP/PP traffic (core/train_comms.py), the pipeline bubble
(core/schedules.py) — the parts core/train_time.py times under training terms (core/training.py's docstring).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from tokenomy.arch.model import ModelArch
from tokenomy.core import engine
from tokenomy.core.attention_kernel import kernel_attention_s
from tokenomy.core.deployment import Deployment
from tokenomy.core.efficiency import ROOFLINE
from tokenomy.core.fp8_casts import fp8_cast_s
from tokenomy.core.memory import TrainBytes, TrainMemory, train_memory, with_gemm_inputs
from tokenomy.core.moe_host import layer_passes, sync_passes
from tokenomy.core.schedules import BackwardSplit, schedule_bubble
from tokenomy.core.ssd_scan import scan_s
from tokenomy.core.train_comms import step_comms
from tokenomy.core.pp_layout import imbalance
from tokenomy.core.train_flops import (TrainFlops, per_token_flops, recompute_extra, recompute_mm_flops,
                                       redoes_attention)
from tokenomy.core.train_plan import TrainPlan, plan_problems, training_layout
from tokenomy.core.train_time import TrainParts
from tokenomy.specs import Hardware


def _forward(dep: Deployment, plan: TrainPlan) -> tuple[engine.Work, engine.Work]:
    """The forward passes of one step on the training layout: s tokens per sequence, and s - 1 (the "full"
    attention convention's last query is their difference)."""
    lay, B = training_layout(plan)
    d = dep.with_(layout=lay)
    s = np.asarray(plan.seq_len, dtype=float)
    return d.work(B, s, s), d.work(B, s - 1, s - 1)


def _attention_only(w: engine.Work) -> engine.Work:
    """The attention part of a forward (what selective recompute repeats), as a Work the engine can time."""
    return replace(w, dense_flops=0.0 * w.dense_flops, expert_flops=0.0 * w.expert_flops)


@dataclass(frozen=True)
class LoweredStep:
    """A plan lowered once, efficiency-free: FLOPs, memory per chip, the parts the step is timed from."""

    flops: TrainFlops
    model_flops: object
    hardware_flops: object
    peak_flops_per_s: float
    memory: TrainMemory
    parts: TrainParts
    comm_s: object  # this chip's collectives and sends, all dimensions
    pp_s: object
    split: BackwardSplit = BackwardSplit()  # the stage's T_F, T_B, T_W the bubble was taken over (core/schedules.py)


def _expert_width(m: ModelArch) -> float:
    mlp = next((ly.mlp for ly in m.layers if ly.mlp.kind == "moe"), None)
    return float(mlp.expert_intermediate_size) if mlp is not None else 0.0


@dataclass(frozen=True)
class Lowering:
    """How a step is lowered beside its plan: the attention convention counted (ATTENTION_CONVENTIONS), the GEMMs'
    dtype and what the step stores (core.memory.TrainBytes: weight, gradient, optimizer and activation bytes,
    dropout, FlashAttention, usable HBM)."""

    attention: str = "causal"
    compute_dtype: str = "bf16"
    nbytes: TrainBytes = TrainBytes()


def ep_overlap_of(plan: TrainPlan):
    """The share of the compute that hides the EP all-to-alls: the plan's ``ep_overlap`` (in [0, 1]); DualPipe runs
    each forward chunk beside a backward chunk and hides each one's dispatch and combine under the other's computation
    (DeepSeek-V3 report §3.2.1): ε = 1 whatever ep_overlap says."""
    return 1.0 if plan.schedule == "dualpipe" else np.clip(np.asarray(plan.ep_overlap, dtype=float), 0.0, 1.0)


def stage_imbalance(m: ModelArch, p: TrainPlan) -> float:
    """The plan's slowest pipeline rank over the engine's even stage (core/pp_layout.imbalance); 1 without a
    pp_layout."""
    if not p.pp_layout:
        return 1.0
    pp, vp = (np.asarray(x) for x in (p.pp, p.virtual_stages))
    if pp.size != 1 or vp.size != 1 or np.asarray(p.seq_len).size != 1:
        raise ValueError("pp_layout: one layout needs one pp, virtual_stages and seq_len")
    return imbalance(m, p.pp_layout, int(pp), int(vp), float(p.seq_len))


def lower_step(m: ModelArch, hw: Hardware, plan: TrainPlan, how: Lowering = Lowering()) -> LoweredStep:
    """The plan's FLOPs (through the pass engine), memory and step parts (core/train_time.py); refused with the
    layout's problems in one line."""
    attention, compute_dtype, act_bytes = how.attention, how.compute_dtype, how.nbytes.act_bytes
    grad_bytes = how.nbytes.grad_bytes
    # Training routes on its own balancing (DeepSeek-V3 report §2.1.2: each expert's bias is moved every step
    # against its load; Megatron's auxiliary losses), not on the serving traffic whose skew arch/routing.py holds:
    # balls in bins
    dep = Deployment(replace(m, expert_balance=None), hw)
    problems = plan_problems(m, plan, dep)
    if problems:
        raise ValueError("; ".join(problems))  # each names its field first ('global_batch: ...')
    p = plan
    gemm_dtype, peak = hw.chip.flops_for(compute_dtype)
    mb, cp = p.microbatches, np.asarray(p.cp, dtype=float)
    w, w_prev = _forward(dep, p)
    up = recompute_mm_flops(m, p.recompute, p.recompute_modules)
    fl = per_token_flops(w, w_prev, p.seq_len, attention, p.recompute, up, p.recompute_modules)
    tokens = np.asarray(p.global_batch, dtype=float) * p.seq_len
    # The engine times the busiest chip's forward of one micro-batch at peak; training HBM fit is train_memory's.
    peaks = engine.Peaks(peak, hw.chip.hbm_bytes_per_s, np.inf)

    def roof(work):
        return engine.times(work, dep.topo, peaks, ROOFLINE).compute_s * mb / cp

    fwd, att = roof(w), roof(_attention_only(w))
    # Core attention (FlashAttention / cuDNN; a state-space mixer's scan) runs in 16 bits whatever dtype the GEMMs
    # use: Megatron-Core's fp8_dot_product_attention and Megatron-Bridge's mixed-precision recipes default to False
    # (transformer_config.py, mixed_precision.py), so its FLOPs go at the 16-bit peak.
    att16 = att * peak / hw.chip.flops_for("bf16")[1]
    fwd, att = fwd + att16 - att, att16
    # uneven stages (core/pp_layout.py): every slot of the schedule waits for the slowest rank, so its forward (and
    # with it the backward, the recompute, the bubble, the EP all-to-alls and the activation traffic) paces the step
    imb = stage_imbalance(m, p)
    fwd, att = fwd * imb, att * imb
    # EP dispatch + combine: the engine's all-to-alls of the forward pass (core/collectives.py: per topology level,
    # DeepEP's node-limited, once-per-node copies for passes of many tokens), repeated by the backward (the
    # gradients travel the same routes in reverse) and by a fully recomputed forward.
    ep_fwd = engine.times(w, dep.topo, peaks, ROOFLINE).ep_comm_s * mb / cp * imb
    redo = np.where(p.recompute in ("full", "reversible"), 1.0, 0.0)
    ep_s = ep_fwd * (2 + redo)
    # The non-GEMM work moves activations (core/train_time.py): the forward's activation traffic,
    # repeated by the backward (x2) and a fully recomputed forward, at HBM bandwidth.
    act_s = np.asarray(w.act_bytes, dtype=float) * mb / cp * (3 + redo) / hw.chip.hbm_bytes_per_s * imb
    expert = roof(replace(w, dense_flops=0.0 * w.dense_flops, attn_flops=0.0 * w.attn_flops)) * imb
    # modules: the attention, and the up-projections' share of the forward's FLOPs; op: its every-second mms' share
    up_share = up / (np.asarray(w.flops, dtype=float) / (np.asarray(w.batch, dtype=float) * p.seq_len))
    # selective: the core attention when its list holds core_attn (the default), and the modules' GEMMs' share
    redo_att = float(redoes_attention(p.recompute, p.recompute_modules))
    redo_share = recompute_extra(p.recompute, p.recompute_modules, att / fwd, up_share, 1.0) + 0.0 * fwd
    total = 3 * fwd + redo_share * fwd  # forward, backward 2x (data + weight gradients), recompute
    expert_total = expert * (3 + redo)
    # the usable HBM of every door (specs.Chip); GEMM inputs kept as the FP8 recipe quantizes them (core/memory.py)
    mem = train_memory(m, p, hw.chip.exposed_hbm_bytes, with_gemm_inputs(how.nbytes, gemm_dtype, p.fp8_scaling))
    cm = step_comms(m, dep.shape.coeffs, hw.topology, p, mem, act_bytes, grad_bytes, p.recompute)
    # The schedule's bubble (core/schedules.py) over this stage's backward split from the engine's FLOPs: W = the
    # weight GEMMs' gradients (the forward less core attention), B = the input gradients and the recompute.
    split = BackwardSplit.of(fwd, att, redo_share * fwd)
    bubble = schedule_bubble(p.schedule, p.pp, mb, p.virtual_stages, split)
    ep_overlap = ep_overlap_of(p)
    width = _expert_width(m)
    fused = p.moe_kernels == "fused" and width > 0
    # attention forward, backward 2x, recomputed once (op saves the SDPA output: not recomputed)
    att_all = att * (3 + redo_att)
    tail = bf16_tail(m, p, total - expert_total - att_all, expert_total,
                     gemm_dtype, peak / hw.chip.flops_for("bf16")[1])
    att_moved, att_kernel_s = kernel_attention_s(p.attention_kernel, att_all)
    n_moe = sum(ly.mlp.kind == "moe" for ly in m.layers)
    parts = TrainParts(dense_1_s=total - expert_total - tail["dense16_1_s"] - att_moved,
                       expert_1_s=expert_total - tail["expert16_1_s"], **tail,
                       expert_width=width, moe=float(width > 0), att_share=att / total, act_1_s=act_s,
                       fused=float(fused), bubble=bubble,
                       tp_s=cm["tp_s"], ep_s=ep_s, cp_s=cm["cp_s"], dp_s=cm["dp_s"], dp_hide=cm["dp_hide"],
                       ep_overlap=ep_overlap, tp_overlap=np.clip(np.asarray(p.tp_overlap, dtype=float), 0, 1),
                       pp_exposed_s=cm["pp_exposed_s"],
                       sync_passes=sync_passes(p.moe_dispatcher, fused, n_moe, p.pp, mb, redo),
                       layer_passes=layer_passes(fused, n_moe, p.pp, mb), fp4=float(gemm_dtype == "fp4"),
                       # ω16 compares 16-bit with the 8-bit GEMMs η is measured on: only a chip that has both
                       wide=float(gemm_dtype in ("bf16", "fp16") and "fp8" in hw.chip.peak_flops_per_s),
                       scan_s=scan_s(m, p), attention_kernel_s=att_kernel_s,
                       cast_s=fp8_cast_s(m, p, gemm_dtype, hw.chip.hbm_bytes_per_s))
    comm = cm["tp_s"] + ep_s + cm["cp_s"] + cm["dp_s"] + cm["pp_s"]
    return LoweredStep(fl, tokens * fl.model, tokens * fl.hardware, peak, mem, parts, comm, cm["pp_s"], split)


def bf16_tail(m: ModelArch, plan: TrainPlan, dense_gemm_1_s, expert_1_s, gemm_dtype: str, peak_ratio) -> dict:
    """The GEMMs of the recipe's last ``bf16_layers_at_end`` layers at the 16-bit peak (Megatron-Core
    first_last_layers_bf16: those layers' linear layers run outside the FP8/FP4 autocast). Megatron-Bridge's
    ``nemotron_3_super_bf16_with_nvfp4_mixed`` (src/megatron/bridge/training/mixed_precision.py) keeps the last 14 of
    Nemotron-3-Super's 88 layers in BF16, "the final 15%" of NVIDIA's NVFP4 pre-training recipe (arXiv 2509.25149).
    They sit on the last pipeline stage, which sets the step: a share τ = min(n/ceil(L/pp), 1) of its GEMMs'
    roofline time moves from the GEMM peak to the 16-bit one, ``peak_ratio`` = peak/peak16 times longer at η·ω16
    (core/train_time.compute_s); layers weighed equally (Nemotron's tail is the model's mix of Mamba, MoE and
    attention layers). Megatron's hybrid (Mamba) stack counts each mixer and each MLP/MoE block as a layer
    (hybrid_override_pattern, 88 for Nemotron-3-Super) where a Layer here pairs a mixer with the block after it
    (Layer.norms counts its blocks). No tail under BF16 GEMMs."""
    hybrid = any(ly.attention.variant == "mamba2" for ly in m.layers)
    L = sum(ly.norms for ly in m.layers) if hybrid else len(m.layers)
    n = np.asarray(plan.bf16_layers_at_end, dtype=float)
    tau = np.where(gemm_dtype in ("bf16", "fp16"), 0.0,
                   np.minimum(n / np.ceil(L / np.asarray(plan.pp, dtype=float)), 1.0))
    return dict(dense16_1_s=tau * dense_gemm_1_s, expert16_1_s=tau * expert_1_s, tail16_ratio=peak_ratio + 0.0 * tau)
