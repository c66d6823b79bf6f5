"""Nelder–Mead as a coroutine, so that several searches can advance in lockstep and share one evaluation.

``search`` yields the points it needs next (a 2-D array, one point a row) and receives their values; it returns
the best point. The arithmetic is plain Nelder–Mead with adaptive coefficients (Gao & Han 2012: reflection 1,
expansion 1 + 2/n, contraction 3/4 − 1/(2n), shrink 1 − 1/n), stopping when the simplex's values span less than
``tol`` or after ``max_evals`` evaluations. ``minimise`` drives one search with a function of one point;
``minimise_many`` drives several at once with a function that values every pending point of every search in one
call (validation's fit: the leave-one-source-out folds' losses from one engine pass over all their cases).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence

import numpy as np

Search = Generator[np.ndarray, np.ndarray, np.ndarray]


def search(x0: np.ndarray, step: float = 0.5, max_evals: int = 2500, tol: float = 1e-7) -> Search:
    n = x0.size
    a, g, c, sh = 1.0, 1 + 2 / n, 0.75 - 1 / (2 * n), 1 - 1 / n
    pts = np.vstack([x0] + [x0 + step * np.eye(n)[i] for i in range(n)])
    vals = np.array((yield pts.copy()), dtype=float)
    evals = n + 1
    while evals < max_evals:
        order = np.argsort(vals)
        pts, vals = pts[order], vals[order]
        if vals[-1] - vals[0] < tol:
            break
        cen = pts[:-1].mean(axis=0)
        xr = cen + a * (cen - pts[-1])
        fr = float((yield xr[None])[0])
        evals += 1
        if fr < vals[0]:
            xe = cen + g * (xr - cen)
            fe = float((yield xe[None])[0])
            evals += 1
            pts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = xr, fr
        else:
            xc = cen + c * ((xr if fr < vals[-1] else pts[-1]) - cen)
            fc = float((yield xc[None])[0])
            evals += 1
            if fc < min(fr, vals[-1]):
                pts[-1], vals[-1] = xc, fc
            else:
                pts[1:] = pts[0] + sh * (pts[1:] - pts[0])
                vals[1:] = (yield pts[1:].copy())
                evals += n
    return pts[np.argmin(vals)]


def minimise(f: Callable[[np.ndarray], float], x0: np.ndarray, **kw) -> np.ndarray:
    """The best point of one search, ``f`` called once per point."""
    return minimise_many(lambda reqs: [np.array([f(p) for p in pts]) for _, pts in reqs], [x0], **kw)[0]


def minimise_many(values: Callable[[list[tuple[int, np.ndarray]]], Sequence[np.ndarray]],
                  starts: Sequence[np.ndarray], **kw) -> list[np.ndarray]:
    """The best point of each search started at ``starts[k]``, advanced in lockstep: each round ``values`` gets
    every search's pending points as (k, points) and returns their values in the same order."""
    gens = [search(np.asarray(x, dtype=float), **kw) for x in starts]
    pending = {k: next(gen) for k, gen in enumerate(gens)}
    best: dict[int, np.ndarray] = {}
    while pending:
        reqs = list(pending.items())
        for (k, _), v in zip(reqs, values(reqs)):
            try:
                pending[k] = gens[k].send(np.asarray(v, dtype=float))
            except StopIteration as stop:
                best[k] = stop.value
                del pending[k]
    return [best[k] for k in range(len(starts))]
