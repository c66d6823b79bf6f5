"""The pass engine's fast paths, gathered here with the figure that keeps them (issue 27 item 5).

Fast paths (benchmarks/engine_fastpaths.py: each replaced by the formula it abbreviates, CPU time of tk.sweep on a
dense and an MoE decode grid of 3.1 M and 0.5 M points, median of 7 interleaved rounds): a term that is exactly 0
over the whole grid, or a layout column that is constant, is not formed over the grid — ``plus`` (1.01-1.08x),
``affine`` (1.03-1.09x), ``zero_of`` (1.04-1.07x), ``first_code`` (1.01-1.14x), ``fit`` without a mask
(1.03x), ``period`` of one kind of pass (1.02x), the int8 ``bound`` (1.03x); all of them together 1.23x (dense)
and 1.25x (MoE). None reaches 20% alone; they are kept together for that figure, and the three that bought
nothing measurable (a mask-free broadcast view, multiplying by an exact 1, the overlap terms at 0) were removed.

Each returns exactly what the plain formula in its docstring returns (benchmarks/engine_fastpaths.py replaces each by
that formula); the engine's physics (core/lowering.py, core/work.py, core/times.py) calls them as ``fast.name``."""

from __future__ import annotations

import numpy as np

from typing import TYPE_CHECKING

from tokenomy.core.reasons import FITS_REASON

if TYPE_CHECKING:
    from tokenomy.core.work import Work


def plus(x, k, y):
    """x + k·y; x itself where every k is 0 and y is finite (0·y adds 0, exactly): a step without prefill tokens
    skips their grid-sized terms. (Quantities always take the sum: the dimensional tests check its units.)"""
    if not np.any(k) and np.all(np.isfinite(y)):
        return x
    return x + k * y


def affine(a, b, x, zero_x):
    """a + b·x; where a and b are 0 and x finite (``zero_x`` the plain 0 of zero_of), zeros of that shape."""
    if isinstance(zero_x, float) and not np.any(a) and not np.any(b):
        return np.zeros(np.broadcast_shapes(np.shape(a), np.shape(b), np.shape(x)))
    return a + b * x


def zero_of(grid):
    """0·grid (zeros in a bare grid's shape), or a plain 0 where the grid is finite: adding either to a number
    gives the same value, the plain 0 without a grid-sized array."""
    return 0.0 if np.all(np.isfinite(grid)) else 0.0 * grid


def first_code(conds, codes):
    """np.select(conds, codes, 0) over the conditions' broadcast shape, the conditions that hold nowhere skipped."""
    shape = np.broadcast_shapes(*(np.shape(c) for c in conds), *(np.shape(v) for v in codes))
    live = [(c, v) for c, v in zip(conds, codes) if np.any(c)]
    out = np.select([c for c, _ in live], [v for _, v in live], 0) if live else \
        np.zeros((), dtype=np.result_type(*codes, 0))
    return out if np.shape(out) == shape else np.broadcast_to(out, shape).copy()


def fit(structure, over_hbm):
    """(reason, nan): the layout's or batch's code where it has one, else FITS_REASON where the memory is over the
    HBM, else 0; and 0 where that is 0, NaN elsewhere (added to every time), or None where every point is valid
    and fits (the common case: nothing to add). Without any layout code both come from ``over_hbm`` alone: the
    same values, two grid-sized np.where fewer."""
    structure = np.asarray(structure)
    shape = np.broadcast_shapes(structure.shape, np.shape(over_hbm))
    clean = not np.any(structure)
    if clean and not np.any(over_hbm):
        return np.zeros(shape, dtype=np.int64), None
    fits_code = over_hbm * FITS_REASON  # int64, as np.where(over_hbm, FITS_REASON, 0)
    if structure.dtype == fits_code.dtype and shape == fits_code.shape and clean:
        return fits_code, np.where(over_hbm, _NAN, _ZERO)
    reason = np.where(structure != 0, structure, fits_code)
    return reason, np.where(reason == 0, _ZERO, _NAN)


_ZERO, _NAN = np.zeros(()), np.full((), np.nan)  # 0-d operands: np.where's fast path for scalar branches


def period(w: Work, stage_s, hop_total):
    """Decode: max(M·stage, pp·stage + hops·hop); a longer pass: (M + pp − 1)·stage + hops·hop (``hop_total`` None:
    no hops). Only the kind of pass present is formed, and max(M·stage, pp·stage + h) = pp·stage + h when M is pp
    (h >= 0; the default micro-batches): the same values as the full expression."""
    pp, M, decode = w.pp, w.microbatches, np.asarray(w.decode)
    add = (lambda x: x) if hop_total is None else (lambda x: x + hop_total)  # noqa: E731

    def dec():
        if M is pp or np.array_equal(M, pp):
            return add(pp * stage_s)
        return np.maximum(M * stage_s, add(pp * stage_s))

    def longer():
        return add((M + pp - 1.0) * stage_s)
    if np.broadcast_shapes(decode.shape, np.shape(stage_s)) == np.shape(stage_s):
        if np.all(decode):
            return dec()
        if not np.any(decode):
            return longer()
    return np.where(decode, dec(), longer())


def bound(compute_s, memory_s, top, others):
    """Index into BOUNDS of the largest term: compute or memory, then each of ``others`` ((index, seconds) pairs)
    where it is strictly larger than all before it; ``top`` = max(compute, memory). NaN compares false."""
    # 1 (memory) unless compute >= memory, NaN included, as np.where(compute >= memory, 0, 1); int8 (five codes):
    # an eighth of int64's memory traffic over the grid
    bound = np.asarray(np.logical_not(np.greater_equal(compute_s, memory_s))).view(np.int8)
    shape = np.broadcast_shapes(bound.shape, *(np.shape(t) for _, t in others))
    if shape != bound.shape:
        bound = np.broadcast_to(bound, shape).copy()
    for j, (i, t) in enumerate(others):
        np.copyto(bound, np.int8(i), where=t > top)  # the mask broadcasts (an array-valued term may be smaller)
        if j < len(others) - 1:
            top = np.maximum(top, t)
    return bound
