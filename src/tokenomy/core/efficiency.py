"""Efficiency sets: the named gap terms between a roofline and a real system, as the engine consumes them.

    achievable FLOP/s of a GEMM with M rows = peak · η_max · M/(M + M_½) · M/max(M, M_tile)
        M_tile: the rows a tensor-core tile computes whatever M is (wgmma M = 64 on Hopper, tcgen05 M = 128 on
        Blackwell), so a 1-row GEMM costs a 64-row tile: compute that stays below the weight-streaming time, as
        decode GEMMs are memory-bound; M_½ = 0 and M_tile = 0 give a constant fraction
    achievable HBM bytes/s                  = bw · η_hbm
    collectives                             = alpha-beta per topology level, alpha = α_AR when the set gives one,
                                              beta over link_bw · η_link   (core/collectives.py)
    per-step overhead                       = o_step (kernel launches, scheduling, sampling)
    per-request overhead                    = o_req on time to first token (HTTP, tokenizer, queue entry)
The roofline is the set of ideal values (``ROOFLINE``); a calibrated set holds a chip's fitted terms (built from
catalog/efficiency/<chip>.toml by the answer layer: the core reads no file). Every field may be a float or a numpy
array that broadcasts against the grid (validation evaluates one set per case).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np


@dataclass(frozen=True)
class Efficiency:
    """Achievable fractions of peak, collective terms and fixed overheads. Defaults: the pure roofline."""

    flops_fraction: object = 1.0  # η_max: the share of peak FLOP/s large GEMMs reach
    hbm_fraction: object = 1.0  # η_hbm
    overhead_s: object = 0.0  # per step (per pipeline stage and micro-batch)
    hbm_usable_fraction: object = 1.0  # share of HBM capacity that weights + KV + activations may use
    gemm_half_tokens: object = 0.0  # M_½: GEMM rows at which half of η_max is reached
    gemm_tile_rows: object = 0.0  # M_tile: rows a tensor-core tile computes even when M is smaller
    allreduce_latency_s: object = None  # α of a TP all-reduce step on scale-up (None: the link's latency)
    link_fraction: object = 1.0  # η_link: achievable share of the scale-up link bandwidth
    request_overhead_s: object = 0.0  # per request, on time to first token
    name: str = "roofline"  # "roofline", "calibrated" or "custom"
    terms_from: str = ""  # the chip whose fitted terms these are ("pooled" for the prior)
    fitted_on_cases: int = 0

    def __post_init__(self) -> None:
        for field in ("flops_fraction", "hbm_fraction", "hbm_usable_fraction", "link_fraction"):
            v = np.asarray(getattr(self, field), dtype=float)
            if not np.all((v > 0) & (v <= 1)):
                raise ValueError(f"{field}: must be in (0, 1], got {getattr(self, field)}")
        for field in ("overhead_s", "gemm_half_tokens", "gemm_tile_rows", "request_overhead_s"):
            v = np.asarray(getattr(self, field), dtype=float)
            if not np.all(np.isfinite(v) & (v >= 0)):
                raise ValueError(f"{field}: must be a finite number >= 0, got {getattr(self, field)}")
        if self.allreduce_latency_s is not None:
            v = np.asarray(self.allreduce_latency_s, dtype=float)
            if not np.all(np.isfinite(v) & (v >= 0)):
                raise ValueError(f"allreduce_latency_s: must be a finite number >= 0, got {v}")

    def gemm_fraction(self, rows):
        """Achievable share of peak for GEMMs of ``rows`` rows: η_max·M/(M + M_½)·M/max(M, M_tile)."""
        m = np.maximum(np.asarray(rows, dtype=float), 1e-30)
        return self.flops_fraction * m / (m + self.gemm_half_tokens) * m / np.maximum(m, self.gemm_tile_rows)

    def with_(self, **kw) -> "Efficiency":
        return replace(self, **kw)

    @property
    def is_roofline(self) -> bool:
        return self.name == "roofline"


ROOFLINE = Efficiency()
EFFICIENCY_SETS = ("calibrated", "roofline")
