"""Fit the named efficiency terms on the declared training split, and write them as catalog data (a file per chip).

Serving terms: minimise Σ w·softL1(log(pred/measured)) over a group's training cases (each metric weighted
equally), plus a ridge pulling every term toward the group's prior, so groups with few cases borrow strength
instead of over-fitting. The groups: every chip's cases (pooled), a die's — the boards on one silicon,
chips/<name>.toml same_die_as — (prior: pooled), and for a die without cases its chip family's (prior: pooled);
each chip's terms are its die's. (A family's fit as the dies' prior moved B200's weakly pinned terms to Blackwell's
mean and B200's held-out energy error from 10% to 18%: the prior stays pooled.)
Nelder–Mead in an unconstrained space (each fitted term kept inside its plausible range of catalog/efficiency/ranges.toml, logit of its place there; logit for other fractions, log
for other positive terms) over the free terms only: the anchored ones (validation/anchors.py: η_hbm, each chip's
measured streaming share, α_AR, η_nccl, and the request overhead o_req, a frontend's published figure for every
chip) are held at their cited values. Training terms: validation/train_fit.py (η per chip,
the non-GEMM and expert-width terms pooled, each inside its range).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from tokenomy.validation import anchors
from tokenomy.validation import nelder_mead as nm
from tokenomy.validation.load import Case, split_rule
from tokenomy.validation.metrics import pseudo_huber
from tokenomy.validation.predict import predict_serving
from tokenomy.validation.theta import SERVING_FIELDS, Theta, term
from tokenomy.validation.prepare import Serving
from tokenomy.validation.train_fit import fit_training
from tokenomy.validation.train_predict import Training, predict_training
from tokenomy.validation.schema import EfficiencyFile, EfficiencyTerms

START = EfficiencyTerms(flops_fraction_max=0.7, gemm_half_tokens=64.0, hbm_fraction=0.75, step_overhead_s=1e-3,
                        kernel_overhead_s=3e-6, sequence_overhead_s=2e-6, overlap_loss=0.3, kv_hbm_fraction=0.75, narrow_flops_ratio=0.8,
                        allreduce_latency_s=5e-6, link_fraction=0.7, nccl_link_fraction=0.9, request_overhead_s=0.02,
                        train_flops_fraction=0.5, train_other_dense=5.0, train_other_moe=5.0,
                        train_expert_half_width=256.0, train_other_moe_fused=3.0, train_moe_sync_s=2e-3,
                        train_moe_layer_s=1e-3, train_fp4_flops_ratio=0.7,
                        train_wide_flops_ratio=1.1)
FRACTIONS = {"narrow_flops_ratio", "flops_fraction_max", "hbm_fraction", "kv_hbm_fraction", "link_fraction", "overlap_loss",
             "nccl_link_fraction"}
RIDGE_POOLED, RIDGE_CHIP = 1e-4, 2e-3  # per term, in transformed units
SOFT_SCALE = 0.15  # residuals beyond ~15% count linearly, not quadratically
NAN_RESIDUAL = np.log(3.0)  # a configuration the model says cannot run counts as a 3x error
MIN_CASES_FOR_CHIP_FIT = 1


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


def nelder_mead(f, x0: np.ndarray, step: float = 0.5, max_evals: int = 2500, tol: float = 1e-7) -> np.ndarray:
    """Plain Nelder–Mead (validation/nelder_mead.py), ``f`` called once per point."""
    return nm.minimise(f, x0, step=step, max_evals=max_evals, tol=tol)


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
        return _from_z(self.full(zf), self.prior)

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
COLD_STEPS, WARM_STEPS = (0.5, 0.1), (0.1,)  # simplex sizes of the passes: from afar, restarted at the optimum
# (Nelder–Mead stalls on ridges); from a fit nearby, one small pass


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


def fit_problems(s: Serving, problems: list[Problem], steps: tuple[float, ...] | None = None) -> list[EfficiencyTerms]:
    """The terms minimising each problem's loss, the problems searched in lockstep (their points valued together,
    ``losses``); each pass restarts at the last one's optimum with the next simplex size (default: COLD_STEPS, or
    WARM_STEPS for problems that all start warm)."""
    if steps is None:
        steps = WARM_STEPS if all(p.start is not None for p in problems) else COLD_STEPS
    zs = [p.x0() for p in problems]
    stacks: dict = {}
    for step in steps:
        zs = nm.minimise_many(lambda reqs: losses(s, [(problems[k], pts) for k, pts in reqs], stacks), zs,
                              step=step)
    return [p.terms(z) for p, z in zip(problems, zs)]


def fit_serving(s: Serving, prior: EfficiencyTerms, ridge: float,
                fixed: dict[str, float] | None = None) -> EfficiencyTerms:
    """The serving terms of all of ``s``'s cases minimising the module docstring's loss, the ``fixed`` terms held."""
    return fit_problems(s, [problem(np.arange(len(s.cases)), prior, ridge, fixed)])[0]


@dataclass(frozen=True)
class Fit:
    terms: dict[str, EfficiencyTerms]  # by chip, plus "pooled"
    fitted_on: dict[str, list[str]]


def fit_all(s: Serving, t: Training, train_ids: set[str]) -> Fit:
    return fit_folds(s, t, [train_ids])[0]


def chip_problem(s: Serving, mask: np.ndarray, chip: str, pooled: EfficiencyTerms,
                 start: EfficiencyTerms | None = None) -> Problem:
    """The fit of ``chip``'s serving terms on the cases of ``mask``: the pooled fit as the prior, the chip's
    anchored terms held."""
    return problem(np.flatnonzero(mask & (s.chip == chip)), pooled, RIDGE_CHIP, anchors.anchored(chip), start)


def die_of(chip: str) -> str:
    """The chip whose silicon ``chip`` runs (chips/<name>.toml ``same_die_as``: GB200's GPU is B200's die, H200 and
    H800 are H100's GH100), else the chip itself: what the serving terms are fitted per."""
    from tokenomy.catalog import loader

    return (loader.chip_file(chip).same_die_as or chip) if chip in loader.chip_names() else chip


def per_chip_value(values: dict[str, float], chip: str) -> float:
    """A per-chip training term (train_fit.fit_training's {chip: value, "pooled": value}) of ``chip``: its own, else
    its die's (die_of: the H800 and the 500 W HBM2e H100 run the H100's kernels), else the pooled one."""
    return values.get(chip, values.get(die_of(chip), values["pooled"]))


def family_of(chip: str) -> str:
    from tokenomy.catalog import loader

    return loader.chip_family(chip) if chip in loader.chip_names() else chip


def group_problem(s: Serving, mask: np.ndarray, chips, prior: EfficiencyTerms,
                  start: EfficiencyTerms | None = None) -> Problem:
    """The fit of the serving terms shared by ``chips`` (a die's boards, or a family's dies) on the cases of
    ``mask``: ``prior`` as the ridge's centre, each case's anchored terms at its own chip's value."""
    idx = np.flatnonzero(mask & np.isin(s.chip, list(chips)))
    return problem(idx, prior, RIDGE_CHIP, anchors.anchored("pooled"), start, case_anchors(s, idx))


def _levels(chips) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(family -> its chips, die -> its chips) over ``chips`` and the dies they name."""
    fams: dict[str, list[str]] = {}
    dies: dict[str, list[str]] = {}
    for c in sorted(chips):
        fams.setdefault(family_of(c), []).append(c)
        dies.setdefault(die_of(c), []).append(c)
    return fams, dies


def _fit_level(s: Serving, ms: list[np.ndarray], groups: dict[str, list[str]], prior, fallback, warm) -> list[dict]:
    """Per fold, group -> (terms, serving case indices fitted on): each group's fit with ``prior(k)`` as its prior,
    the folds and groups searched in lockstep; a group without cases in a fold takes ``fallback(k, group)``."""
    probs = {(k, g): group_problem(s, ms[k], chips, prior(k), warm(chips))
             for k in range(len(ms)) for g, chips in groups.items()}
    probs = {key: p for key, p in probs.items() if p.idx.size >= MIN_CASES_FOR_CHIP_FIT}
    fitted = dict(zip(probs, fit_problems(s, list(probs.values())))) if probs else {}
    return [{g: (fitted[(k, g)], probs[(k, g)].idx) if (k, g) in fitted else fallback(k, g) for g in groups}
            for k in range(len(ms))]


def fit_folds(s: Serving, t: Training, folds: list[set[str]], start: Fit | None = None) -> list[Fit]:
    """The pooled fit (every chip's cases), then each die's (the boards on one silicon: die_of) with the pooled one
    as its prior, a die without cases in a fold taking its chip family's fit (the family's cases, the same prior:
    leaving out B300's one serving source had fallen to the pooled fit) — the terms of silicon and of the
    kernels it runs are shared by the boards built on it (H100 and H200: leaving vLLM's gpt-oss on H100 out read
    +29% TPOT with the H100's cases alone, +7% beside the H200's) — on the training ids of each fold.
    A family without any cases takes the pooled fit. The folds' searches
    run in lockstep (one engine pass values a point of every fold), a level at a time. ``start``: a fit nearby
    (the full fit, for leave-one-source-out) that each search starts from, the same loss minimised
    (calibrate_fit.WARM_STEPS)."""
    def warm(chips):
        return next((start.terms[c] for c in chips if c in start.terms), None) if start is not None else None
    ms = [np.array([c.id in ids for c in s.cases], dtype=bool) for ids in folds]
    mts = [np.array([c.id in ids for c in t.cases], dtype=bool) for ids in folds]
    trained = [fit_training(t, mt) for mt in mts]
    pooled_probs = [problem(np.flatnonzero(m), START, RIDGE_POOLED, anchors.anchored("pooled"), warm(["pooled"]),
                            case_anchors(s, np.flatnonzero(m))) for m in ms]
    pooled = fit_problems(s, pooled_probs)
    pooled = [p.model_copy(update=dict({f: v["pooled"] for f, v in per.items()}, **shared))
              for p, (per, shared) in zip(pooled, trained)]
    fits = [Fit({"pooled": p}, {"pooled": sorted(c.id for c in (*s.cases, *t.cases) if c.id in ids)})
            for p, ids in zip(pooled, folds)]
    fams, dies = _levels(set(s.chip) | set(t.chip))
    every = lambda k, g: (pooled[k], pooled_probs[k].idx)  # noqa: E731  (a fold's pooled fit and its cases)
    fam = _fit_level(s, ms, fams, lambda k: pooled[k], every, warm)
    multi = {d: cs for d, cs in dies.items() if len(fams[family_of(cs[0])]) > len(cs)}  # a family of one die: its fit
    die = _fit_level(s, ms, multi, lambda k: pooled[k], lambda k, d: fam[k][family_of(dies[d][0])], warm)
    for k, (fit, (per, shared)) in enumerate(zip(fits, trained)):
        for d, chips in dies.items():
            own, idx = die[k][d] if d in multi else fam[k][family_of(chips[0])]
            for chip in chips:
                fit.terms[chip] = own.model_copy(update=dict(anchors.anchored(chip), **{
                    f: per_chip_value(v, chip) for f, v in per.items()}, **shared))
                fit.fitted_on[chip] = sorted([s.cases[i].id for i in idx]
                                             + [c.id for c, m in zip(t.cases, mts[k] & (t.chip == chip)) if m])
    return fits


def efficiency_files(fit: Fit, in_sample: dict[str, dict[str, float]]) -> dict[str, EfficiencyFile]:
    today = dt.date.today().isoformat()
    return {chip: EfficiencyFile(chip=chip, fitted=today, split_rule=split_rule().rule, terms=terms,
                                 fitted_on=fit.fitted_on[chip], n_fitted=len(fit.fitted_on[chip]),
                                 in_sample=in_sample.get(chip, {}),
                                 note=("Fitted by `tokenomy validate --refit` (tokenomy/validation/calibrate_fit.py). "
                                       "pooled = every chip's training split, the prior of each die's fit and the "
                                       "fallback for chips without a file; the serving terms are fitted per die "
                                       f"(this chip's: {die_of(chip)}; chips/<name>.toml same_die_as), a die without "
                                       "cases taking its chip family's fit. " + anchors.provenance(chip) + "."))
            for chip, terms in fit.terms.items()}


def to_toml(f: EfficiencyFile) -> str:
    lines = ["# Fitted efficiency terms (data, not code). Regenerate with: tokenomy validate --refit",
             f'chip = "{f.chip}"', f'source = "{f.source}"', f'fitted = "{f.fitted}"', f'split_rule = "{f.split_rule}"',
             f"n_fitted = {f.n_fitted}", f'note = "{f.note}"', "fitted_on = ["]
    lines += [f'  "{i}",' for i in f.fitted_on] + ["]", "", "[terms]"]
    lines += [f"{k} = {v!r}" for k, v in f.terms.model_dump().items()]
    lines += ["", "[in_sample]  # median |error| on the cases fitted on, by metric"]
    lines += [f"{k} = {v!r}" for k, v in f.in_sample.items()]
    return "\n".join(lines) + "\n"


def train_ids(cases: list[Case]) -> set[str]:
    return {c.id for c in cases if c.split == "train"}


__all__ = ["fit_all", "efficiency_files", "to_toml", "train_ids", "predict_training"]
