"""A prepared case's engine work as arrays: many cases' ``engine.Work`` stacked along a leading axis (one row per
case), subsets taken, interleaved prefill tokens added by linearity, and the decode work on each case's batch grid
stacked once as a table (``GridTable``) that a fractional batch interpolates in a few index operations
(validation/case_step.py). Efficiency-free, as engine.Work is: the fit times these arrays under many terms."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from tokenomy.core import engine

WORK_FIELDS = tuple(f.name for f in dataclasses.fields(engine.Work))


def stack_work(items: list[engine.Work], grid: int = 0) -> engine.Work:
    """Works of the same grid shape stacked along a new leading axis (one row per case); none: empty arrays of
    shape (0,) or, for a grid of ``grid`` points, (0, grid) (a catalog selection with no aggregated case)."""
    if not items:
        return engine.Work(**{f: np.zeros((0, grid) if grid else (0,)) for f in WORK_FIELDS})
    shape = np.broadcast_shapes(*(np.shape(getattr(w, f)) for w in items for f in WORK_FIELDS))
    return engine.Work(**{f: np.stack([np.broadcast_to(np.asarray(getattr(w, f)), shape) for w in items])
                          for f in WORK_FIELDS})


def take_work(w: engine.Work, idx) -> engine.Work:
    return engine.Work(**{f: getattr(w, f)[idx] for f in WORK_FIELDS})


def numeric(x) -> bool:
    return np.asarray(x).dtype.kind == "f"


def add_prefill(w: engine.Work, per_token: engine.Work, tokens) -> engine.Work:
    """``w`` plus ``tokens`` interleaved prefill tokens: work(P) = work(0) + P·(work per prefill token), field by
    field (the engine's work is linear in P for dense models: every field is a sum over tokens)."""
    p = np.asarray(tokens, dtype=float)
    return engine.Work(**{f: (getattr(w, f) + p * getattr(per_token, f)) if numeric(getattr(w, f))
                          else getattr(w, f) for f in WORK_FIELDS})



@dataclass(frozen=True)
class GridSide:
    """One side of the grid table (P = 0, or per prefill token): its float fields that vary along the grid as
    [fields, cases, G] and those flat along it (finite and equal at every grid point of every case: a layout's
    counts, a chip's resident weights; most of a prefill token's work) as [fields, cases], each with its row in
    the table's field order."""

    varying: np.ndarray
    varying_at: np.ndarray
    flat: np.ndarray
    flat_at: np.ndarray

    @classmethod
    def of(cls, w: engine.Work, numeric: tuple[str, ...]) -> "GridSide":
        X = np.stack([np.asarray(getattr(w, f), float) for f in numeric])
        flat = np.array([bool(np.all(np.isfinite(x)) and np.all(x == x[:, :1])) for x in X], dtype=bool)
        return cls(X[~flat], np.flatnonzero(~flat), np.ascontiguousarray(X[flat, :, 0]), np.flatnonzero(flat))

    def at(self, rows: np.ndarray, j: np.ndarray, u: np.ndarray) -> np.ndarray:
        """[fields, len(rows)]: each case's fields at grid point j + u (linear between j and j + 1). A flat field
        is x0 + 0.0 there (what the interpolation x0 + u·(x1 − x0) gives for x1 = x0, finite)."""
        out = np.empty((self.varying_at.size + self.flat_at.size, rows.size))
        x0 = self.varying[:, rows, j]
        out[self.varying_at] = x0 + u * (self.varying[:, rows, j + 1] - x0)
        out[self.flat_at] = self.flat[:, rows] + 0.0
        return out


@dataclass(frozen=True)
class GridTable:
    """The decode work of every prepared case on its batch grid, stacked once so that interpolating a step's work
    is a few index operations, not one per field: the float fields (``numeric``) at P = 0 (``at_zero``) and for
    one interleaved prefill token (``per_token``), the others (flags, codes) at P = 0 as [cases, G] each."""

    numeric: tuple[str, ...]
    at_zero: GridSide
    per_token: GridSide
    other: dict[str, np.ndarray]

    @classmethod
    def of(cls, grid: engine.Work, per_token: engine.Work) -> "GridTable":
        num = tuple(f for f in WORK_FIELDS if numeric(getattr(grid, f)))
        return cls(num, GridSide.of(grid, num), GridSide.of(per_token, num),
                   {f: np.asarray(getattr(grid, f)) for f in WORK_FIELDS if f not in num})


