"""A router's measured load balance on real traffic, by expert-parallel size and expert placement.

Balls in bins (core/work.py ``_expert_load``) spreads a batch's token-expert assignments uniformly over the experts:
at prefill-sized batches the busiest of ep ranks then carries within 1% of the mean. Real routers do not: some
experts are popular for a workload, so the busiest rank carries μ/β, with β the balancedness mean/max of the
assignments per rank over a MoE layer. EPLB's placement (redundant copies of the popular experts, github.com/
deepseek-ai/EPLB) raises β without reaching 1, and β falls as the ranks grow (fewer experts a rank to average over).

    β(ep) = interpolated in log ep between the measured points, 1 at ep = 1 (one rank holds every expert), the
            last point held beyond the last measured size (the curve flattens there: 0.80 at 32, 0.81 at 72 with
            EPLB); the curve with EPLB where the layout has redundant experts, the default placement's without.

The points are a catalog fact of one model's router (catalog/models/routing.toml, with their source); a model
without a measurement keeps balls in bins (``ExpertBalance`` absent)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ExpertBalance:
    """β = mean/max token-expert assignments per EP rank (module docstring) at measured EP sizes: ``eplb`` with
    EPLB's placement, ``default`` without it; each a tuple of (ep, β) points in increasing ep."""

    eplb: tuple[tuple[float, float], ...]
    default: tuple[tuple[float, float], ...]
    source: str = ""

    def __post_init__(self) -> None:
        for name in ("eplb", "default"):
            pts = getattr(self, name)
            ep = [p[0] for p in pts]
            if not pts or any(not 0.0 < b <= 1.0 for _, b in pts) or any(e <= 1.0 for e in ep) or ep != sorted(ep):
                raise ValueError(f"expert balance {name}: (ep, balance) points with ep > 1 increasing and balance "
                                 f"in (0, 1], got {pts}")

    def at(self, ep, eplb):
        """β at EP size ``ep`` (arrays broadcast), the EPLB curve where ``eplb`` is true (module docstring)."""
        x = np.log(np.maximum(np.asarray(ep, dtype=float), 1.0))

        def curve(pts):
            return np.interp(x, np.log([1.0] + [p[0] for p in pts]), [1.0] + [p[1] for p in pts])
        return np.where(np.asarray(eplb, dtype=bool), curve(self.eplb), curve(self.default))
