"""A training step's time from its parts: compute at peak, communication by parallel dimension, pipeline bubble.

``parts`` are efficiency-free (core/training.py lowers a plan to them once, through the pass engine); ``timeline``
times them under training efficiency terms, so a fit evaluates thousands of term sets on the same parts
(tokenomy.validation) and ``tokenomy train`` evaluates one — the same function.

Compute under terms (η, φ, ψ, ψ_fused, F_½; ψ per chip, fitted by validation/train_fit.py):
    t_compute = t_dense,1/η + t_expert,1/(η·g(F_e)) + t_other
      η          ρ4·η for GEMMs at the chip's 4-bit peak (NVFP4 training: Transformer Engine's NVFP4BlockScaling
                 quantises every operand in 16-element blocks with E4M3 scales and a tensor scale, 2D 16x16 blocks
                 for weights, a random Hadamard transform on the weight-gradient inputs, stochastic rounding of
                 gradients; NVIDIA, "Pretraining Large Language Models with NVFP4", arXiv 2509.25149): ρ4 fitted
                 on the dense cases; ω16·η (at most 1) for GEMMs at the 16-bit peak: η is measured on FP8 GEMMs
                 (every dense GPU case in the catalog), and 8-bit GEMMs reach a smaller share of their doubled peak
                 (DeepGEMM's FP8 GEMMs top out at 1,550 of 1,979 TFLOP/s on H800, 0.78; the serving fit's
                 narrow_flops_ratio): ω16 fitted on the BF16 MoE cases
      t_x,1      the engine's roofline compute of the step's GEMMs and attention (peak at the compute dtype)
      g(F_e)     = F_e/(F_e + F_½): grouped-GEMM efficiency of routed experts of width F_e (moe_intermediate_size)
                 against a dense GEMM: tiles part-empty and per-expert launches. DeepGEMM's published H800 table
                 (github.com/deepseek-ai/DeepGEMM, README 2025-02) bounds it: its contiguous grouped FP8 GEMMs at
                 DeepSeek-V3's expert shapes (N 4096 / K 7168 and N 7168 / K 2048) run at 1,297 and 1,099 TFLOP/s
                 against 1,304 and 1,025 for dense GEMMs of the same N and K — no loss at F_e = 2048, so F_½ is
                 kept below 1,024 (catalog/efficiency/ranges.toml); with fused MoE kernels g = 1
      t_other    non-GEMM work: φ·t_act for dense models, ψ·t_act for MoE models (ψ_fused with fused MoE kernels),
                 t_act = the step's activation traffic (the engine's Work.act_bytes: every op's inputs and outputs,
                 for MoE the k routed copies of each token and their expert intermediates) x (3 + full recompute)
                 at HBM bandwidth. Norms, activations, softmax, residual adds, casts, routing and permutes are
                 memory-bound: they scale with the bytes they move (~T·D per layer), not with FLOPs (~T·D²), so a
                 FLOP share over-charges wide models (Llama 3.1 405B, DeepSeek-V3) and under-charges narrow ones
                 (Llama 3.1 8B, Qwen3-30B-A3B): leave-one-source-out 8.4% -> 7.8% dense, 18.5% -> 10.6% MoE.
                 They do not speed up with FP8 GEMMs. Fused MoE kernels (moe_kernels "fused": the expert MLP's
                 activation and quantisation in the grouped GEMM's epilogue, permutes fused with the dispatch, the
                 iteration in one CUDA graph — Megatron-Bridge 0.5.1 / NeMo 26.06 "CuTeDSL fused grouped GEMM, and
                 full iteration CUDA graphs"; DeepSeek's DeepGEMM + DeepEP) take ψ_fused in place of ψ, and g = 1
Step (Narayanan et al. 2021 arXiv 2104.04473 §2.2 for the bubble; the overlaps as Megatron-Core runs them):
    chain  = t_compute + max(t_TP − τ·t_compute, 0) + max(t_EP − ε·t_compute, 0) + max(t_CP − a·t_compute, 0)
             + n_sync·t_sync
    t_step = chain/(1 − bubble) + max(t_DP − h·t_compute, 0) + t_PP,exposed
CP ring-attention sends hide under the attention share a of the compute; DP traffic under h of it (DDP: the last
micro-batch's backward, (2/3)/m; ZeRO-3/FSDP prefetches under all of it, as torchtitan and Megatron-FSDP do);
EP all-to-alls under ε (DualPipe-style overlap: 1; none: 0); TP collectives under τ (0: on the critical path;
1: Megatron/Transformer Engine's --tp-comm-overlap, which splits each TP GEMM into chunks and pipelines the
all-gather / reduce-scatter of one chunk under the GEMM of the next, Wang et al. 2022 arXiv 2105.05720).
The host's part (core/moe_host.py): t_compute adds n_layer·t_layer, the fixed time of each unfused MoE layer per
micro-batch (its few hundred small kernels' launches and tails, which do not shrink with tokens); n_sync·t_sync
is host time the GPU waits for: a dropless MoE dispatcher that copies the tokens per expert to the host each MoE
layer (Megatron-Core's all-to-all and DeepEP dispatchers) drains the GPU's queue, so the host's launch of the
rest of the layer is exposed (t_layer, t_sync fitted: train_moe_layer_s, train_moe_sync_s).
The recipe's BF16 tail layers (Megatron-Core num_layers_at_end_in_bf16) run their GEMMs at the 16-bit peak under
η·ω16 (core/training.bf16_tail).
A Mamba-2 mixer's chunked scan adds t_scan to t_compute at its kernels' published absolute rate, not under η
(core/ssd_scan.py: the Mamba-2 paper's SSD-equals-FlashAttention-2-at-2K benchmark, ≈ 28 TFLOP/s).
Core attention through PyTorch SDPA's FlashAttention-2 (attention_kernel "fa2": torchtitan) leaves η's GEMMs and
adds t_attention = A_16·(3 + recompute)/0.35 (core/attention_kernel.py: FlashAttention-3 paper's 35% of H100 peak).
Dynamic per-tensor FP8 scaling (fp8_scaling "tensorwise": torchao Float8Linear) adds t_cast, its amax and cast
kernels' HBM traffic (core/fp8_casts.py: torchao's own roofline of them), where Transformer Engine fuses the casts.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np


@dataclass(frozen=True)
class TrainEfficiency:
    """Training efficiency terms: η the share of peak the training GEMMs reach; φ (other_dense), ψ (other_moe) and
    ψ_fused (other_moe_fused) the non-GEMM time per unit of the step's activation traffic at HBM bandwidth of a
    dense model, an MoE model and one with fused MoE kernels; F_½ the expert width at which unfused grouped GEMMs
    run at half of η; t_sync (moe_sync_s) the host time exposed by each host-synchronised MoE dispatch; t_layer
    (moe_layer_s) the fixed time of one unfused MoE layer's forward and backward per micro-batch; ρ4
    (fp4_flops_ratio) the share of η that 4-bit (NVFP4) training GEMMs reach of their own peak; ω16
    (wide_flops_ratio) how much more of their own peak 16-bit GEMMs reach than the 8-bit ones η is measured on.
    ROOFLINE_TRAIN is the ideal set (η 1, the rest 0)."""

    flops_fraction: object = 1.0
    other_dense: object = 0.0
    other_moe: object = 0.0
    expert_half_width: object = 0.0
    other_moe_fused: object = 0.0
    moe_sync_s: object = 0.0
    moe_layer_s: object = 0.0
    fp4_flops_ratio: object = 1.0
    wide_flops_ratio: object = 1.0
    name: str = "roofline"
    source: str = ""

    def __post_init__(self) -> None:
        eta = np.asarray(self.flops_fraction, dtype=float)
        if np.any(~((eta > 0) & (eta <= 1))):
            raise ValueError(f"flops_fraction: must be in (0, 1], got {self.flops_fraction!r}")
        if np.any(np.asarray(self.wide_flops_ratio, dtype=float) < 1):
            raise ValueError(f"wide_flops_ratio: must be >= 1, got {self.wide_flops_ratio!r}")
        rho = np.asarray(self.fp4_flops_ratio, dtype=float)
        if np.any(~((rho > 0) & (rho <= 1))):
            raise ValueError(f"fp4_flops_ratio: must be in (0, 1], got {self.fp4_flops_ratio!r}")
        for f in ("other_dense", "other_moe", "expert_half_width", "other_moe_fused", "moe_sync_s", "moe_layer_s"):
            v = np.asarray(getattr(self, f), dtype=float)
            if np.any(~(np.isfinite(v) & (v >= 0))):
                raise ValueError(f"{f}: must be a finite number >= 0, got {getattr(self, f)!r}")


ROOFLINE_TRAIN = TrainEfficiency()


@dataclass(frozen=True)
class TrainParts:
    """A step's efficiency-free parts (numbers or arrays that broadcast; one row per case in validation)."""

    dense_1_s: object  # roofline compute of everything but the routed experts (dense GEMMs, attention), recompute in
    expert_1_s: object  # roofline compute of the routed experts' GEMMs
    expert_width: object  # F_e (0 for a dense model)
    moe: object  # 1 for a model with routed experts
    att_share: object  # attention forward / compute: what hides ring-attention sends
    act_1_s: object  # the step's activation traffic at HBM bandwidth (the non-GEMM work scales with it)
    fused: object  # 1 where the routed experts run fused MoE kernels (moe_kernels "fused")
    bubble: object
    tp_s: object
    ep_s: object
    cp_s: object
    dp_s: object
    dp_hide: object
    ep_overlap: object
    tp_overlap: object
    pp_exposed_s: object
    sync_passes: object = 0.0  # n_sync: MoE-layer forwards per step whose dispatch waits for the host (moe_host.py)
    layer_passes: object = 0.0  # n_layer: unfused MoE layers x micro-batches on the busiest stage (moe_host.py)
    fp4: object = 0.0  # 1 where the GEMMs run at the chip's 4-bit peak (NVFP4 training)
    wide: object = 0.0  # 1 where the GEMMs run at the chip's 16-bit peak (BF16 training)
    scan_s: object = 0.0  # Mamba-2 mixers' chunked scan at its kernels' published rate (core/ssd_scan.py)
    attention_kernel_s: object = 0.0  # core attention at its kernel's published rate (core/attention_kernel.py)
    cast_s: object = 0.0  # FP8 operand casts of dynamic per-tensor scaling, memory passes (core/fp8_casts.py)
    dense16_1_s: object = 0.0  # the BF16 tail layers' dense GEMMs at the compute dtype's peak (training.bf16_tail)
    expert16_1_s: object = 0.0  # ... their routed experts' GEMMs
    tail16_ratio: object = 1.0  # peak at the compute dtype / 16-bit peak: how much longer the tail's GEMMs take

    def take(self, idx) -> "TrainParts":
        return TrainParts(**{f.name: np.asarray(getattr(self, f.name))[idx] if np.ndim(getattr(self, f.name))
                             else getattr(self, f.name) for f in fields(self)})


def stack_parts(items: list[TrainParts]) -> TrainParts:
    """Scalar parts stacked into one row per item."""
    return TrainParts(**{f.name: np.array([float(np.asarray(getattr(p, f.name))) for p in items])
                         for f in fields(TrainParts)})


def grouped_gemm_fraction(width, half_width):
    """g(F_e) = F_e/(F_e + F_½): 1 for dense models (F_e = 0 marks no routed experts) and for F_½ = 0."""
    F, h = np.asarray(width, dtype=float), np.asarray(half_width, dtype=float)
    return np.where(F > 0, F / np.maximum(F + h, 1e-30), 1.0)


def other_s(p: TrainParts, e: TrainEfficiency):
    """t_other = (φ | ψ | ψ_fused)·t_act: dense, MoE, MoE with fused kernels (module docstring)."""
    fused = np.asarray(p.fused) > 0
    psi = np.where(fused, e.other_moe_fused, e.other_moe)
    return np.where(np.asarray(p.moe) > 0, psi, e.other_dense) * p.act_1_s


def compute_s(p: TrainParts, e: TrainEfficiency):
    """t_compute under the terms (module docstring): the GEMMs, the non-GEMM passes and the MoE layers' fixed time."""
    eta = np.asarray(e.flops_fraction, dtype=float) * np.where(np.asarray(p.fp4) > 0, e.fp4_flops_ratio, 1.0)
    eta = np.minimum(eta * np.where(np.asarray(p.wide) > 0, e.wide_flops_ratio, 1.0), 1.0)
    g = np.where(np.asarray(p.fused) > 0, 1.0, grouped_gemm_fraction(p.expert_width, e.expert_half_width))
    gpu = p.dense_1_s / eta + p.expert_1_s / (eta * g) + other_s(p, e)
    # the recipe's BF16 tail layers (core/training.bf16_tail): their GEMMs at the 16-bit peak, η·ω16
    eta16 = np.minimum(np.asarray(e.flops_fraction, dtype=float) * e.wide_flops_ratio, 1.0)
    gpu = gpu + (p.dense16_1_s + p.expert16_1_s / g) * p.tail16_ratio / eta16
    return gpu + p.layer_passes * np.asarray(e.moe_layer_s, dtype=float) + p.scan_s + p.attention_kernel_s + p.cast_s


def timeline(p: TrainParts, e: TrainEfficiency, compute=None) -> dict:
    """Exposed terms and the step (module docstring); ``compute`` overrides t_compute (the MFU calibration)."""
    c = compute_s(p, e) if compute is None else compute
    cp_x = np.maximum(p.cp_s - p.att_share * c, 0.0)
    dp_x = np.maximum(p.dp_s - p.dp_hide * c, 0.0)
    ep_x = np.maximum(p.ep_s - p.ep_overlap * c, 0.0)
    tp_x = np.maximum(p.tp_s - p.tp_overlap * c, 0.0)
    sync_s = p.sync_passes * np.asarray(e.moe_sync_s, dtype=float)  # every stage waits: inside the chain
    chain = c + tp_x + ep_x + cp_x + sync_s
    bubble_s = chain * p.bubble / (1 - p.bubble)
    return dict(compute_s=c, tp_exposed_s=tp_x, cp_exposed_s=cp_x, dp_exposed_s=dp_x, ep_exposed_s=ep_x,
                host_sync_s=sync_s, bubble_s=bubble_s, step_s=chain + bubble_s + dp_x + p.pp_exposed_s)


def step_s(p: TrainParts, e: TrainEfficiency):
    return timeline(p, e)["step_s"]


def implied_flops_fraction(p: TrainParts, e: TrainEfficiency, target_s):
    """The η at which the step under ``e`` (its φ and F_½ kept) equals ``target_s`` (bisection in log η: the step
    falls monotonically in η); inf where even infinitely fast GEMMs are too slow."""
    roof = TrainEfficiency(1.0, 0.0, 0.0, e.expert_half_width, moe_sync_s=e.moe_sync_s)
    fixed = p.scan_s + p.attention_kernel_s + p.cast_s  # at their own rates, not under η
    gemm_1 = compute_s(p, roof) - fixed  # GEMM time at η = 1, width loss kept
    other = other_s(p, e) + fixed

    def at(eta):
        return timeline(p, e, compute=gemm_1 / eta + other)["step_s"]
    lo, hi = np.full(np.shape(target_s), 1e-4), np.full(np.shape(target_s), 1e4)
    for _ in range(80):
        mid = np.sqrt(lo * hi)
        slow = at(mid) > target_s
        lo, hi = np.where(slow, mid, lo), np.where(slow, hi, mid)
    return np.where(at(1e4) > target_s, np.inf, hi)
