"""Fit the named efficiency terms on the declared training split, and write them as catalog data (a file per chip).

Serving terms: minimise Σ w·softL1(log(pred/measured)) over a group's training cases (each metric weighted
equally), plus a ridge pulling every term toward the group's prior, so groups with few cases borrow strength
instead of over-fitting. The groups: every chip's cases (pooled), a die's — the boards on one silicon,
chips/<name>.toml same_die_as — (prior: pooled), and for a die without cases its chip family's (prior: pooled);
each chip's terms are its die's, a die whose chip runs another die's tensor cores (chips/<name>.toml
tensor_cores_as: B300 and B200) fitted with that die's GEMM terms held (GEMM_FIELDS). (A family's fit as the dies' prior moved B200's weakly pinned terms to Blackwell's
mean and B200's held-out energy error from 10% to 18%: the prior stays pooled.)
Nelder–Mead in an unconstrained space (each fitted term kept inside its plausible range of catalog/efficiency/ranges.toml, logit of its place there; logit for other fractions, log
for other positive terms) over the free terms only: the anchored ones (validation/anchors.py: η_hbm, each chip's
measured streaming share, α_AR, η_nccl, and the request overhead o_req, a frontend's published figure for every
chip) are held at their cited values. Training terms: validation/train_fit.py (η per chip,
the non-GEMM and expert-width terms pooled, each inside its range). The loss and its space are
validation/fit_loss.py's (re-exported here); this module runs the searches and writes the files.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np

from tokenomy.validation import anchors
from tokenomy.validation import nelder_mead as nm
from tokenomy.validation.fit_loss import (  # noqa: F401  (re-exported: callers write cf.<name>)
    FRACTIONS, Problem, _to_z, case_anchors, log_residuals, losses, problem)
from tokenomy.validation.load import Case, split_rule
from tokenomy.validation.theta import SERVING_FIELDS, term  # noqa: F401
from tokenomy.validation.prepare import Serving
from tokenomy.validation.train_fit import fit_training
from tokenomy.validation.train_predict import Training, predict_training
from tokenomy.validation.terms_schema import EfficiencyFile, EfficiencyTerms

START = EfficiencyTerms(flops_fraction_max=0.7, gemm_half_tokens=64.0, hbm_fraction=0.75, step_overhead_s=1e-3,
                        kernel_overhead_s=3e-6, sequence_overhead_s=2e-6, overlap_loss=0.3, kv_hbm_fraction=0.75, narrow_flops_ratio=0.8,
                        allreduce_latency_s=5e-6, link_fraction=0.7, nccl_link_fraction=0.9, request_overhead_s=0.02,
                        train_flops_fraction=0.5, train_other_dense=5.0, train_other_moe=5.0,
                        train_expert_half_width=256.0, train_other_moe_fused=3.0, train_moe_sync_s=2e-3,
                        train_moe_layer_s=1e-3, train_fp4_flops_ratio=0.7,
                        train_wide_flops_ratio=1.1)
RIDGE_POOLED, RIDGE_CHIP = 1e-4, 2e-3  # per term, in transformed units
MIN_CASES_FOR_CHIP_FIT = 1


def nelder_mead(f, x0: np.ndarray, step: float = 0.5, max_evals: int = 2500, tol: float = 1e-7) -> np.ndarray:
    """Plain Nelder–Mead (validation/nelder_mead.py), ``f`` called once per point."""
    return nm.minimise(f, x0, step=step, max_evals=max_evals, tol=tol)


COLD_STEPS, WARM_STEPS = (0.5, 0.1), (0.1,)  # simplex sizes of the passes: from afar, restarted at the optimum
# (Nelder–Mead stalls on ridges); from a fit nearby, one small pass


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


GEMM_FIELDS = ("flops_fraction_max", "narrow_flops_ratio", "gemm_half_tokens")  # η_max, ρ, M_½: the GEMMs' shares


def tensor_cores_of(chip: str) -> str:
    """The chip whose tensor cores run ``chip``'s GEMMs on another die of its family (chips/<name>.toml
    ``tensor_cores_as``: B300 runs B200's FP8/BF16 rates and kernels), else "": whose die's GEMM terms ``chip``'s
    die is held at."""
    from tokenomy.catalog import loader

    return loader.chip_file(chip).tensor_cores_as if chip in loader.chip_names() else ""


def gemm_terms(t: EfficiencyTerms) -> dict[str, float]:
    """The GEMM terms (GEMM_FIELDS) of a fit: what a die lends the dies that name it ``tensor_cores_as``."""
    return {f: getattr(t, f) for f in GEMM_FIELDS}


def per_chip_value(values: dict[str, float], chip: str) -> float:
    """A per-chip training term (train_fit.fit_training's {chip: value, "pooled": value}) of ``chip``: its own, else
    its die's (die_of: the H800 and the 500 W HBM2e H100 run the H100's kernels), else the pooled one."""
    return values.get(chip, values.get(die_of(chip), values["pooled"]))


def family_of(chip: str) -> str:
    from tokenomy.catalog import loader

    return loader.chip_family(chip) if chip in loader.chip_names() else chip


def group_problem(s: Serving, mask: np.ndarray, chips, prior: EfficiencyTerms,
                  start: EfficiencyTerms | None = None, held: dict[str, float] | None = None) -> Problem:
    """The fit of the serving terms shared by ``chips`` (a die's boards, or a family's dies) on the cases of
    ``mask``: ``prior`` as the ridge's centre, each case's anchored terms at its own chip's value, the ``held``
    terms (a lent die's GEMM terms: gemm_terms) not moved."""
    idx = np.flatnonzero(mask & np.isin(s.chip, list(chips)))
    return problem(idx, prior, RIDGE_CHIP, dict(anchors.anchored("pooled"), **(held or {})), start,
                   case_anchors(s, idx))


def _levels(chips) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(family -> its chips, die -> its chips) over ``chips`` and the dies they name."""
    fams: dict[str, list[str]] = {}
    dies: dict[str, list[str]] = {}
    for c in sorted(chips):
        fams.setdefault(family_of(c), []).append(c)
        dies.setdefault(die_of(c), []).append(c)
    return fams, dies


def _fit_level(s: Serving, ms: list[np.ndarray], groups: dict[str, list[str]], prior, fallback, warm,
               held=lambda k, g: None) -> list[dict]:
    """Per fold, group -> (terms, serving case indices fitted on): each group's fit with ``prior(k)`` as its prior
    and ``held(k, group)`` not moved, the folds and groups searched in lockstep; a group without cases in a fold
    takes ``fallback(k, group)``."""
    probs = {(k, g): group_problem(s, ms[k], chips, prior(k), warm(chips), held(k, g))
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
    A die naming another's tensor cores (tensor_cores_of) is fitted after it, that die's GEMM terms held
    (_lent_gemms). A family without any cases takes the pooled fit. The folds' searches
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
    held = anchors.anchored("pooled")  # exactly (o_seq 0, not the search's e^-27.6)
    pooled = [p.model_copy(update=dict(held, **{f: v["pooled"] for f, v in per.items()}, **shared))
              for p, (per, shared) in zip(pooled, trained)]
    fits = [Fit({"pooled": p}, {"pooled": sorted(c.id for c in (*s.cases, *t.cases) if c.id in ids)})
            for p, ids in zip(pooled, folds)]
    fams, dies = _levels(set(s.chip) | set(t.chip))
    every = lambda k, g: (pooled[k], pooled_probs[k].idx)  # noqa: E731  (a fold's pooled fit and its cases)
    fam = _fit_level(s, ms, fams, lambda k: pooled[k], every, warm)
    multi = {d: cs for d, cs in dies.items() if len(fams[family_of(cs[0])]) > len(cs)}  # a family of one die: its fit
    die = _lent_gemms(s, ms, multi, pooled, lambda k, d: fam[k][family_of(d)], warm)  # a die is a chip of its family
    for k, (fit, (per, shared)) in enumerate(zip(fits, trained)):
        for d, chips in dies.items():
            own, idx = die[k][d] if d in multi else fam[k][family_of(chips[0])]
            for chip in chips:
                fit.terms[chip] = own.model_copy(update=dict(anchors.anchored(chip), **{
                    f: per_chip_value(v, chip) for f, v in per.items()}, **shared))
                fit.fitted_on[chip] = sorted([s.cases[i].id for i in idx]
                                             + [c.id for c, m in zip(t.cases, mts[k] & (t.chip == chip)) if m])
    return fits


def _lent_gemms(s: Serving, ms: list[np.ndarray], multi: dict[str, list[str]], pooled, fallback, warm) -> list[dict]:
    """Per fold, die -> (terms, case indices): the dies that run their own tensor cores first, then each die that
    names another's (tensor_cores_of) with that die's GEMM terms held (a die without cases in the fold: its
    fallback, the same terms held). B300's serving cases are decode-bound and leave its GEMM shares where the prior
    put them; B200's prompt-bound cases pin the rates both dies' tensor cores run at."""
    lent = {d: cs for d, cs in multi.items() if tensor_cores_of(d)}
    own = _fit_level(s, ms, {d: cs for d, cs in multi.items() if d not in lent}, lambda k: pooled[k], fallback, warm)

    def lender(k, d):
        src = die_of(tensor_cores_of(d))
        return own[k][src][0] if src in own[k] else fallback(k, src)[0]

    def fallback_held(k, d):
        terms, idx = fallback(k, d)
        return terms.model_copy(update=gemm_terms(lender(k, d))), idx

    borrowed = _fit_level(s, ms, lent, lambda k: pooled[k], fallback_held, warm,
                          lambda k, d: gemm_terms(lender(k, d)))
    return [dict(o, **b) for o, b in zip(own, borrowed)]


def efficiency_files(fit: Fit, in_sample: dict[str, dict[str, float]]) -> dict[str, EfficiencyFile]:
    today = dt.date.today().isoformat()
    return {chip: EfficiencyFile(chip=chip, fitted=today, split_rule=split_rule().rule, terms=terms,
                                 fitted_on=fit.fitted_on[chip], n_fitted=len(fit.fitted_on[chip]),
                                 in_sample=in_sample.get(chip, {}),
                                 note=("Fitted by `tokenomy validate --refit` (tokenomy/validation/calibrate_fit.py). "
                                       "pooled = every chip's training split, the prior of each die's fit and the "
                                       "fallback for chips without a file; the serving terms are fitted per die "
                                       f"(this chip's: {die_of(chip)}; chips/<name>.toml same_die_as), a die without "
                                       "cases taking its chip family's fit. " + _lent_note(chip)
                                       + anchors.provenance(chip) + "."))
            for chip, terms in fit.terms.items()}


def _lent_note(chip: str) -> str:
    src = tensor_cores_of(die_of(chip))
    return (f"{', '.join(GEMM_FIELDS)} held at {die_of(src)}'s fit: this chip's GEMMs run on {src}'s tensor cores "
            "(chips/<name>.toml tensor_cores_as). ") if src else ""


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
