"""The serving terms a fit writes (catalog/efficiency/<chip>.toml, terms_schema.EfficiencyTerms) and the engine's field
each one sets (core.efficiency.Efficiency): one table, read by the loader's calibrated set and the fit's per-case
sets (theta.Theta) alike."""

from __future__ import annotations

from collections.abc import Callable

from tokenomy.validation.anchors import gemm_fill_steps

SERVING_FIELDS = ("flops_fraction_max", "gemm_half_tokens", "hbm_fraction", "kv_hbm_fraction", "step_overhead_s",
                  "kernel_overhead_s", "sequence_overhead_s", "overlap_loss", "narrow_flops_ratio", "allreduce_latency_s",
                  "link_fraction", "nccl_link_fraction", "request_overhead_s")

# where the file's name differs from the engine's: the file says which quantity was fitted (η_max of large GEMMs;
# the overhead of a whole step)
ENGINE_NAME = {"flops_fraction_max": "flops_fraction", "step_overhead_s": "overhead_s"}


def efficiency_kwargs(value_of: Callable[[str], object]) -> dict[str, object]:
    """Efficiency's keyword arguments from ``value_of(file field)`` over SERVING_FIELDS, and the GEMMs' K-loop fill
    c, which is a kernel's and no fit's (catalog/efficiency/gemm_depth.toml: validation.anchors.gemm_fill_steps)."""
    return {**{ENGINE_NAME.get(f, f): value_of(f) for f in SERVING_FIELDS}, "gemm_fill_steps": gemm_fill_steps()}
