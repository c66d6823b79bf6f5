"""The efficiency terms validation fits, as arrays aligned with the cases (one set per case, gathered by chip):
what predict.py times each case's work under, and the roofline set beside them."""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import lru_cache

import numpy as np

from tokenomy.core.efficiency import ROOFLINE, Efficiency
from tokenomy.validation.prepare import Serving
from tokenomy.validation.serving_terms import ENGINE_NAME, SERVING_FIELDS, efficiency_kwargs
from tokenomy.validation.terms_schema import EfficiencyTerms


@dataclass(frozen=True)
class Theta:
    """Efficiency terms as arrays aligned with the cases (or scalars); None = the roofline set. Its fields are
    serving_terms.SERVING_FIELDS (tests/validation/test_serving_terms.py)."""

    flops_fraction_max: object
    gemm_half_tokens: object
    hbm_fraction: object
    kv_hbm_fraction: object
    narrow_flops_ratio: object
    step_overhead_s: object
    kernel_overhead_s: object
    sequence_overhead_s: object
    overlap_loss: object
    allreduce_latency_s: object
    link_fraction: object
    nccl_link_fraction: object
    request_overhead_s: object

    def take(self, idx) -> "Theta":
        def one(v):
            return v[idx] if np.ndim(v) else v
        return Theta(**{f.name: one(getattr(self, f.name)) for f in fields(self)})

    def efficiency(self, idx=slice(None), col: bool = False) -> Efficiency:
        """The engine's efficiency set for cases ``idx`` (as a column against a grid when ``col``). One chip's
        terms (every field a number, as the fit evaluates them) give the same set for any cases: built once per
        ``col`` (a fit's evaluation asks for it ~160 times)."""
        if all(isinstance(getattr(self, f.name), (int, float)) for f in fields(self)):  # hashable numbers
            return self._scalar_set(col)
        return self._set(idx, col)

    @lru_cache(maxsize=2)
    def _scalar_set(self, col: bool) -> Efficiency:
        return self._set(slice(None), col)

    def _set(self, idx, col: bool) -> Efficiency:
        def g(v):
            v = np.asarray(v, dtype=float)
            v = v[idx] if v.ndim else v
            return v[:, None] if col and v.ndim else v
        return Efficiency(**efficiency_kwargs(lambda f: g(getattr(self, f))), name="custom")


def term(t: EfficiencyTerms, field: str) -> float:
    """A serving term of a chip's set; a set without a KV share (kv_hbm_fraction None) reads KV at η_hbm."""
    v = getattr(t, field)
    if v is None and field == "nccl_link_fraction":
        return t.link_fraction
    return t.hbm_fraction if v is None and field == "kv_hbm_fraction" else v


def gather(chips: np.ndarray, terms_by_chip: dict[str, EfficiencyTerms]) -> Theta:
    return Theta(**{f: np.array([term(terms_by_chip[c], f) for c in chips], dtype=float) for f in SERVING_FIELDS})


def roofline_theta(s: Serving) -> Theta:
    """The roofline set (core.efficiency.ROOFLINE) for every case: peak FLOP/s, HBM and link bandwidth, the link's
    own latency, no overhead."""
    # the roofline's KV share is η_hbm's and its ring share η_link's: the file's None read as term() reads it
    own = {f: getattr(ROOFLINE, ENGINE_NAME.get(f, f)) for f in SERVING_FIELDS}
    return Theta(**{**own, "kv_hbm_fraction": ROOFLINE.kv_fraction, "nccl_link_fraction": ROOFLINE.link_fraction})
