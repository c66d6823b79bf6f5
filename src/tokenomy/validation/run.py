"""Predict every validation case (roofline bound and calibrated estimate), refit the terms, cross-validate by source."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.catalog import loader
from tokenomy.validation import calibrate_fit as cf
from tokenomy.validation import load
from tokenomy.validation.disagg_cases import is_disagg, predict_disagg
from tokenomy.validation.kept import kept
from tokenomy.validation.metrics import optimism, signed_error
from tokenomy.validation.predict import bound_names, predict_serving
from tokenomy.validation.theta import gather, roofline_theta
from tokenomy.validation.prepare import METRIC_CODE, Serving, prepare_serving
from tokenomy.validation.train_predict import TRAIN_FIELDS, Training, predict_training, prepare_training
from tokenomy.validation.terms_schema import EfficiencyFile, EfficiencyTerms

METRIC_NAMES = {v: k for k, v in METRIC_CODE.items()}


@dataclass(frozen=True)
class Prepared:
    cases: list[load.Case]
    serving: Serving
    training: Training


def prepare(sources: tuple[str, ...] | None = None) -> Prepared:
    """Every case of ``sources`` (None: the whole catalog, kept between processes: kept.py) lowered once."""
    if sources is None:
        return kept("validation-prepared", lambda: _prepare(None))
    return _prepare(sources)


def _prepare(sources: tuple[str, ...] | None) -> Prepared:
    cs = load.cases(sources)
    return Prepared(cs, prepare_serving(cs), prepare_training(cs))


def prepare_training_cases(sources: tuple[str, ...] | None = None) -> Prepared:
    """The training cases of ``sources`` alone, lowered; the serving side empty (`validate --training`)."""
    cs = [c for c in load.cases(sources) if c.kind == "training"]
    return Prepared(cs, prepare_serving([]), prepare_training(cs))


def stored_terms(chips) -> dict[str, EfficiencyTerms]:
    return {c: load.efficiency_for(c).terms for c in set(chips)}


def rows(p: Prepared, terms: dict[str, EfficiencyTerms] | None = None) -> list[dict]:
    """One row per case: measured, roofline bound, calibrated estimate, errors, binding term, split."""
    s, t = p.serving, p.training
    terms = terms or stored_terms(list(s.chip) + list(t.chip))
    roof = predict_serving(s, roofline_theta(s))
    cal = predict_serving(s, gather(s.chip, terms))
    out = []
    for i, case in enumerate(s.cases):
        c = case.case
        tput = s.metric[i] == METRIC_CODE["throughput_per_chip"]
        where = {"chip": c.hardware, "model": c.model, "metric": METRIC_NAMES[int(s.metric[i])], "scenario": c.scenario}
        state = {"bound": bound_names([cal.bound[i]])[0], "capacity_limited": bool(cal.capacity_limited[i]),
                 "batch": float(cal.batch[i])}
        reg = regime_fields(c)
        if not np.isfinite(reg["users"]):  # an open loop or a max-throughput run: the requests in the engine
            reg["users"] = float(cal.batch[i])
        out.append(_row(case, where, (s.measured[i], roof.value[i], cal.value[i]), bool(tput), state)
                   | {"engine": c.engine if case.source.id != "pope2022-esti" else "paper (TPU v4)",
                      "shape": workload_shape(c.isl, c.osl)} | reg)
    out += _disagg_rows([c for c in p.cases if is_disagg(c)], terms)
    if t.cases:
        t_roof = t.roofline_s
        t_cal = predict_training(t, {f: [getattr(terms[c], f) for c in t.chip] for f in TRAIN_FIELDS})
        for i, case in enumerate(t.cases):
            c = case.case
            where = {"chip": c.hardware, "model": c.model, "metric": "train_step_s", "scenario": "pretraining"}
            state = {"bound": "compute", "capacity_limited": False, "batch": float(c.global_batch)}
            out.append(_row(case, where, (t.measured[i], t_roof[i], t_cal[i]), False, state)
                       | {"engine": "megatron", "shape": "pretraining"} | training_regime(c))
    return out


def _disagg_rows(cases: list[load.Case], terms: dict[str, EfficiencyTerms]) -> list[dict]:
    """The rows of the disaggregated cases (validation/disagg_cases.py: serving.disagg on their two pools)."""
    if not cases:
        return []
    # a chip the fit has no set for: the fit's pooled set, else the stored terms (the chip's, its die's or pooled)
    terms = {h: terms[h] if h in terms else terms["pooled"] if "pooled" in terms else load.efficiency_for(h).terms
             for h in {c.case.hardware for c in cases}}
    roof, cal = predict_disagg(cases, None), predict_disagg(cases, terms)
    out = []
    for i, case in enumerate(cases):
        c = case.case
        where = {"chip": c.hardware, "model": c.model, "metric": c.metric, "scenario": c.scenario}
        state = {"bound": cal.bound[i], "capacity_limited": bool(cal.capacity_limited[i]), "batch": float(cal.batch[i])}
        reg = regime_fields(c)
        out.append(_row(case, where, (c.value, roof.value[i], cal.value[i]), c.metric == "throughput_per_chip", state)
                   | {"engine": c.engine, "shape": workload_shape(c.isl, c.osl)} | reg)
    return out


def training_regime(c) -> dict:
    """A training case's chip family and dense/MoE, for the leave-one-source-out tables by them (no serving mode:
    the agg/disagg table counts serving cases only)."""
    moe = any(layer.mlp.kind == "moe" for layer in loader.model(c.model).layers)
    return {"chip_family": loader.chip_family(loader.hardware(c.hardware).chip.name), "moe": moe}


def regime_fields(c) -> dict:
    """What validation/bands.py files a serving case's error under: chip family, dense/MoE, agg/disagg, its mean
    decode context ISL + OSL/2 (prepare's), beside run.rows' batch and engine; and the load the report's load bands
    sort it by (``users``: the clients of a closed loop, a static run's batch; NaN where the case states a rate or
    runs at max throughput, which ``rows`` fills with the predicted requests in the engine)."""
    moe = any(layer.mlp.kind == "moe" for layer in loader.model(c.model).layers)
    users = c.concurrency if c.concurrency is not None else c.batch if c.batch is not None else np.nan
    return {"chip_family": loader.chip_family(loader.hardware(c.hardware).chip.name), "moe": moe,
            "mode": getattr(c, "mode", "agg"), "isl": c.isl, "osl": c.osl, "length": c.isl + c.osl / 2.0,
            "users": float(users)}


def workload_shape(isl: float, osl: float) -> str:
    """The workload class of a serving case: prefill-heavy (ISL >= 4·OSL), decode-heavy (OSL >= 4·ISL), else
    balanced — the three regimes the scheduler mixes differently."""
    if isl >= 4 * osl:
        return "prefill-heavy (ISL >= 4 OSL)"
    if osl >= 4 * isl:
        return "decode-heavy (OSL >= 4 ISL)"
    return "balanced"


def _row(case, where: dict, values: tuple, tput: bool, state: dict) -> dict:
    """One case's row: ``where`` (chip, model, metric, scenario), ``values`` (measured, roofline, calibrated) with
    the two errors (a throughput's sign flipped: optimism), then ``state`` (bound, capacity_limited, batch)."""
    measured, roof, cal = values
    e_roof = float(optimism(signed_error(roof, measured), tput))
    e_cal = float(optimism(signed_error(cal, measured), tput))
    return {"id": case.id, "source": case.source.id, "split": case.split, **where, "measured": float(measured),
            "roofline": float(roof), "calibrated": float(cal), "roofline_error": e_roof, "calibrated_error": e_cal,
            **state}


def refit(p: Prepared, train_ids: set[str] | None = None) -> cf.Fit:
    return cf.fit_all(p.serving, p.training, train_ids if train_ids is not None else cf.train_ids(p.cases))


def in_sample(p: Prepared, fit: cf.Fit) -> dict[str, dict[str, float]]:
    """Median |error| by metric on the cases each chip was fitted on (and pooled over all)."""
    rs = [r for r in rows(p, fit.terms) if r["split"] == "train"]
    out: dict[str, dict[str, float]] = {}
    for chip in fit.terms:
        sel = rs if chip == "pooled" else [r for r in rs if r["chip"] == chip]
        by: dict[str, list[float]] = {}
        for r in sel:
            by.setdefault(r["metric"], []).append(abs(r["calibrated_error"]))
        out[chip] = {m: float(np.nanmedian(v)) for m, v in sorted(by.items())}
    return out


def stored_fit(p: Prepared) -> cf.Fit:
    """The stored terms (catalog/efficiency) of every chip of ``p`` and the pooled set, as a Fit."""
    chips = sorted({*p.serving.chip, *p.training.chip, "pooled"})
    return cf.Fit({c: load.efficiency_for(c).terms for c in chips}, {})


def only_source(p: Prepared, src: str) -> Prepared:
    ms = np.array([c.source.id == src for c in p.serving.cases], dtype=bool)
    mt = np.array([c.source.id == src for c in p.training.cases], dtype=bool)
    return Prepared([c for c in p.cases if c.source.id == src], p.serving.take(ms), p.training.take(mt))


def leave_one_source_out(p: Prepared, start: cf.Fit | None = None) -> list[dict]:
    """For each source: refit on the training split of every other source, predict all of this source's cases.
    The folds' searches start from ``start`` (default: the stored terms, the fit on every source) and minimise
    the same loss as a fit from the starting values (calibrate_fit.fit_folds; tests/validation/test_loso.py holds
    the two within a stated tolerance); they run in lockstep, each engine pass valuing a point of every fold."""
    train = cf.train_ids(p.cases)
    src_of = {c.id: c.source.id for c in p.cases}
    sources = sorted(set(src_of.values()))
    folds = [{i for i in train if src_of[i] != src} for src in sources]
    fits = cf.fit_folds(p.serving, p.training, folds, start or stored_fit(p))
    return [r for src, fit in zip(sources, fits) for r in rows(only_source(p, src), fit.terms)]


def training_terms(p: Prepared, fit: tuple[dict, dict], chip: str, base: EfficiencyTerms) -> EfficiencyTerms:
    """``base`` with the training terms of a training fit (train_fit.fit_training's (per chip, shared)); a chip the
    fit has no value for takes its die's (chips/<name>.toml same_die_as: the H800 and the 500 W HBM2e H100 run the
    H100's kernels, as load.efficiency_for reads them), else the pooled one."""
    per, shared = fit
    return base.model_copy(update=dict({f: cf.per_chip_value(v, chip) for f, v in per.items()}, **shared))


def refit_training(p: Prepared) -> dict[str, EfficiencyFile]:
    """The stored efficiency files with only their training terms refitted on the declared split (serving terms,
    fitted_on and the rest kept; the in-sample training error recomputed): a training-only refit in seconds."""
    from tokenomy.validation.train_fit import fit_training

    ids = cf.train_ids(p.cases)
    t = p.training
    fit = fit_training(t, np.array([c.id in ids for c in t.cases], dtype=bool))
    out = {}
    for chip in ("pooled", *sorted(loader.chip_names())):
        if (f := load.efficiency_file(chip)) is not None:
            out[chip] = f.model_copy(update=dict(terms=training_terms(p, fit, chip, f.terms)), deep=True)
    terms = {c: f.terms for c, f in out.items()}
    fitted = [r for r in rows(only_training(p), {c: terms.get(c, terms["pooled"]) for c in set(t.chip)})
              if r["split"] == "train"]
    for chip, f in out.items():
        mine = [r for r in fitted if chip == "pooled" or r["chip"] == chip]
        if mine:
            f.in_sample["train_step_s"] = float(np.median([abs(r["calibrated_error"]) for r in mine]))
    return out


def only_training(p: Prepared) -> Prepared:
    return Prepared([c for c in p.cases if c.kind == "training"], p.serving.take(np.zeros(len(p.serving.cases), bool)),
                    p.training)


def leave_one_source_out_training(p: Prepared) -> list[dict]:
    """The training cases of each source predicted by training terms fitted on the training split of every other
    source (train_fit.fit_training; the serving terms play no part): seconds, where the full --loso takes minutes."""
    from tokenomy.validation.train_fit import fit_training

    t = only_training(p)
    ids = cf.train_ids(t.cases)
    src = np.array([c.source.id for c in t.training.cases])
    stored = stored_fit(t).terms
    out = []
    for s in sorted(set(src)):
        fit = fit_training(t.training, np.array([c.id in ids for c in t.training.cases], dtype=bool) & (src != s))
        terms = {c: training_terms(t, fit, c, base) for c, base in stored.items()}
        out += rows(only_source(t, s), terms)
    return out
