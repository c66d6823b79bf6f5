"""Pydantic schema of the fitted efficiency files (catalog/efficiency/*.toml): the named gap terms between the
roofline and a real system (``EfficiencyTerms``, consumed by core.efficiency.Efficiency), a chip's file of them with
the cases they were fitted on (``EfficiencyFile``, written by ``tokenomy validate --refit``) and the declared
train/test split of the validation cases (``SplitRule``, catalog/efficiency/split.toml). The cases themselves:
validation/schema.py.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EfficiencyTerms(_Strict):
    """Named gap terms between the roofline and a real system, per chip (consumed by core.efficiency.Efficiency; validation/predict.py)."""

    flops_fraction_max: float = Field(gt=0, le=1)  # achievable share of peak FLOP/s for large 16-bit GEMMs
    gemm_half_tokens: float = Field(ge=0)  # GEMM rows (tokens) at which half of flops_fraction_max is reached
    hbm_fraction: float = Field(gt=0, le=1)  # share of HBM bandwidth streamed weights reach (anchored: anchors.py)
    kv_hbm_fraction: float | None = Field(default=None, gt=0, le=1)  # share paged KV reads reach (None: hbm_fraction)
    narrow_flops_ratio: float = Field(default=1.0, gt=0, le=1)  # share of that GEMMs in <= 8 bits reach
    step_overhead_s: float = Field(ge=0)  # fixed per forward step (scheduling, sampling, host work)
    kernel_overhead_s: float = Field(default=0.0, ge=0)  # κ: per kernel a layer launches, per step (arch/kernels.py)
    sequence_overhead_s: float = Field(default=0.0, ge=0)  # per running sequence of a scheduler per step: host work
    overlap_loss: float = Field(default=0.0, ge=0, le=1)  # share of min(compute, memory) not hidden under the max
    allreduce_latency_s: float = Field(ge=0)  # α of one all-reduce shot on scale-up (anchored: anchors.py)
    link_fraction: float = Field(gt=0, le=1)  # share of scale-up bandwidth the P2P kernels reach (custom AR, a2a)
    nccl_link_fraction: float | None = Field(default=None, gt=0, le=1)  # ring / NVLS all-reduce (anchored: anchors.py)
    request_overhead_s: float = Field(ge=0)  # fixed per request on time to first token (API, tokenizer, queue entry; held: anchors.py)
    train_flops_fraction: float = Field(gt=0, le=1)  # achievable share of peak for pre-training GEMMs
    train_other_dense: float = Field(ge=0)  # non-GEMM time (norms, attention softmax, exposed comms, optimizer)
    #                                        per unit of bf16-peak GEMM time, dense models; precision-independent
    train_other_moe: float = Field(ge=0)  # ψ: MoE models' non-GEMM time per unit of the step's activation traffic
    #                                        at HBM bandwidth (routing, permutes, SwiGLU, casts; core/train_time.py)
    train_expert_half_width: float = Field(default=0.0, ge=0)  # F_½: routed-expert width at which grouped GEMMs
    #                                        run at half of train_flops_fraction (core/train_time.py)
    train_other_moe_fused: float = Field(default=0.0, ge=0)  # ψ_fused: the same with fused MoE kernels and the
    #                                        iteration in one CUDA graph (TrainPlan.moe_kernels "fused")
    train_moe_sync_s: float = Field(default=0.0, ge=0)  # t_sync: host time exposed per MoE-layer forward by a
    #                                        dispatcher that waits for the tokens per expert (core/moe_host.py)
    train_moe_layer_s: float = Field(default=0.0, ge=0)  # t_host: host launch time of one unfused MoE layer's
    #                                        forward and backward per micro-batch (core/moe_host.py)
    train_fp4_flops_ratio: float = Field(default=1.0, gt=0, le=1)  # ρ4: share of η 4-bit (NVFP4) training GEMMs
    #                                        reach of the 4-bit peak (core/train_time.py)
    train_wide_flops_ratio: float = Field(default=1.0, ge=1)  # ω16: 16-bit training GEMMs reach ω16·η of their
    #                                        peak, η being measured on 8-bit ones (core/train_time.py)


FITTED_SOURCE = ("fitted: tokenomy validate --refit on the cases listed in fitted_on "
                 "(each case's own source is in catalog/validation/*.toml)")


class EfficiencyFile(_Strict):
    chip: str  # chip name, or "pooled" for the fallback fitted on every chip
    source: str = FITTED_SOURCE  # these numbers are computed: say how
    fitted: str  # date of the fit
    split_rule: str
    terms: EfficiencyTerms
    fitted_on: list[str]  # case ids of the training split used
    n_fitted: int
    in_sample: dict[str, float] = Field(default_factory=dict)  # median |error| by metric on fitted_on
    note: str = ""


class SplitRule(_Strict):
    """The declared train/test split: a case is in the fit set when hash(key) % modulus < train_below."""

    rule: str
    key: Literal["id"]
    modulus: int = Field(gt=1)
    train_below: int = Field(gt=0)
    note: str = ""
