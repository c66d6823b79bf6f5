"""The chunked state-space (SSD) scan of Mamba-2 mixers in a training step, at its kernels' published rate.

A Mamba-2 mixer's scan (Dao & Gu 2024, arXiv 2405.21060 §6) runs as a handful of small Triton kernels (mamba_ssm
ssd_bmm, ssd_chunk_state, ssd_state_passing, ssd_chunk_scan; their transposes in the backward), not as GEMMs: per
token and layer 2·(G·Q·N + H·Q·P + 2·H·P·N) forward FLOPs (arch/families/hybrid._mamba2, chunk Q). Their achieved
rate comes from the Mamba-2 paper's kernel benchmark (§9.3, Figure 10, A100 80GB, head dimension 64, state 64):
"SSD is faster than FlashAttention-2 starting at sequence length 2K" — at 2K the two take the same time per token.
FlashAttention-2 at 2K, head dimension 64, causal, forward and backward runs at about 150 TFLOP/s on A100 (Dao
2023, arXiv 2307.08691, Figure 4), on 4·d·s/2 = 262,144 FLOPs per token and head; the SSD's are
2·Q·P + 4·P·N = 49,152 per token and head (chunk 256, mamba_ssm's default), so
    r_SSD = 150 TFLOP/s · 49,152/262,144 ≈ 28 TFLOP/s.
The kernels are latency- and shared-memory-bound (chunk 128-256, per-head tiles of 64), so the rate is taken as
absolute, not a share of the chip's tensor peak: it does not grow with a newer chip's GEMM peak (wrong where a
chip-specific SSD kernel exists: the CuTe DSL Blackwell SSD kernel is not in the recipes of these cases). The
backward runs the transposed kernels on 2x the forward's FLOPs, a fully recomputed forward once more:
    t_scan = F_scan,stage · T_chip · (3 + full recompute) / r_SSD
F_scan,stage the scan FLOPs per token of the busiest stage's layers (ceil(L/pp)/L of the model's) over the TP
ranks (heads split), T_chip = micro-batch · seq_len · micro-batches / cp the tokens each chip runs per step.
"""

from __future__ import annotations

import numpy as np

from tokenomy.arch.model import ModelArch

SSD_FLOPS_PER_S = 150e12 * 49_152 / 262_144  # ≈ 28.1 TFLOP/s: module docstring


def scan_flops_per_token(m: ModelArch) -> float:
    """Σ over the model's layers of the chunked scan's forward FLOPs per token (0 without Mamba-2 mixers)."""
    return float(sum(ly.attention.scan_flops_per_token for ly in m.layers))


def scan_s(m: ModelArch, plan) -> object:
    """t_scan of one step on the busiest chip (module docstring); ``plan`` a core.training.TrainPlan."""
    L = len(m.layers)
    stage = np.ceil(L / np.asarray(plan.pp, dtype=float)) / L
    tokens = (np.asarray(plan.micro_batch, dtype=float) * np.asarray(plan.seq_len, dtype=float)
              * np.asarray(plan.microbatches, dtype=float) / np.asarray(plan.cp, dtype=float))
    redo = 1.0 if plan.recompute in ("full", "reversible") else 0.0
    flops = scan_flops_per_token(m) * stage / np.asarray(plan.tp, dtype=float) * tokens * (3 + redo)
    return flops / SSD_FLOPS_PER_S
