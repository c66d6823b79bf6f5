"""Prefill and decode passes of one model on one hardware, over arrays of batch and context.

A thin layer over core/roofline.py that resolves dtypes and chip counts and turns the grid into rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.arch.model import ModelArch
from tokenomy.core.coeffs import ModelCoeffs, coefficients
from tokenomy.core.roofline import BOUND_NAMES, Efficiency, HwCoeffs, Step, step
from tokenomy.specs import Hardware
from tokenomy.units import dtype_bytes, fmt_bytes


@dataclass(frozen=True)
class PassResult:
    """A pass evaluated on a grid, with what was resolved to get there."""

    model: str
    hardware: str
    chips: int
    weight_dtype: str  # "native" when the checkpoint's own quantization is used
    kv_dtype: str
    compute_dtype: str
    peak_flops_per_s: float
    hbm_bytes_per_s: float
    usd_per_chip_hour: float
    step: Step

    def rows(self) -> list[dict]:
        """One dict per grid point, with the CLI's JSON keys; NaN becomes None."""
        s = self.step
        arrays = np.broadcast_arrays(s.batch, s.context, s.len_pass, s.compute_s, s.memory_s, s.comms_s,
                                     s.overhead_s, s.step_s, s.bound, s.tokens_per_s, s.mfu,
                                     s.memory_per_chip_bytes, s.fits, s.weight_bytes_per_chip, s.kv_bytes_per_chip,
                                     s.act_bytes_per_chip)
        flat = [np.ravel(a) for a in arrays]
        keys = ("batch", "context", "len_pass", "compute_s", "memory_s", "comms_s", "overhead_s", "step_s", "bound",
                "tokens_per_s", "mfu", "memory_per_chip_bytes", "fits", "weights_per_chip_bytes",
                "kv_per_chip_bytes", "activations_per_chip_bytes")
        out = []
        for i in range(flat[0].size):
            row = {k: _py(v[i]) for k, v in zip(keys, flat)}
            row["batch"], row["context"], row["len_pass"] = int(row["batch"]), int(row["context"]), int(row["len_pass"])
            row["fits"] = bool(row["fits"])
            row["bound"] = BOUND_NAMES[int(flat[8][i])] if row["fits"] else None
            row["why"] = None if row["fits"] else why_not_fit(row, float(np.ravel(np.broadcast_to(
                s.hbm_bytes, flat[0].shape))[i]))
            out.append(row)
        return out


def _py(v):
    v = v.item() if hasattr(v, "item") else v
    return None if isinstance(v, float) and v != v else v


def why_not_fit(row: dict, hbm_bytes: float) -> str:
    return (f"needs {fmt_bytes(row['memory_per_chip_bytes'])} per chip (weights "
            f"{fmt_bytes(row['weights_per_chip_bytes'])} + KV {fmt_bytes(row['kv_per_chip_bytes'])} + activations "
            f"{fmt_bytes(row['activations_per_chip_bytes'])}) > {fmt_bytes(hbm_bytes)} usable HBM")


def compute_dtype_for(m: ModelArch, weight_dtype: str | None) -> str:
    """Matmuls run at the weights' precision: the override, else the dense weights' native dtype."""
    return weight_dtype or m.quantization.dense


def hw_coeffs(hw: Hardware, compute_dtype: str) -> tuple[HwCoeffs, str]:
    used, peak = hw.chip.flops_for(compute_dtype)
    return HwCoeffs(peak, hw.hbm_bytes_per_s, hw.hbm_bytes), used


def _positive(name: str, x) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.size == 0 or not np.all(np.isfinite(a)) or np.any(a <= 0):
        raise ValueError(f"{name} must be positive numbers, got {x!r}")
    return a


def run_pass(m: ModelArch, hw: Hardware, *, batch, context, len_pass=1, chips: int | None = None,
             weight_dtype: str | None = None, kv_dtype: str = "bf16", compute_dtype: str | None = None,
             eff: Efficiency = Efficiency(), coeffs: ModelCoeffs | None = None) -> PassResult:
    """Evaluate a pass; ``batch``, ``context`` and ``len_pass`` broadcast against each other."""
    n = hw.num_chips if chips is None else int(chips)
    _positive("chips", n)
    B, C, S = _positive("batch", batch), _positive("context", context), _positive("len_pass", len_pass)
    if np.any(S > C):
        raise ValueError("len_pass must be <= context (the new tokens are part of the context)")
    cd = compute_dtype or compute_dtype_for(m, weight_dtype)
    hwc, used = hw_coeffs(hw, cd)
    wb = None if weight_dtype is None else dtype_bytes(weight_dtype)
    st = step(coeffs or coefficients(m), hwc, B, C, S, n, weight_bytes_per_param=wb,
              kv_bytes_per_elem=dtype_bytes(kv_dtype), eff=eff)
    return PassResult(m.name, hw.name, n, weight_dtype or "native", kv_dtype, used, hwc.peak_flops_per_s,
                      hw.hbm_bytes_per_s, hw.usd_per_chip_hour, st)
