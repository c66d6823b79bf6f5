"""Training cases through the one training model: each case's published layout lowered by core.training.lower_step
(the engine's FLOPs, memory, TP/EP/CP/DP/PP communication, pipeline bubble), then timed by core.train_time under
fitted terms — the same lowering and timeline ``tokenomy train`` runs.

A case's plan: dp = chips/(tp·pp·cp); ZeRO-3 when the source says FSDP, else Megatron's distributed optimizer
(ZeRO-1); sequence parallel with TP; the schedule the source names (DualPipe), else the interleaved one with vp
virtual stages when vp > 1, else 1F1B;
micro-batch and global batch as published; the case's recompute, TP and EP communication overlap (the recipe's
moe_a2a_overlap: Megatron-Core's combined 1F1B, megatron/core/pipeline_parallel/combined_1f1b.py) and MoE kernels
(fused where the release notes name fused grouped GEMMs and full-iteration CUDA graphs); its attention kernel
(PyTorch SDPA's FlashAttention-2 for torchtitan, core/attention_kernel.py) and FP8 casts (torchao's tensorwise
scaling, core/fp8_casts.py); GEMMs at the case's precision.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from tokenomy.catalog import loader
from tokenomy.core.train_time import ROOFLINE_TRAIN, TrainEfficiency, TrainParts, stack_parts, step_s
from tokenomy.core.memory import TrainBytes
from tokenomy.units import dtype_bytes
from tokenomy.core.training import Lowering, TrainPlan, lower_step
from tokenomy.validation.load import Case
from tokenomy.validation.schema import TrainingCase
from tokenomy.validation.terms_schema import EfficiencyTerms

TRAIN_FIELDS = ("train_flops_fraction", "train_other_dense", "train_other_moe", "train_expert_half_width",
                "train_other_moe_fused", "train_moe_sync_s", "train_moe_layer_s", "train_fp4_flops_ratio",
                "train_wide_flops_ratio")


@dataclass
class Training:
    """Arrays over M training cases: their lowered step parts, the roofline step and what was measured."""

    cases: list[Case]
    chip: np.ndarray
    measured: np.ndarray  # step seconds
    parts: TrainParts  # one row per case
    roofline_s: np.ndarray  # the step at the roofline terms (η 1, φ 0)
    moe: np.ndarray  # bool
    fits: np.ndarray  # bool: the memory model holds the published layout

    def take(self, mask) -> "Training":
        idx = np.flatnonzero(mask) if np.asarray(mask).dtype == bool else np.asarray(mask, dtype=int)
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = ([v[i] for i in idx] if f.name == "cases" else v.take(idx) if f.name == "parts"
                           else v[idx])
        return Training(**out)


def case_plan(c: TrainingCase) -> TrainPlan:
    """The published layout as a TrainPlan (module docstring)."""
    dp = c.chips // (c.tp * c.pp * c.cp)
    if dp * c.tp * c.pp * c.cp != c.chips:
        raise ValueError(f"{c.id}: chips {c.chips} is not a multiple of tp·pp·cp = {c.tp * c.pp * c.cp}")
    schedule = c.schedule or ("interleaved" if c.vp > 1 else "1f1b")
    return TrainPlan(dp=dp, tp=c.tp, pp=c.pp, cp=c.cp, ep=c.ep, zero=3 if c.fsdp else 1, sp=c.tp > 1,
                     schedule=schedule, virtual_stages=c.vp, recompute=c.recompute,
                     micro_batch=c.micro_batch, seq_len=c.seq_len, global_batch=c.global_batch,
                     tp_overlap=float(c.tp_comm_overlap),
                     ep_overlap=float(c.ep_comm_overlap), moe_kernels=c.moe_kernels, moe_dispatcher=c.moe_dispatcher,
                     bf16_layers_at_end=c.bf16_layers_at_end, attention_kernel=c.attention_kernel,
                     fp8_scaling=c.fp8_scaling, offload_layers=c.offload_layers,
                     recompute_modules=tuple(c.recompute_modules), pp_layout=c.pp_layout)


def case_bytes(c: TrainingCase) -> TrainBytes:
    """What the case's recipe stores: bf16 weights, gradients and activations, flash attention, an fp32 master copy
    and Adam moments of the case's optimizer_dtype, its loss's bytes per logit (GEMM inputs as its FP8 recipe keeps
    them: core.training.lower_step)."""
    return TrainBytes(optimizer_bytes=4.0 + 2 * dtype_bytes(c.optimizer_dtype), flash=True, logit_bytes=c.logit_bytes)


def _lowered(c: TrainingCase):
    return _lowered_json(c.model_dump_json())


@lru_cache(maxsize=None)
def _lowered_json(raw: str):
    """lower_step of one case, once per process (the case as JSON: pydantic models are not hashable)."""
    c = TrainingCase.model_validate_json(raw)
    try:
        # fused (flash) attention: every framework in the catalog runs it
        return lower_step(loader.model(c.model), loader.hardware(c.hardware), case_plan(c),
                          Lowering(compute_dtype=c.precision, nbytes=case_bytes(c)))
    except ValueError as e:
        raise ValueError(f"training case {c.id}: {e}") from None


def prepare_training(cases: list[Case]) -> Training:
    rows = [c for c in cases if c.kind == "training"]
    low = [_lowered(c.case) for c in rows]
    parts = stack_parts([lo.parts for lo in low])  # empty arrays for a serving-only subset
    return Training(cases=rows, chip=np.array([c.case.hardware for c in rows]),
                    measured=np.array([c.case.value for c in rows], dtype=float), parts=parts,
                    roofline_s=np.asarray(step_s(parts, ROOFLINE_TRAIN), dtype=float).reshape(len(low)),
                    moe=np.array([bool(lo.parts.moe) for lo in low], dtype=bool),
                    fits=np.array([bool(np.all(lo.memory.fits)) for lo in low], dtype=bool))


def _engine_name(field: str) -> str:
    """An efficiency file's training field as the engine's TrainEfficiency field: train_x -> x."""
    return field.removeprefix("train_")


def train_efficiency(t: EfficiencyTerms, name: str = "calibrated") -> TrainEfficiency:
    """A chip's fitted training terms as the engine's training efficiency set."""
    return TrainEfficiency(**{_engine_name(f): getattr(t, f) for f in TRAIN_FIELDS}, name=name)


def predict_training(t: Training, terms: dict) -> np.ndarray:
    """Each case's step under ``terms`` (TRAIN_FIELDS -> a scalar or an array aligned with the cases; a field left
    out keeps the ideal set's value): core.train_time.step_s."""
    e = TrainEfficiency(**{_engine_name(f): np.asarray(v, dtype=float) for f, v in terms.items()}, name="custom")
    return step_s(t.parts, e)
