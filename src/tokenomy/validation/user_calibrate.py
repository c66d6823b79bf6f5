"""Calibrate the efficiency terms a user's benchmark points identify, and say how well it holds out.

Split: every k-th point of the file is held out (points 1..N in file order; point i is held out when i % k == 0),
all metrics of a point together. Identifiability, from what the fit points' predictions depend on: for each free
serving term (every term but the anchored ones, anchors.ANCHORED_FIELDS, which the catalog fit holds too) the
change of log(prediction) per point when the term moves a step each way,
    J[:, f] = log p(θ with f up) − log p(θ with f down)    (fractions ±0.25 in logit; times ×1.5 + τ_f/2, ÷1.5)
A term is identified when some point moves by more than 0.2% and its normalised column is not (nearly) a
combination of stronger ones: taken in order of |J[:, f]|, a term joins while the smallest singular value of the
chosen normalised columns stays above 0.1, and no more terms than fit points. Decode-only points (TPOT at a few
loads) thus identify KV streaming and the per-step and per-sequence host times, not the GEMM share of prefill.
The identified terms are refitted by calibrate_fit.fit_serving (the catalog's loss and optimiser) with a ridge to
the chip's catalog terms; the others stay the catalog's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.validation import anchors
from tokenomy.validation.calibrate_fit import FRACTIONS, RIDGE_CHIP, START, fit_serving, log_residuals
from tokenomy.validation.theta import SERVING_FIELDS, term
from tokenomy.validation.prepare import Serving
from tokenomy.validation.terms_schema import EfficiencyTerms

MOVE_LOGIT = 0.25
MOVE_TIMES = 1.5
SEEN = 2e-3  # |Δ log prediction| below which a point does not see a term
INDEPENDENT = 0.1  # smallest singular value of the chosen unit columns


def _moved(t: EfficiencyTerms, f: str, up: bool) -> EfficiencyTerms:
    x = term(t, f)
    if f in FRACTIONS:
        z = np.log(x / (1 - x)) if 0 < x < 1 else (9.0 if x >= 1 else -9.0)
        x = float(1 / (1 + np.exp(-(z + (MOVE_LOGIT if up else -MOVE_LOGIT)))))
    else:
        typical = term(START, f)
        x = x * MOVE_TIMES + typical / 2 if up else x / MOVE_TIMES
    return t.model_copy(update={f: x})


def sensitivity(s: Serving, t: EfficiencyTerms, fields) -> np.ndarray:
    """J[point, term] (module docstring), from the fit's own log residuals log(predicted/measured) (the measured
    value cancels in the difference); a point that does not fit either way contributes zero."""
    cols = [log_residuals(s, _moved(t, f, True)) - log_residuals(s, _moved(t, f, False)) for f in fields]
    return np.nan_to_num(np.stack(cols, axis=1), nan=0.0, posinf=0.0, neginf=0.0)


def identified(s: Serving, t: EfficiencyTerms) -> list[str]:
    """The free terms these points identify (module docstring), strongest first."""
    free = [f for f in SERVING_FIELDS if f not in anchors.ANCHORED_FIELDS]
    J = sensitivity(s, t, free)
    norms = np.linalg.norm(J, axis=0)
    chosen: list[int] = []
    for j in np.argsort(-norms):
        if np.abs(J[:, j]).max() < SEEN or len(chosen) >= J.shape[0]:
            continue
        trial = chosen + [int(j)]
        unit = J[:, trial] / norms[trial]
        if np.linalg.svd(unit, compute_uv=False).min() >= INDEPENDENT:
            chosen = trial
    return [free[j] for j in chosen]


@dataclass(frozen=True)
class UserFit:
    terms: EfficiencyTerms
    refitted: list[str]


def fit(s: Serving, prior: EfficiencyTerms) -> UserFit:
    """Refit the identified terms on the cases of ``s``; the anchored and unidentified terms held at ``prior``.
    A refitted time term at zero starts from the catalog fit's starting value (the optimiser moves log x)."""
    names = identified(s, prior)
    start = prior.model_copy(update={f: term(START, f) for f in names
                                     if f not in FRACTIONS and term(prior, f) <= 0})
    fixed = {f: term(prior, f) for f in SERVING_FIELDS if f not in names}
    if not names:
        return UserFit(prior, [])
    return UserFit(fit_serving(s, start, RIDGE_CHIP, fixed), names)


def outside_ranges(t: EfficiencyTerms, names: list[str]) -> list[str]:
    """The refitted terms outside their plausible range (catalog/efficiency/ranges.toml, each with its public
    anchor): a fit that leaves one has let the term stand in for a mechanism the model lacks."""
    from tokenomy.catalog import loader

    ranges = loader.read_toml("efficiency", "ranges")
    out = []
    for f in names:
        r, v = ranges.get(f), term(t, f)
        if r and not r["low"] <= v <= r["high"]:
            out.append(f"{f} {v:.3g} is outside {r['low']:g}..{r['high']:g} (catalog/efficiency/ranges.toml)")
    return out


def held_out(point: int, every: int) -> bool:
    return every > 0 and point % every == 0
