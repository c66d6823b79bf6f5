"""The roofline of one forward pass, vectorised over any broadcastable grid.

    t_compute = FLOPs / (n·peak·η_flops)                     (Pope et al. 2022 §2; lecture §2.1)
    t_memory  = (weights + KV read + KV written + activations) / (n·HBM_bw·η_hbm)
    t_step    = max(t_compute, t_memory) + t_comms + t_overhead
with FLOPs and bytes summed from the op list (arch/ops.py) for T = B·len_pass new tokens over a
context of C positions, weights and KV split evenly over n chips (real layouts: tokenomy.parallel).
Configurations that do not fit in HBM get NaN times and ``fits = False``: they never return numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.core.coeffs import ModelCoeffs

BOUND_NAMES = ("compute", "memory", "comms", "overhead")


@dataclass(frozen=True)
class Efficiency:
    """Achievable fractions of peak and a fixed per-step overhead. Defaults: the pure roofline."""

    flops_fraction: float = 1.0
    hbm_fraction: float = 1.0
    overhead_s: float = 0.0
    hbm_usable_fraction: float = 1.0  # share of HBM capacity that weights + KV + activations may use

    def __post_init__(self) -> None:
        for name in ("flops_fraction", "hbm_fraction", "hbm_usable_fraction"):
            v = getattr(self, name)
            if not 0 < v <= 1:
                raise ValueError(f"{name} must be in (0, 1], got {v}")
        if self.overhead_s < 0:
            raise ValueError(f"overhead_s must be >= 0, got {self.overhead_s}")


@dataclass(frozen=True)
class HwCoeffs:
    """Per-chip hardware numbers (floats or arrays)."""

    peak_flops_per_s: object  # at the compute dtype
    hbm_bytes_per_s: object
    hbm_bytes: object


@dataclass(frozen=True)
class Step:
    """One pass per grid point. Times in seconds, bytes in bytes; NaN times where ``fits`` is False."""

    batch: object
    context: object
    len_pass: object
    chips: object
    flops: object
    weight_bytes: object  # read this pass, all chips
    kv_read_bytes: object
    kv_write_bytes: object
    act_bytes: object
    compute_s: object
    memory_s: object
    comms_s: object
    overhead_s: object
    step_s: object
    bound: object  # index into BOUND_NAMES
    tokens_per_s: object
    mfu: object
    weight_bytes_per_chip: object  # resident
    kv_bytes_per_chip: object
    act_bytes_per_chip: object
    memory_per_chip_bytes: object
    hbm_bytes: object
    fits: object


def _count(x):
    """The bare number of a count (tokens as an exponent); keeps floats and arrays as they are."""
    return getattr(x, "magnitude", x)


def _num(x):
    """Arrays of floats, but unit-carrying quantities (pint, in the dimensional tests) pass through."""
    return x if hasattr(x, "units") else np.asarray(x, dtype=float)


def experts_touched(tokens, num_experts, experts_per_tok):
    """Expected distinct experts one MoE layer reads when ``tokens`` tokens each pick k of E uniformly:
    E·(1 − (1 − k/E)^T). T=1 gives k; T→∞ gives E. (Balls-in-bins; real routers are less uniform.)"""
    return num_experts * (1.0 - (1.0 - experts_per_tok / num_experts) ** _count(tokens))


def kv_positions(m: ModelCoeffs, context, ctx_cap):
    """KV elements per sequence at ``context`` positions: global layers hold all, windowed hold min(C, w)."""
    return m.kv_global * context + m.kv_local * np.minimum(ctx_cap, m.window)


def step(m: ModelCoeffs, hw: HwCoeffs, batch, context, len_pass=1, chips=1, *,
         weight_bytes_per_param=None, kv_bytes_per_elem=2.0, act_bytes_per_elem=2.0,
         eff: Efficiency = Efficiency(), comms_s=0.0) -> Step:
    """Roofline of a pass of ``len_pass`` new tokens per sequence for ``batch`` sequences whose context
    (cached + new) is ``context`` positions. len_pass = 1 is decode; len_pass = context is a fresh prefill."""
    B, C, S, n = (_num(x) for x in (batch, context, len_pass, chips))
    T = B * S
    wd, we, wx = ((m.dense_w, m.embed_w, m.expert_w) if weight_bytes_per_param is None
                  else (weight_bytes_per_param,) * 3)
    # Causal attention: the j-th new token sees C - S + j positions; on average C - (S - 1)/2.
    c_avg = C - (S - S / _count(S)) / 2.0  # = C - (S - 1)/2 in tokens
    decode = _count(S) <= 1.0
    score_g = np.where(decode, m.score_global_decode, m.score_global_prefill)
    score_l = np.where(decode, m.score_local_decode, m.score_local_prefill)
    flops = T * (m.matmul_flops_per_token + score_g * c_avg + score_l * np.minimum(c_avg, m.window))
    touched = experts_touched(T, m.num_experts, m.experts_per_tok)
    weight_bytes = m.dense_params * wd + m.head_params * we + m.moe_layers * touched * m.expert_params * wx
    kv_read = B * kv_positions(m, C, C) * kv_bytes_per_elem
    kv_write = T * (m.kv_global + m.kv_local) * kv_bytes_per_elem
    act = T * m.act_elems_per_token * act_bytes_per_elem
    compute_s = flops / (n * hw.peak_flops_per_s * eff.flops_fraction)
    memory_s = (weight_bytes + kv_read + kv_write + act) / (n * hw.hbm_bytes_per_s * eff.hbm_fraction)
    comms = np.broadcast_to(np.asarray(comms_s, dtype=float), np.shape(compute_s))
    overhead = np.full(np.shape(compute_s), eff.overhead_s)
    step_s = np.maximum(compute_s, memory_s) + comms + overhead
    bound = np.argmax(np.stack(np.broadcast_arrays(compute_s, memory_s, comms, overhead)), axis=0)

    w_chip = (m.capacity_dense_params * wd + m.capacity_embed_params * we + m.capacity_expert_params * wx) / n
    kv_chip = kv_read / n
    act_chip = T * m.act_peak_elems_per_token * act_bytes_per_elem / n
    mem_chip = w_chip + kv_chip + act_chip
    fits = mem_chip <= hw.hbm_bytes * eff.hbm_usable_fraction
    nan = np.nan
    tokens_per_s = T / step_s
    mfu = flops / (step_s * n * hw.peak_flops_per_s)
    return Step(
        batch=B, context=C, len_pass=S, chips=n, flops=flops, weight_bytes=weight_bytes, kv_read_bytes=kv_read,
        kv_write_bytes=kv_write, act_bytes=act,
        compute_s=np.where(fits, compute_s, nan), memory_s=np.where(fits, memory_s, nan),
        comms_s=np.where(fits, comms, nan), overhead_s=np.where(fits, overhead, nan),
        step_s=np.where(fits, step_s, nan), bound=bound, tokens_per_s=np.where(fits, tokens_per_s, nan),
        mfu=np.where(fits, mfu, nan), weight_bytes_per_chip=w_chip, kv_bytes_per_chip=kv_chip,
        act_bytes_per_chip=act_chip, memory_per_chip_bytes=mem_chip,
        hbm_bytes=hw.hbm_bytes * eff.hbm_usable_fraction, fits=fits)
