"""validate: every published measurement of the validation catalog predicted through the engine, and the error;
or, with ``against``, every point of a user's benchmark file (vllm bench serve, AIPerf / GenAI-Perf, GuideLLM).
calibrate: refit the efficiency terms a user's file identifies, held-out error before and after, a terms file.

Held-out errors (cases the calibration never saw, by the split declared in catalog/efficiency/split.toml) grouped
by the keys asked; ``refit`` first refits the efficiency terms on the training split and rewrites
catalog/efficiency/*.toml; ``loso`` adds leave-one-source-out and, over every source, writes
catalog/efficiency/error_bands.toml (validation/bands.py); ``write`` writes the markdown report.
A user file's points are predicted by the same predictor (validation/against.py); ``setup`` gives what the file
cannot tell (hardware, chips, tp, dtypes, engine; the load of an AIPerf CSV), as a dict of the CLI's option names.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from tokenomy.answers.door import door
from tokenomy.answers.result import Result

STAT_COLUMNS = ("n", "median_abs_error", "within_20pct", "signed_bias", "roofline_median_abs_error",
                "roofline_signed_bias")
CASE_COLUMNS = ("id", "split", "metric", "measured", "roofline", "calibrated", "calibrated_error", "bound")
GROUP_KEYS = ("metric", "chip", "engine", "shape", "bound", "source", "scenario", "capacity_limited", "model",
              "split")


@door()
def validate(source=None, by=("metric", "chip"), cases=False, refit=False, loso=False, write=None, against=None,
             setup=None, training=False) -> Result:
    if against is not None:
        if source or refit or loso or write:
            raise ValueError("against: predicts the file's own points; drop source, refit, loso and write")
        from tokenomy.answers.user_benchmark import validate_against

        return validate_against(against, setup)
    from tokenomy.catalog import loader
    from tokenomy.validation import calibrate_fit, load, report, run

    t0 = time.perf_counter()
    keys = tuple(by)
    if not keys or not set(keys) <= set(GROUP_KEYS):
        raise ValueError(f"by: use some of {', '.join(sorted(GROUP_KEYS))}")
    known = {f.source.id for f in load.validation_files()}
    if source and not set(source) <= known:
        raise ValueError(f"source: unknown {sorted(set(source) - known)}; allowed: {', '.join(sorted(known))}")
    if refit and source:
        raise ValueError("refit: fits on every source; drop source")
    if training and write:
        raise ValueError("training: the report needs every case; drop write")
    # the training cases alone: --refit refits only the training terms, --loso over them (seconds)
    p = (run.prepare_training_cases if training else run.prepare)(tuple(source) if source else None)
    if refit and training:
        for chip, f in run.refit_training(p).items():
            loader.catalog_path("efficiency", chip).write_text(calibrate_fit.to_toml(f))
        load.efficiency_for.cache_clear()
    elif refit:
        fit = run.refit(p)
        for chip, f in calibrate_fit.efficiency_files(fit, run.in_sample(p, fit)).items():
            loader.catalog_path("efficiency", chip).write_text(calibrate_fit.to_toml(f))
        load.efficiency_for.cache_clear()
    rows = run.rows(p)
    elapsed = time.perf_counter() - t0
    loso_rows = (run.leave_one_source_out_training(p) if training else run.leave_one_source_out(p)) if loso else None
    if loso_rows is not None and not source and not training:  # every source: the bands every answer carries
        from tokenomy.catalog import loader
        from tokenomy.validation import bands

        loader.ERROR_BANDS.write_text(bands.to_toml(bands.compute(loso_rows), len(loso_rows),
                                                    len({r["source"] for r in loso_rows}),
                                                    time.strftime("%Y-%m-%d")))
        loader.error_bands.cache_clear()
    if write:
        terms = {c: load.efficiency_for(c).terms for c in sorted({r["chip"] for r in rows})}
        terms["pooled"] = load.efficiency_for("pooled").terms
        cmd = "tokenomy validate" + (" --loso" if loso else "") + f" --write {write}"
        Path(write).write_text(report.markdown(rows, terms, loso_rows, elapsed, cmd, time.perf_counter() - t0))
    if cases:
        return Result("validate", "validation cases", tuple(rows), CASE_COLUMNS, rows_key="")
    h = report.headline(rows)
    extra = {"headline_decode_time_per_token": h, "in_sample": report.summary(rows, keys, "train"),
             "leave_one_source_out": report.summary(loso_rows, keys, None) if loso_rows else None,
             "cases": len(rows), "seconds": elapsed}
    note = (f"decode time per output token, held-out: median |error| {100 * h['held_out_median_abs_error']:.1f}% "
            f"over {h['cases']} cases (in-sample {100 * h['in_sample_median_abs_error']:.1f}%, roofline "
            f"{100 * h['roofline_median_abs_error']:.0f}%); errors are time errors, negative = model too "
            f"optimistic. {len(rows)} cases in {elapsed:.1f} s.")
    if training and loso_rows is not None:  # the training LOSO is what was asked: its table, dense and MoE apart
        moe = {c.id for c, m in zip(p.training.cases, p.training.moe) if m}
        lrows = [{**r, "moe": "MoE" if r["id"] in moe else "dense"} for r in loso_rows]
        return Result("validate", "training step time, leave-one-source-out (each source predicted by training "
                      "terms fitted on every other source)", tuple(report.summary(lrows, ("source", "moe"), None)),
                      ("source", "moe", *STAT_COLUMNS), extra,
                      (f"{len(lrows)} training cases from {len({r['source'] for r in lrows})} sources; dense "
                       f"{100 * _median_abs(lrows, 'dense'):.1f}%, MoE {100 * _median_abs(lrows, 'MoE'):.1f}% "
                       "median |error|.",), rows_key="leave_one_source_out")
    return Result("validate", "held-out error (calibrated; roofline beside it)",
                  tuple(report.summary(rows, keys)), (*keys, *STAT_COLUMNS), extra, (note,), rows_key="held_out")


def _median_abs(rows: list[dict], kind: str) -> float:
    v = [abs(r["calibrated_error"]) for r in rows if r["moe"] == kind]
    return statistics.median(v) if v else float("nan")


def calibrate(measured, setup=None, hold_out=3, out=None) -> Result:
    """Refit the efficiency terms the points of the benchmark file ``measured`` identify (every ``hold_out``-th
    point held out), report the held-out error before and after, and write the terms to ``out`` (a .toml that
    ``efficiency=`` reads back)."""
    from tokenomy.answers.user_benchmark import calibrate_from

    return calibrate_from(measured, setup, hold_out, out)
