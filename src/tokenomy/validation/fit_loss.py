"""The loss a serving fit minimises and the space it searches (validation/calibrate_fit.py's docstring): the terms
in unconstrained coordinates (``_to_z`` / ``_from_z``: logit of each term's place in its plausible range, or log),
a fit's ``Problem`` (its cases, prior, ridge, anchored terms, start), and ``losses``, which values many points of
many problems in one engine pass (``_Stack``)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from tokenomy.validation import anchors
from tokenomy.validation.metrics import pseudo_huber
from tokenomy.validation.predict import predict_serving
from tokenomy.validation.prepare import Serving
from tokenomy.validation.terms_schema import EfficiencyTerms
from tokenomy.validation.theta import SERVING_FIELDS, Theta, term

FRACTIONS = {"narrow_flops_ratio", "flops_fraction_max", "hbm_fraction", "kv_hbm_fraction", "link_fraction", "overlap_loss",
             "nccl_link_fraction"}
SOFT_SCALE = 0.15  # residuals beyond ~15% count linearly, not quadratically
NAN_RESIDUAL = np.log(3.0)  # a configuration the model says cannot run counts as a 3x error

@lru_cache(maxsize=1)
def _ranges() -> dict[str, tuple[float, float]]:
    """field -> (low, high): the plausible range of each fitted serving term (catalog/efficiency/ranges.toml, each
    with its public anchor). The fit searches inside it: a term driven to its edge is a missing mechanism the
    residuals then show, not a value that absorbs it (a free ρ had gone to 0.13 on B200 to fit vLLM/SGLang runs
    of new models slower than their kernels)."""
    from tokenomy.catalog import loader

    data = loader.read_toml("efficiency", "ranges")
    return {f: (float(data[f]["low"]), float(data[f]["high"])) for f in SERVING_FIELDS if f in data}


def _to_z(t: EfficiencyTerms) -> np.ndarray:
    """The search coordinates of the serving terms: a ranged term x in (low, high) as logit of its place in the
    range (on a log scale for a time or a count), other fractions as logit(x), other positive terms as log(x)."""
    out = []
    for f in SERVING_FIELDS:
        x = term(t, f)
        if f in _ranges():
            lo, hi = _scale(f, *_ranges()[f])
            u = (_scale(f, x)[0] - lo) / (hi - lo)
            u = min(max(u, 1e-9), 1.0 - 1e-9)
            out.append(np.log(u / (1 - u)))
        elif f in FRACTIONS:
            x = min(x, 1.0 - 1e-9)  # an anchored share of 1
            out.append(np.log(x / (1 - x)))
        else:
            out.append(np.log(max(x, 1e-12)))
    return np.array(out)


def _scale(f: str, *xs: float) -> tuple[float, ...]:
    """A fraction's range is searched linearly, a time's or a count's on a log scale."""
    return tuple(x if f in FRACTIONS else np.log(max(x, 1e-12)) for x in xs)


def _from_z(z: np.ndarray, base: EfficiencyTerms) -> EfficiencyTerms:
    vals = {}
    for f, x in zip(SERVING_FIELDS, z):
        u = float(1 / (1 + np.exp(-x)))
        if f in _ranges():
            lo, hi = _scale(f, *_ranges()[f])
            v = lo + (hi - lo) * u
            vals[f] = v if f in FRACTIONS else float(np.exp(v))
        else:
            vals[f] = min(max(u, 1e-9), 1.0) if f in FRACTIONS else float(np.exp(x))
    return base.model_copy(update=vals)


def _theta(t: EfficiencyTerms) -> Theta:
    return Theta(**{f: term(t, f) for f in SERVING_FIELDS})


def log_residuals(s: Serving, t: EfficiencyTerms) -> np.ndarray:
    r = np.log(predict_serving(s, _theta(t)).value / s.measured)
    return np.where(np.isfinite(r), r, NAN_RESIDUAL)


def _weights(metric: np.ndarray) -> np.ndarray:
    """Each metric weighted equally: 1/(cases of the metric) per case."""
    counts = {m: np.sum(metric == m) for m in np.unique(metric)}
    return np.array([1.0 / counts[m] for m in metric])


@dataclass(frozen=True)
class Problem:
    """One fit of the serving terms (module docstring's loss): the cases ``idx`` of a Serving, the ``prior`` the
    ridge pulls toward (with the anchored ``fixed`` terms in it), and where the search starts (``start``: a
    warm start from a fit nearby; None: the prior, searched from afar)."""

    idx: np.ndarray
    prior: EfficiencyTerms
    ridge: float
    fixed: dict[str, float]
    start: EfficiencyTerms | None = None
    per_case: tuple[tuple[str, np.ndarray], ...] = ()  # anchored terms held at each case's own chip's value (a
    #                                                    fit over several chips: a die's, a family's, the pool's)

    @property
    def free(self) -> np.ndarray:
        return np.array([f not in self.fixed for f in SERVING_FIELDS])

    def full(self, zf: np.ndarray) -> np.ndarray:
        z = _to_z(self.prior)
        z[self.free] = zf
        return z

    def terms(self, zf: np.ndarray) -> EfficiencyTerms:
        # the held terms exactly: through the search coordinates a held 0 inside a range (o_seq's) comes back as
        # the range's floor, ~1e-12, where a fit over several chips holds each case's at its own exact value
        return _from_z(self.full(zf), self.prior).model_copy(update=self.fixed)

    def x0(self) -> np.ndarray:
        return _to_z(self.start.model_copy(update=self.fixed) if self.start is not None else self.prior)[self.free]


def problem(s_idx: np.ndarray, prior: EfficiencyTerms, ridge: float, fixed: dict[str, float] | None = None,
            start: EfficiencyTerms | None = None, per_case: dict[str, np.ndarray] | None = None) -> Problem:
    fixed = fixed or {}
    return Problem(np.asarray(s_idx, dtype=int), prior.model_copy(update=fixed), ridge, fixed, start,
                   tuple((f, np.asarray(v, dtype=float)) for f, v in (per_case or {}).items()))


def case_anchors(s: Serving, idx: np.ndarray) -> dict[str, np.ndarray]:
    """Each anchored term at the value of each case's own chip (validation/anchors.py), aligned with ``idx``."""
    by_chip = {c: anchors.anchored(c) for c in set(s.chip[idx])}
    return {f: np.array([by_chip[c][f] for c in s.chip[idx]], dtype=float) for f in anchors.HELD_FIELDS}


MAX_STACKED_CASES = 8192  # cases per engine pass when several points are valued at once (memory: ~20 kB a case)
MAX_STACKS = 16  # stacked runs of problems a fit keeps (~1.5 kB a case): a round's runs, and a shrink's

def losses(s: Serving, reqs: list[tuple[Problem, np.ndarray]], stacks: dict | None = None) -> list[np.ndarray]:
    """The loss of every point of every request (problem, points [m, free]): one engine pass over all their cases
    (in pieces of at most MAX_STACKED_CASES), each case under its point's terms. ``stacks``: a fit's memo of the
    stacked cases of each run of problems (``_Stack``: the same problems are valued round after round)."""
    segs = [(p, z) for p, zs in reqs for z in zs]
    stacks = {} if stacks is None else stacks
    out, j = [], 0
    while j < len(segs):
        k, n = j, 0
        while k < len(segs) and (k == j or n + segs[k][0].idx.size <= MAX_STACKED_CASES):
            n += segs[k][0].idx.size
            k += 1
        key = tuple(id(p) for p, _ in segs[j:k])
        stack = stacks.pop(key, None) or _Stack(s, [p for p, _ in segs[j:k]])
        stacks[key] = stack  # the most recent last: the oldest goes when the memo is full
        if len(stacks) > MAX_STACKS:
            del stacks[next(iter(stacks))]
        out += stack.losses([z for _, z in segs[j:k]])
        j = k
    it = iter(out)
    return [np.array([next(it) for _ in zs]) for _, zs in reqs]


class _Stack:
    """The cases of a run of problems stacked for one engine pass, with what does not depend on the point valued:
    the stacked Serving, each problem's metric weights and its prior in search coordinates."""

    def __init__(self, s: Serving, problems: list[Problem]):
        self.problems = problems
        self.sub = s.take(np.concatenate([p.idx for p in problems]))
        self.weights = [_weights(s.metric[p.idx]) for p in problems]
        self.prior_z = [_to_z(p.prior)[p.free] for p in problems]

    def losses(self, points: list[np.ndarray]) -> list[float]:
        ts = [p.terms(z) for p, z in zip(self.problems, points)]
        own = [dict(p.per_case) for p in self.problems]
        th = Theta(**{f: np.concatenate([o[f] if f in o else np.full(p.idx.size, term(t, f))
                                         for p, t, o in zip(self.problems, ts, own)])
                      for f in SERVING_FIELDS})
        r = np.log(predict_serving(self.sub, th).value / self.sub.measured)
        r = np.where(np.isfinite(r), r, NAN_RESIDUAL)
        out, at = [], 0
        for p, zf, w, z0 in zip(self.problems, points, self.weights, self.prior_z):
            rr, at = r[at:at + p.idx.size], at + p.idx.size
            soft = pseudo_huber(rr, SOFT_SCALE)
            out.append(float(np.sum(w * soft) / np.sum(w) + p.ridge * np.sum((zf - z0) ** 2)))
        return out
