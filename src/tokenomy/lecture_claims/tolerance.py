"""How close a computed figure must be to the lecture's to count as reproduced (lecture.md §4.1 "tol.")."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

Kind = Literal["exact", "rel", "abs", "factor", "order", "same"]


@dataclass(frozen=True)
class Tol:
    """exact: relative 1e-6 · rel: |c−l| ≤ a·|l| · abs: |c−l| ≤ a · factor: l/a ≤ c ≤ l·a ·
    order: within 10× · same: equal text. Lists compare element by element; a scalar lecture value
    against a list of computed values must hold for each."""

    kind: Kind
    amount: float = 0.0

    def text(self) -> str:
        return {"exact": "exact", "rel": f"±{100 * self.amount:g}%", "abs": f"±{self.amount:g}",
                "factor": f"within ×{self.amount:g}", "order": "order of magnitude (×10)",
                "same": "same answer"}[self.kind]

    def _one(self, c, lv) -> bool:
        if self.kind == "same" or isinstance(lv, str) or isinstance(c, str):
            return str(c) == str(lv)
        if c is None or lv is None or not math.isfinite(float(c)):
            return False
        c, lv = float(c), float(lv)
        if self.kind == "exact":
            return abs(c - lv) <= 1e-6 * max(abs(lv), 1e-300)
        if self.kind == "rel":
            return abs(c - lv) <= self.amount * abs(lv)
        if self.kind == "abs":
            return abs(c - lv) <= self.amount
        if c <= 0 or lv <= 0:
            return False
        limit = self.amount if self.kind == "factor" else 10.0
        return 1.0 / limit <= c / lv <= limit

    def ok(self, computed, lecture) -> bool:
        cs = computed if isinstance(computed, (list, tuple)) else [computed]
        ls = lecture if isinstance(lecture, (list, tuple)) else [lecture] * len(cs)
        return len(cs) == len(ls) and all(self._one(c, lv) for c, lv in zip(cs, ls))
