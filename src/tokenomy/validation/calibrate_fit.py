"""Fit the named efficiency terms per chip on the declared training split, and write them as catalog data.

Serving terms: minimise Σ w·softL1(log(pred/measured)) over the chip's training cases (each metric weighted
equally), plus a ridge pulling every term toward the pooled fit (all chips' training cases), so chips with few
cases borrow strength instead of over-fitting. Nelder–Mead in an unconstrained space (logit for fractions, log
for positive terms) over the free terms only: the anchored ones (validation/anchors.py: η_hbm, each chip's
measured streaming share) are held at their cited values. Training terms: the median log-ratio of roofline to measured step time per chip (dense),
and one pooled factor for MoE.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np

from tokenomy.validation import anchors
from tokenomy.validation.load import Case, split_rule
from tokenomy.validation.predict import SERVING_FIELDS, Theta, predict_serving, term
from tokenomy.validation.prepare import Serving
from tokenomy.validation.train_predict import Training, predict_training
from tokenomy.validation.schema import EfficiencyFile, EfficiencyTerms

START = EfficiencyTerms(flops_fraction_max=0.7, gemm_half_tokens=64.0, hbm_fraction=0.75, step_overhead_s=1e-3,
                        kernel_overhead_s=3e-6, sequence_overhead_s=2e-6, overlap_loss=0.3, kv_hbm_fraction=0.75, narrow_flops_ratio=0.8,
                        allreduce_latency_s=5e-6, link_fraction=0.7, nccl_link_fraction=0.9, request_overhead_s=0.02,
                        train_flops_fraction=0.5, train_other_dense=0.2, train_other_moe=0.2,
                        train_expert_half_width=512.0)
FRACTIONS = {"narrow_flops_ratio", "flops_fraction_max", "hbm_fraction", "kv_hbm_fraction", "link_fraction", "overlap_loss",
             "nccl_link_fraction"}
RIDGE_POOLED, RIDGE_CHIP, RIDGE_TRAIN = 1e-4, 2e-3, 2e-3  # per term, in transformed units
SOFT_SCALE = 0.15  # residuals beyond ~15% count linearly, not quadratically
NAN_RESIDUAL = np.log(3.0)  # a configuration the model says cannot run counts as a 3x error
MIN_CASES_FOR_CHIP_FIT = 1


def _to_z(t: EfficiencyTerms) -> np.ndarray:
    v = [term(t, f) for f in SERVING_FIELDS]
    v = [min(x, 1.0 - 1e-9) if f in FRACTIONS else x for f, x in zip(SERVING_FIELDS, v)]  # an anchored share of 1
    return np.array([np.log(x / (1 - x)) if f in FRACTIONS else np.log(max(x, 1e-12)) for f, x in
                     zip(SERVING_FIELDS, v)])


def _from_z(z: np.ndarray, base: EfficiencyTerms) -> EfficiencyTerms:
    vals = {f: float(1 / (1 + np.exp(-x)) if f in FRACTIONS else np.exp(x)) for f, x in zip(SERVING_FIELDS, z)}
    vals = {f: min(max(v, 1e-9), 1.0) if f in FRACTIONS else v for f, v in vals.items()}
    return base.model_copy(update=vals)


def _theta(t: EfficiencyTerms) -> Theta:
    return Theta(**{f: term(t, f) for f in SERVING_FIELDS})


def log_residuals(s: Serving, t: EfficiencyTerms) -> np.ndarray:
    r = np.log(predict_serving(s, _theta(t)).value / s.measured)
    return np.where(np.isfinite(r), r, NAN_RESIDUAL)


def _weights(s: Serving) -> np.ndarray:
    counts = {m: np.sum(s.metric == m) for m in np.unique(s.metric)}
    return np.array([1.0 / counts[m] for m in s.metric])


def nelder_mead(f, x0: np.ndarray, step: float = 0.5, max_evals: int = 2500, tol: float = 1e-7) -> np.ndarray:
    """Plain Nelder–Mead (adaptive coefficients, Gao & Han 2012)."""
    n = x0.size
    a, g, c, sh = 1.0, 1 + 2 / n, 0.75 - 1 / (2 * n), 1 - 1 / n
    pts = np.vstack([x0] + [x0 + step * np.eye(n)[i] for i in range(n)])
    vals = np.array([f(p) for p in pts])
    evals = n + 1
    while evals < max_evals:
        order = np.argsort(vals)
        pts, vals = pts[order], vals[order]
        if vals[-1] - vals[0] < tol:
            break
        cen = pts[:-1].mean(axis=0)
        xr = cen + a * (cen - pts[-1])
        fr = f(xr)
        evals += 1
        if fr < vals[0]:
            xe = cen + g * (xr - cen)
            fe = f(xe)
            evals += 1
            pts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = xr, fr
        else:
            xc = cen + c * ((xr if fr < vals[-1] else pts[-1]) - cen)
            fc = f(xc)
            evals += 1
            if fc < min(fr, vals[-1]):
                pts[-1], vals[-1] = xc, fc
            else:
                pts[1:] = pts[0] + sh * (pts[1:] - pts[0])
                vals[1:] = [f(p) for p in pts[1:]]
                evals += n
    return pts[np.argmin(vals)]


def fit_serving(s: Serving, prior: EfficiencyTerms, ridge: float,
                fixed: dict[str, float] | None = None) -> EfficiencyTerms:
    """The serving terms minimising the module docstring's loss, the ``fixed`` terms held at their values."""
    fixed = fixed or {}
    prior = prior.model_copy(update=fixed)
    w = _weights(s)
    z0 = _to_z(prior)
    free = np.array([f not in fixed for f in SERVING_FIELDS])

    def full(zf):
        z = z0.copy()
        z[free] = zf
        return z

    def loss(zf):
        r = log_residuals(s, _from_z(full(zf), prior))
        soft = 2 * SOFT_SCALE ** 2 * (np.sqrt(1 + (r / SOFT_SCALE) ** 2) - 1)
        return float(np.sum(w * soft) / np.sum(w) + ridge * np.sum((zf - z0[free]) ** 2))

    zf = nelder_mead(loss, z0[free])
    zf = nelder_mead(loss, zf, step=0.1)  # restart from the optimum: Nelder–Mead stalls on ridges
    return _from_z(full(zf), prior)


def fit_training(t: Training, mask: np.ndarray) -> tuple[dict[str, float], dict[str, float]]:
    """η_train per chip and the pooled non-GEMM shares φ_dense, φ_moe and expert half-width F_½ (core/train_time.py),
    on the fit split; least squares in log step time. A chip gets its own η only when it has a dense case to pin it
    (MoE cases alone cannot separate η from φ_moe and F_½); the others, and the pooled entry, use the mean of the
    pinned chips' η (in logit). Separable from the serving fit: a training-only refit runs in about a second."""
    tt = t.take(mask)
    shared = dict(train_other_dense=START.train_other_dense, train_other_moe=START.train_other_moe,
                  train_expert_half_width=START.train_expert_half_width)
    if not tt.cases:  # nothing to fit on (a serving-only subset): the starting values
        return {"pooled": START.train_flops_fraction}, shared
    own = sorted(set(tt.chip[~tt.moe]))
    idx = np.array([own.index(c) if c in own else len(own) for c in tt.chip], dtype=int)
    e0 = np.log(START.train_flops_fraction / (1 - START.train_flops_fraction))
    # Only what the split can pin is free: MoE terms need MoE cases, φ_dense a dense one (else their start values:
    # a direction the loss does not see would let the simplex wander).
    moe, dense = bool(np.any(tt.moe)), bool(own)
    fixed = np.log([START.train_other_dense, START.train_other_moe, START.train_expert_half_width])

    def unpack(z):
        zc = np.append(z[:len(own)], np.mean(z[:len(own)]) if own else e0)
        rest = z[len(own):]
        phi_d = np.exp(rest[0]) if dense else np.exp(fixed[0])
        phi_m, half = (np.exp(rest[-2]), np.exp(rest[-1])) if moe else np.exp(fixed[1:])
        return 1 / (1 + np.exp(-zc)), phi_d, phi_m, half

    def loss(z):
        eta, phi_d, phi_m, half = unpack(z)
        r = np.log(predict_training(tt, eta[idx], phi_d, phi_m, half) / tt.measured)
        return float(np.mean(r ** 2) + RIDGE_TRAIN * np.sum((z[:len(own)] - np.mean(z[:len(own)])) ** 2))

    z0 = np.concatenate([[e0] * len(own), fixed[:1] if dense else [], fixed[1:] if moe else []])
    z = nelder_mead(loss, z0, max_evals=4000)
    z = nelder_mead(loss, z, step=0.1, max_evals=4000)
    eta, phi_d, phi_m, half = unpack(z)
    out = {c: float(eta[k]) for k, c in enumerate(own)}
    out["pooled"] = float(eta[len(own)])
    return out, dict(train_other_dense=float(phi_d), train_other_moe=float(phi_m),
                     train_expert_half_width=float(half))


@dataclass(frozen=True)
class Fit:
    terms: dict[str, EfficiencyTerms]  # by chip, plus "pooled"
    fitted_on: dict[str, list[str]]


def fit_all(s: Serving, t: Training, train_ids: set[str]) -> Fit:
    ms = np.array([c.id in train_ids for c in s.cases], dtype=bool)
    mt = np.array([c.id in train_ids for c in t.cases], dtype=bool)
    eta, train_terms = fit_training(t, mt)
    pooled = fit_serving(s.take(ms), START, RIDGE_POOLED, anchors.anchored("pooled"))
    pooled = pooled.model_copy(update=dict(train_flops_fraction=eta["pooled"], **train_terms))
    terms, used = {"pooled": pooled}, {"pooled": sorted(c.id for c in (*s.cases, *t.cases) if c.id in train_ids)}
    for chip in sorted(set(s.chip) | set(t.chip)):
        sel = ms & (s.chip == chip)
        chip_terms = (fit_serving(s.take(sel), pooled, RIDGE_CHIP, anchors.anchored(chip))
                      if sel.sum() >= MIN_CASES_FOR_CHIP_FIT else pooled.model_copy(update=anchors.anchored(chip)))
        terms[chip] = chip_terms.model_copy(update=dict(train_flops_fraction=eta.get(chip, eta["pooled"]),
                                                        **train_terms))
        used[chip] = sorted([c.id for c, m in zip(s.cases, sel) if m]
                            + [c.id for c, m in zip(t.cases, mt & (t.chip == chip)) if m])
    return Fit(terms, used)


def efficiency_files(fit: Fit, in_sample: dict[str, dict[str, float]]) -> dict[str, EfficiencyFile]:
    today = dt.date.today().isoformat()
    return {chip: EfficiencyFile(chip=chip, fitted=today, split_rule=split_rule().rule, terms=terms,
                                 fitted_on=fit.fitted_on[chip], n_fitted=len(fit.fitted_on[chip]),
                                 in_sample=in_sample.get(chip, {}),
                                 note=("Fitted by `tokenomy validate --refit` (tokenomy/validation/calibrate_fit.py). "
                                       "pooled = every chip's training split, used as the prior and as the fallback "
                                       "for chips without a file. " + anchors.provenance(chip) + "."))
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
