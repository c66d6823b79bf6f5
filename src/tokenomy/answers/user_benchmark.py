"""A user's benchmark file against the model (validate against=) and calibrated on (calibrate): the answers.

``setup`` is a dict of the CLI's option names (model, hardware, chips, tp, weight_dtype, kv_dtype, engine,
engine_version, concurrency, rate, format, efficiency); each value is checked here and a bad one raises a
ValueError naming it. The file is read by validation.ingest, its points predicted by validation.against and
calibrated by validation.user_calibrate; the terms file is validation.user_terms.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

from tokenomy.answers import inputs
from tokenomy.answers.resolve import hardware_of, model_of, weight_dtype_of
from tokenomy.answers.result import Result
from tokenomy.catalog.versions import release

SETUP_KEYS = ("model", "hardware", "chips", "tp", "weight_dtype", "kv_dtype", "engine", "engine_version",
              "concurrency", "rate", "format", "efficiency")
COLUMNS = ("point", "metric", "concurrency", "rate", "isl", "osl", "measured", "predicted", "error", "bound")
CAL_COLUMNS = ("point", "split", "metric", "concurrency", "rate", "measured", "before", "after", "error_before",
               "error_after")


def _setup(d: dict, runs):
    """(validation.against.Setup, efficiency name or terms path) from the option dict, every value checked."""
    from tokenomy.answers.engines import ENGINES
    from tokenomy.answers.workloads import serving_kv_dtype
    from tokenomy.validation.against import Setup, engine_name, model_name

    if not d.get("hardware"):
        raise ValueError("hardware: required; the chip or system the file was measured on (tokenomy hardware)")
    try:
        hw = hardware_of(d["hardware"]).name
    except ValueError as e:
        raise ValueError(f"hardware: {e}") from None
    tp = inputs.optional("tp", d.get("tp")) or 1
    chips = inputs.optional("chips", d.get("chips")) or tp
    if chips % tp:
        raise ValueError(f"chips: {chips} is not a multiple of tp {tp}")
    if d.get("engine") is not None and d["engine"] not in ENGINES:
        raise ValueError(f"engine: {d['engine']!r}; allowed: {', '.join(ENGINES)}")
    weights = d.get("weight_dtype") or "checkpoint"
    weight_dtype_of(weights)
    rate = inputs.optional("rate", d.get("rate"))
    version = str(d.get("engine_version") or "")  # '': the engine file's
    if version:
        release(version, "engine_version")
    s = Setup(hardware=hw, model=d.get("model"), chips=chips, tp=tp, weight_dtype=weights,
              engine=d.get("engine"), engine_version=version,
              concurrency=inputs.optional("concurrency", d.get("concurrency")),
              rate=rate)
    model = model_name(runs, s)
    try:
        model_of(model)  # a bad --model fails here, once
    except ValueError as e:
        raise ValueError(f"model: {e}") from None
    engine = engine_name(runs, s)
    kv = serving_kv_dtype(model, engine, None if weights == "checkpoint" else weights, d.get("kv_dtype"))
    return dataclasses.replace(s, model=model, engine=engine, kv_dtype=kv), d.get("efficiency") or "calibrated"


def _read(measured, setup: dict | None, field: str):
    """(runs, Setup, efficiency, path, cases) of a benchmark file and its set-up."""
    from tokenomy.validation import against, ingest

    d = dict(setup or {})
    bad = sorted(set(d) - set(SETUP_KEYS))
    if bad:
        raise ValueError(f"setup: unknown {', '.join(bad)}; allowed: {', '.join(SETUP_KEYS)}")
    if not measured:
        raise ValueError(f"{field}: required; a vllm bench serve, AIPerf or GuideLLM result file")
    path = Path(measured)
    runs = ingest.read(path, d.get("format"), field)
    s, eff = _setup(d, runs)
    return runs, s, eff, path, against.cases(runs, s, path.stem)


def _terms(eff: str, hardware: str):
    """The terms to predict with: the chip's calibrated set, the roofline (None) or a user terms file's."""
    from tokenomy.catalog import loader
    from tokenomy.validation import against, user_terms

    if eff == "calibrated":
        return against.terms_for(hardware)
    if eff == "roofline":
        return None
    if not str(eff).endswith(".toml"):
        raise ValueError(f"efficiency: {eff!r}; allowed: calibrated, roofline, or a terms .toml from tokenomy "
                         "calibrate --from")
    f = user_terms.read(eff)
    chip = loader.hardware(hardware).chip.name
    if f.chip != chip:
        raise ValueError(f"efficiency: {Path(eff).name} was calibrated on {f.chip}; this hardware's chip is {chip}")
    return {hardware: f.terms}


def _title(s, runs, path: Path) -> str:
    tool = f"{runs[0].tool} {runs[0].tool_version}".strip()
    return (f"{path.name} ({tool}, {len(runs)} points): {s.model} on {s.chips} x {s.hardware}, tp {s.tp}, "
            f"{s.engine}{' ' + s.engine_version if s.engine_version else ''}, weights {s.weight_dtype}, "
            f"KV {s.kv_dtype}")


def _nth(k: int) -> str:
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


def _errors_note(label: str, stats: dict[str, float]) -> str:
    return f"{label}: " + ", ".join(f"{m} {100 * v:.1f}%" for m, v in stats.items())


def validate_against(measured, setup=None) -> Result:
    """Every point of the file predicted vs measured, and the median |error| per metric."""
    from tokenomy.validation import against

    runs, s, eff, path, cs = _read(measured, setup, "against")
    rows = against.rows(against.wrap(cs, runs, path), _terms(eff, s.hardware))
    stats = against.summary(rows)
    notes = (_errors_note(f"median |error| ({eff} terms)", stats),
             "errors are time errors (predicted/measured - 1; throughput as the time per token): negative = the "
             "model too optimistic; itl_s and tpot_s are both predicted as the decode step time.")
    extra = {"file": str(path), "protocol": runs[0].tool, "tool_version": runs[0].tool_version,
             "setup": dataclasses.asdict(s), "efficiency": str(eff), "median_abs_error": stats}
    return Result("validate", _title(s, runs, path), tuple(rows), COLUMNS, extra, notes, rows_key="points")


def _valid_range(s, cases) -> str:
    def span(vals):
        vals = sorted({v for v in vals if v is not None})
        return "-" if not vals else f"{vals[0]:g}" if len(vals) == 1 else f"{vals[0]:g}-{vals[-1]:g}"
    return (f"{s.model} on {s.chips} x {s.hardware} tp {s.tp} ({s.engine}), concurrency "
            f"{span(c.concurrency for c in cases)}, rate {span(c.request_rate for c in cases)}/s, ISL "
            f"{span(c.isl for c in cases)}, OSL {span(c.osl for c in cases)}")


def calibrate_from(measured, setup=None, hold_out=3, out=None) -> Result:
    """user_calibrate.fit on the points not held out; errors before (catalog terms) and after on both splits."""
    from tokenomy.catalog import loader
    from tokenomy.validation import against, user_calibrate, user_terms
    from tokenomy.validation.prepare import prepare_serving

    k = inputs.optional("hold_out", hold_out)
    if k is None or k < 2:
        raise ValueError(f"hold_out: every k-th point is held out; k must be an integer >= 2, got {hold_out!r}")
    if out:
        user_terms.check_out(out)
    runs, s, _, path, cs = _read(measured, setup, "measured")
    if len(runs) < k:
        raise ValueError(f"hold_out: holding out every {_nth(k)} of {len(runs)} points leaves none held out; give a "
                         "smaller one or more points")
    cases = against.wrap(cs, runs, path, lambda c: "test" if user_calibrate.held_out(against.point_of(c.id), k)
                         else "train")
    prior = against.terms_for(s.hardware)
    fit = user_calibrate.fit(prepare_serving([c for c in cases if c.split == "train"]), prior[s.hardware])
    before, after = against.rows(cases, prior), against.rows(cases, {s.hardware: fit.terms})
    rows = [{**b, "before": b["predicted"], "after": a["predicted"], "error_before": b["error"],
             "error_after": a["error"]} for b, a in zip(before, after)]
    held = {"before": against.summary(before, "test"), "after": against.summary(after, "test")}
    extra = {"file": str(path), "protocol": runs[0].tool, "hold_out": f"every {_nth(k)} point", "refitted": {
        f: {"catalog": getattr(prior[s.hardware], f), "calibrated": getattr(fit.terms, f)} for f in fit.refitted},
        "held_out_median_abs_error": held, "in_sample_median_abs_error": against.summary(after, "train")}
    outside = user_calibrate.outside_ranges(fit.terms, fit.refitted)
    extra["outside_plausible_range"] = outside
    if out:
        chip = loader.hardware(s.hardware).chip.name
        f = user_terms.UserEfficiencyFile(
            chip=chip, fitted=dt.date.today().isoformat(), split_rule=f"point % {k} == 0 -> held out",
            terms=fit.terms, fitted_on=[c.id for c in cases if c.split == "train"],
            n_fitted=sum(c.split == "train" for c in cases), in_sample=extra["in_sample_median_abs_error"],
            refitted=fit.refitted, from_file=str(path.resolve()), held_out_before=held["before"],
            held_out_after=held["after"], valid_range=_valid_range(s, cs),
            note=" ".join(["Terms not in refitted are the catalog's for the chip (catalog/efficiency).", *outside]))
        extra["out"] = str(user_terms.write(f, out))
    notes = (f"refitted: {', '.join(fit.refitted) or 'none (the points identify no free term)'}",
             _errors_note(f"held out (every {_nth(k)} point), before", held["before"]),
             _errors_note("held out, after", held["after"]),
             *(f"{o}: the points may show a mechanism the model lacks, not a different efficiency" for o in outside))
    return Result("calibrate", _title(s, runs, path), tuple(rows), CAL_COLUMNS, extra, notes, rows_key="points")
