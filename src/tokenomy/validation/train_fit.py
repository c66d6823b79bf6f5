"""Fit the training terms (core/train_time.py) on the declared split: η and ψ per chip, φ, F_½, ψ_fused pooled.

Least squares in log step time, each term searched inside its plausible range of catalog/efficiency/ranges.toml
(logit of its place there; η linearly, the others on a log scale), so a term driven to an edge shows a missing
mechanism in the residuals instead of absorbing it. Two stages: η per chip and φ on the dense cases, then, η
held, ψ per chip, F_½ and ψ_fused on the MoE cases. Only what the split can pin is free (η of a chip needs a dense
case of that chip, ψ of a chip an unfused MoE case there, ψ_fused a fused one); a chip without its own value takes
the mean of the others (in logit), which is also the pooled entry. Separable from the serving fit: seconds.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from tokenomy.validation import nelder_mead as nm
from tokenomy.validation.metrics import pseudo_huber
from tokenomy.validation.train_predict import TRAIN_FIELDS, Training, predict_training

START = dict(train_flops_fraction=0.5, train_other_dense=5.0, train_other_moe=5.0, train_expert_half_width=256.0,
             train_other_moe_fused=3.0, train_moe_sync_s=2e-3, train_moe_layer_s=1e-3, train_fp4_flops_ratio=0.7,
             train_wide_flops_ratio=1.1)
SHARED = TRAIN_FIELDS[1:]  # φ, ψ, F_½, ψ_fused, t_sync, t_layer, ρ4, ω16
PER_CHIP = ("train_flops_fraction", "train_other_moe")  # fitted per chip, their mean (logit) as the pooled value
RIDGE_TRAIN = 2e-3  # pulls each chip's η (logit) toward their mean
SOFT_SCALE = 0.15  # residuals beyond ~15% count linearly (as the serving fit's): a model missing a mechanism
#                    (Nemotron-3-Super's state-space scan) does not bend a chip's terms for every other model


@lru_cache(maxsize=1)
def ranges() -> dict[str, tuple[float, float]]:
    """field -> (low, high) of every training term (catalog/efficiency/ranges.toml, each with its anchor)."""
    from tokenomy.catalog import loader

    data = loader.read_toml("efficiency", "ranges")
    missing = [f for f in TRAIN_FIELDS if f not in data]
    if missing:
        raise ValueError(f"catalog/efficiency/ranges.toml: no range for {', '.join(missing)}")
    return {f: (float(data[f]["low"]), float(data[f]["high"])) for f in TRAIN_FIELDS}


def _scaled(f: str, x):
    return x if f == "train_flops_fraction" else np.log(x)


def to_z(f: str, x: float) -> float:
    """A term's search coordinate: logit of its place in its range."""
    lo, hi = (_scaled(f, v) for v in ranges()[f])
    u = min(max((_scaled(f, x) - lo) / (hi - lo), 1e-9), 1 - 1e-9)
    return float(np.log(u / (1 - u)))


def from_z(f: str, z):
    lo, hi = (_scaled(f, v) for v in ranges()[f])
    v = lo + (hi - lo) / (1 + np.exp(-np.asarray(z, dtype=float)))
    return v if f == "train_flops_fraction" else np.exp(v)


def _fit(tt: Training, per_chip: tuple[str, ...], shared: tuple[str, ...], fixed: dict) -> tuple[dict, dict]:
    """Least squares in log step time over ``tt``'s cases: ``per_chip`` terms one per chip (a chip's mean in logit
    for the others, and as "pooled"; a ridge pulls them together), ``shared`` ones pooled, ``fixed`` held (a value,
    or an array aligned with the cases)."""
    owners = {f: sorted(set(tt.chip)) for f in per_chip}
    idx = {f: np.array([o.index(c) for c in tt.chip], dtype=int) for f, o in owners.items()}
    cuts = np.cumsum([0] + [len(owners[f]) for f in per_chip])

    def unpack(z):
        per = {f: from_z(f, np.append(z[cuts[k]:cuts[k + 1]], np.mean(z[cuts[k]:cuts[k + 1]])))
               for k, f in enumerate(per_chip)}
        return per, {f: float(from_z(f, z[cuts[-1] + k])) for k, f in enumerate(shared)}

    def loss(z):
        per, sh = unpack(z)
        v = dict(fixed, **sh, **{f: per[f][idx[f]] for f in per_chip})
        r = np.log(predict_training(tt, {f: v[f] for f in TRAIN_FIELDS}) / tt.measured)
        ridge = sum(np.sum((z[cuts[k]:cuts[k + 1]] - np.mean(z[cuts[k]:cuts[k + 1]])) ** 2)
                    for k in range(len(per_chip)))
        return float(np.mean(pseudo_huber(r, SOFT_SCALE)) + RIDGE_TRAIN * ridge)

    z = np.array([to_z(f, START[f]) for f in per_chip for _ in owners[f]] + [to_z(f, START[f]) for f in shared])
    z = nm.minimise(loss, z, max_evals=8000)
    z = nm.minimise(loss, z, step=0.1, max_evals=8000)
    per, sh = unpack(z)
    return {f: {**{c: float(per[f][k]) for k, c in enumerate(owners[f])}, "pooled": float(per[f][-1])}
            for f in per_chip}, sh


def fit_training(t: Training, mask: np.ndarray) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """({per-chip term: {chip: value, "pooled": value}}, {shared term: value}) on ``mask``'s cases, in two stages:
    η per chip, φ and ρ4 (NVFP4 GEMMs) on the dense cases (GEMM efficiency is measured where no routing muddies
    it); then, with η and ρ4 held, ψ per chip, F_½ and ψ_fused on the MoE cases (the residual that routing adds). A term no case of the
    split can pin keeps its starting value (module docstring)."""
    tt = t.take(mask)
    per = {f: {"pooled": START[f]} for f in PER_CHIP}
    shared = {f: START[f] for f in SHARED if f not in PER_CHIP}
    dense, moe = ~tt.moe, tt.moe
    fused = np.asarray(tt.parts.fused) > 0
    fp4 = np.asarray(tt.parts.fp4) > 0
    if np.any(dense):
        p1, s1 = _fit(tt.take(dense), ("train_flops_fraction",),
                      ("train_other_dense", *(("train_fp4_flops_ratio",) if np.any(dense & fp4) else ())),
                      {f: START[f] for f in TRAIN_FIELDS})
        per.update(p1)
        shared.update(s1)
    if np.any(moe):
        tm = tt.take(moe)
        eta = per["train_flops_fraction"]
        fixed = dict(shared, train_flops_fraction=np.array([eta.get(c, eta["pooled"]) for c in tm.chip]))
        waits = np.asarray(tt.parts.sync_passes) > 0
        wide = np.asarray(tt.parts.wide) > 0
        free = tuple(f for f, pin in (("train_expert_half_width", np.any(moe & ~fused)),
                                       ("train_other_moe_fused", np.any(moe & fused)),
                                       ("train_moe_sync_s", np.any(moe & waits)),
                                       ("train_moe_layer_s", np.any(moe & ~fused)),
                                       ("train_wide_flops_ratio", np.any(moe & wide))) if pin)
        if np.any(moe & ~fused):
            p2, s2 = _fit(tm, ("train_other_moe",), free, fixed)
            per.update(p2)
        else:
            _, s2 = _fit(tm, (), free, dict(fixed, train_other_moe=START["train_other_moe"]))
        shared.update(s2)
    return per, shared
