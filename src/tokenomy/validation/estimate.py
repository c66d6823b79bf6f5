"""The calibrated estimate of one pass, with the roofline bound beside it: what users should see by default.

    calibrated = max(GEMM time at η(tokens), bytes/(bw·η_hbm)) + TP all-reduce + o_step      (terms.py)
    roofline   = max(FLOPs/peak, bytes/bw)
with the chip's fitted terms (catalog/efficiency/<chip>.toml, else the pooled fit). Broadcasts over batch,
context and len_pass like core/roofline.step, which computes every FLOP and byte here.
"""

from __future__ import annotations

import numpy as np

from tokenomy.arch.model import ModelArch
from tokenomy.catalog import loader
from tokenomy.core.coeffs import coefficients
from tokenomy.core.roofline import BOUND_NAMES, Efficiency, HwCoeffs, step
from tokenomy.units import dtype_bytes
from tokenomy.validation.load import efficiency_for
from tokenomy.validation.prepare import quantized
from tokenomy.validation.terms import gemm_time_s, tp_allreduce_s


def calibrated_pass(model: "str | ModelArch", hardware: str, *, batch, context, len_pass=1, chips: int | None = None,
                    tp: int | None = None, weight_dtype: str | None = None, kv_dtype: str = "bf16") -> dict:
    """Arrays (broadcast over batch, context, len_pass): roofline and calibrated step time, the terms, the bound."""
    hw = loader.hardware(hardware)
    arch = model if isinstance(model, ModelArch) else loader.model(model)
    n = int(chips or hw.num_chips)
    g = int(tp or n)
    c = coefficients(arch)
    wd = weight_dtype or arch.quantization.dense
    if weight_dtype:
        c = quantized(c, weight_dtype)
    _, peak = hw.chip.flops_for(wd)
    eff = efficiency_for(hw.chip.name)
    t = eff.terms
    B, C, S = (np.asarray(x, dtype=float) for x in (batch, context, len_pass))
    tokens = B * S
    comms = tp_allreduce_s(g, tokens, arch.hidden_size, arch.num_layers, hw.chip.scale_up.bytes_per_s,
                           t.link_fraction, t.allreduce_latency_s)
    hwc = HwCoeffs(peak, hw.hbm_bytes_per_s, hw.hbm_bytes)
    roof = step(c, hwc, B, C, S, n, kv_bytes_per_elem=dtype_bytes(kv_dtype))
    cal = step(c, hwc, B, C, S, n, kv_bytes_per_elem=dtype_bytes(kv_dtype),
               eff=Efficiency(1.0, t.hbm_fraction, t.step_overhead_s), comms_s=comms)
    expert = 2.0 * c.moe_layers * c.experts_per_tok * c.expert_params
    rows = c.experts_per_tok / c.num_experts if c.num_experts > 1 else 1.0
    compute = np.where(cal.fits, gemm_time_s(cal.flops, tokens, expert, rows, n * peak, t.flops_fraction_max,
                                             t.gemm_half_tokens), np.nan)
    total = np.maximum(compute, cal.memory_s) + cal.comms_s + cal.overhead_s
    bound = np.argmax(np.stack(np.broadcast_arrays(compute, cal.memory_s, cal.comms_s, cal.overhead_s)), axis=0)
    return {"roofline_step_s": roof.step_s, "calibrated_step_s": total, "compute_s": compute,
            "memory_s": cal.memory_s, "comms_s": cal.comms_s, "overhead_s": cal.overhead_s,
            "bound": np.array(BOUND_NAMES)[bound], "fits": cal.fits, "terms_from": eff.chip,
            "memory_per_chip_bytes": cal.memory_per_chip_bytes, "hbm_bytes": cal.hbm_bytes,
            "fitted_on_cases": eff.n_fitted}
