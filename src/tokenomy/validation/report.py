"""Summaries of a validation run: tables by metric, chip, regime and source, and docs/validation.md."""

from __future__ import annotations

import collections

import numpy as np

from tokenomy.validation import load
from tokenomy.validation.metrics import WITHIN, grouped, stats

METRIC_LABEL = {"tpot_s": "time per output token", "latency_s": "request latency (static batch)",
                "ttft_s": "time to first token", "throughput_per_chip": "output tokens/s per chip",
                "train_step_s": "training step time"}
DECODE_METRICS = ("tpot_s", "latency_s")  # decode-dominated per-token times
KNOWN_GAPS = """What the model leaves out, as far as we know, roughly in order of effect:

- **KV capacity inputs.** The batch of a max-throughput run is set by the KV cache left after the weights. The chip
  catalog states H100/A100 HBM as 80e9 bytes; the devices expose 80 GiB (85.9e9), so capacity-limited H100/A100
  runs (e.g. Llama 3.1 70B fp8 on one H100) are predicted with too small a batch. The runtime reserve (3 GB) and
  the schedulers' batch caps (4096 when unpublished) are declared guesses.
- **Software generations.** TensorRT-LLM 0.9 (static batching), 0.14/0.17 and the 1.0 PyTorch backend sit 10-25%
  apart for the same model and chip; one set of terms per chip averages over them.
- **Framework choices the tables do not state**: whether Mistral's sliding window is used for the KV cache, the KV
  dtype (assumed fp8 with fp8 checkpoints), attention data-parallelism and the EP degree of MoE runs (every case
  runs as Layout(tp, dp = chips/tp) in the engine: with more TP ranks than KV heads, e.g. Qwen3-235B's 4 KV heads
  on tp8, each KV head is replicated, which halves the KV-capacity batch of its max-throughput runs; an
  attention-DP + EP deployment would not), NVFP4 block scales (ignored).
- **MoE pre-training** efficiency depends on expert width (Qwen3-30B-A3B's 768-wide experts run at about half the
  efficiency of DeepSeek-V3's), which one pooled non-GEMM share does not capture.
- **TPU v4 layouts.** Pope et al. use 2D weight-stationary and weight-gathered layouts with batch-sharded
  multi-query KV; the engine runs 1D tensor parallelism, so PaLM 540B on 64 chips is rejected (48 heads do not
  split 64 ways) and PaLM 62B at batch 512 does not fit (its single KV head is replicated on every chip): those
  cases have no prediction.
- **Model selection.** The form of the model (which terms exist) was chosen while the held-out numbers were
  visible (two variants of the prefill-interleaving term were compared), so the held-out error is a little
  optimistic; the leave-one-source-out table is the stricter check."""


def _err(rows, key="calibrated_error") -> np.ndarray:
    return np.array([r[key] for r in rows], dtype=float)


def summary(rows: list[dict], by: tuple[str, ...], split: str | None = "test") -> list[dict]:
    """Held-out (or in-sample, or all) statistics grouped by the given row keys, with the roofline beside them."""
    sel = [r for r in rows if split is None or r["split"] == split]
    keys = [tuple(r[k] for k in by) for r in sel]
    cal, roof = grouped(keys, _err(sel)), grouped(keys, _err(sel, "roofline_error"))
    return [{**dict(zip(by, k)), **cal[k].row(), "roofline_median_abs_error": roof[k].mdape,
             "roofline_signed_bias": roof[k].bias} for k in cal]


def headline(rows: list[dict]) -> dict:
    """Held-out decode time per output token (TPOT cases and decode-dominated static latencies)."""
    dec = [r for r in rows if r["split"] == "test" and r["metric"] in DECODE_METRICS]
    ins = [r for r in rows if r["split"] == "train" and r["metric"] in DECODE_METRICS]
    s, si, sr = stats(_err(dec)), stats(_err(ins)), stats(_err(dec, "roofline_error"))
    return {"cases": s.n, "held_out_median_abs_error": s.mdape, "held_out_within_20pct": s.within,
            "held_out_signed_bias": s.bias, "in_sample_median_abs_error": si.mdape,
            "roofline_median_abs_error": sr.mdape, "roofline_signed_bias": sr.bias}


def counts(rows: list[dict], by: str) -> dict[str, collections.Counter]:
    out: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in rows:
        out[r[by]][r["metric"]] += 1
    return out


def _pct(x: float) -> str:
    return "-" if x != x else f"{100 * x:+.0f}%" if x < 0 else f"{100 * x:.0f}%"


def _table(rows: list[dict], cols: list[tuple[str, str]]) -> list[str]:
    out = ["| " + " | ".join(h for h, _ in cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = []
        for _, k in cols:
            v = r.get(k)
            if isinstance(v, float) and k not in ("n",):
                cells.append(_pct(v) if ("error" in k or "within" in k or "bias" in k) else f"{v:.3g}")
            else:
                cells.append(str(v))
        out.append("| " + " | ".join(cells) + " |")
    return out


STAT_COLS = [("held-out n", "n"), ("median abs error", "median_abs_error"), (f"within {int(WITHIN * 100)}%",
             "within_20pct"), ("signed bias", "signed_bias"), ("roofline median abs error",
             "roofline_median_abs_error"), ("roofline bias", "roofline_signed_bias")]


def markdown(rows: list[dict], terms: dict, loso: list[dict] | None, runtime_s: float, command: str,
             total_s: float) -> str:
    """docs/validation.md, regenerated from a run (`tokenomy validate --write docs/validation.md`)."""
    h = headline(rows)
    rule = load.split_rule()
    n_train = sum(r["split"] == "train" for r in rows)
    L = ["# Validation: tokenomy against published measurements", "",
         f"Generated by `{command}`; do not edit by hand. Predicting all {len(rows)} cases took {runtime_s:.1f} s"
         + (f"; with the leave-one-source-out refits, {total_s:.0f} s." if loso else "."), "",
         "## Headline: leave one source out", "",
         *(loso_headline(loso) if loso else ["(run `tokenomy validate --loso` for the leave-one-source-out "
                                             "headline)", ""]),
         "## Hash split (secondary)", "",
         f"Held-out median error of the calibrated model on decode time per output token: "
         f"**{100 * h['held_out_median_abs_error']:.1f}%** over {h['cases']} held-out cases "
         f"({100 * h['held_out_within_20pct']:.0f}% within 20%, signed bias {_pct(h['held_out_signed_bias'])}); "
         f"in-sample {100 * h['in_sample_median_abs_error']:.1f}%. The uncalibrated roofline on the same cases: "
         f"{100 * h['roofline_median_abs_error']:.0f}% median error, bias {_pct(h['roofline_signed_bias'])} "
         "(too fast, as a lower bound must be). Held-out cases share their source, protocol and engine version "
         "with fitted ones: leave-one-source-out is the stricter figure.", "",
         "Errors are signed as time errors: for throughput, error = measured/predicted − 1, so a negative bias "
         "always means the model promises more performance than was measured.", "",
         "## Split", "",
         f"Declared in `catalog/efficiency/split.toml`: {rule.rule}. {n_train} cases fitted on, "
         f"{len(rows) - n_train} held out. Every number below marked held-out comes only from cases the fit never saw.",
         ""]
    L += ["## By metric (held-out)", ""] + _table(summary(rows, ("metric",)), [("metric", "metric")] + STAT_COLS)
    L += ["", "In-sample (fitted) cases, for comparison:", ""]
    L += _table(summary(rows, ("metric",), "train"), [("metric", "metric"), ("n", "n")] + STAT_COLS[1:4])
    L += ["", "## By metric and chip (held-out)", ""]
    L += _table(summary(rows, ("metric", "chip")), [("metric", "metric"), ("chip", "chip")] + STAT_COLS)
    L += ["", "## By metric and serving engine (held-out)", "",
          "Concurrency, request-rate and max-throughput cases are predicted by the serving model `tokenomy serve` "
          "runs (serving.steady: continuous batching, prefill under the token budget, KV capacity from the "
          "engine's profile in catalog/engines, queueing), each step timed by the engine.", ""]
    L += _table(summary(rows, ("metric", "engine")), [("metric", "metric"), ("engine", "engine")] + STAT_COLS)
    L += ["", "## By metric and workload shape (held-out)", ""]
    L += _table(summary(rows, ("metric", "shape")), [("metric", "metric"), ("workload", "shape")] + STAT_COLS)
    L += ["", "## By regime: which term binds in the calibrated prediction (held-out)", ""]
    L += _table(summary(rows, ("metric", "bound")), [("metric", "metric"), ("binding term", "bound")] + STAT_COLS)
    L += ["", "'compute' at small batch means GEMM-size-limited: the fitted η(M) = η_max·M/(M + M½) makes a GEMM "
          "with few rows as slow as streaming its weights (at M = 8 on an H100 in fp8, η ≈ 2-3% of peak, the "
          "weight-streaming rate), so the size term and the HBM term describe the same physics there and the "
          "label, not the time, is ambiguous."]
    L += ["", "Capacity-limited = the KV cache, not the offered load, sets the batch (queueing at high concurrency, "
          "or the largest batch in max-throughput runs):", ""]
    L += _table(summary(rows, ("metric", "capacity_limited")),
                [("metric", "metric"), ("capacity-limited", "capacity_limited")] + STAT_COLS[:4])
    L += ["", "## By source (held-out)", ""]
    L += _table(summary(rows, ("source", "metric")), [("source", "source"), ("metric", "metric")] + STAT_COLS)
    if loso:
        L += ["", "## Leave one source out", "",
              "Stricter than the case split: each source is predicted by terms fitted on the training split of the "
              "other sources only (a new framework version or vendor table, unseen).", ""]
        L += _table(summary(loso, ("metric",), None), [("metric", "metric"), ("n", "n")] + STAT_COLS[1:4])
        L += [""] + _table(summary(loso, ("source", "metric"), None),
                           [("source", "source"), ("metric", "metric"), ("n", "n")] + STAT_COLS[1:4])
    L += ["", "## Where the roofline is not a lower bound", "",
          "A roofline must be faster than every real run. These cases break that, so the inputs, not the "
          "efficiency terms, are off:", ""]
    bad = [r for r in rows if r["roofline_error"] > 0]
    L += [f"- `{r['id']}`: roofline {_pct(r['roofline_error'])} ({r['bound']}-bound"
          f"{', capacity-limited' if r['capacity_limited'] else ''})" for r in bad] or ["- none"]
    L += ["", KNOWN_GAPS]
    L += ["", "## Fitted efficiency terms", "", "Stored per chip in `catalog/efficiency/<chip>.toml` with the case "
          "ids they were fitted on; the serving terms are one set per die (the boards on one silicon share it: "
          "chips/<name>.toml same_die_as), `pooled` the prior and the fallback; a die without cases takes its chip "
          "family's fit.", ""]
    fields = list(next(iter(terms.values())).model_dump())
    L += ["| chip | " + " | ".join(fields) + " |", "|" + "---|" * (len(fields) + 1)]
    for chip, t in sorted(terms.items()):
        L.append(f"| {chip} | " + " | ".join(f"{v:.3g}" for v in t.model_dump().values()) + " |")
    L += ["", "## The validation set", ""]
    L += _counts_table(rows, "chip") + [""] + _counts_table(rows, "source")
    L += ["", "Sources:", ""]
    seen = set()
    for c in load.cases():
        if c.source.id not in seen:
            seen.add(c.source.id)
            L.append(f"- `{c.source.id}`: {c.source.title} ({c.source.as_of}). <{c.source.url}>")
    L += ["", "Rows of these sources that were not used, and why:", ""]
    L += [f"- `{src.id}`: {s.what}: {s.why}" for src, s in load.skipped()]
    L += ["", *energy_section()]
    L += ["", *kv_tier_section()]
    L += ["", "## Largest held-out errors", ""]
    worst = sorted((r for r in rows if r["split"] == "test" and np.isfinite(r["calibrated_error"])),
                   key=lambda r: -abs(r["calibrated_error"]))[:12]
    L += _table([{**r, "error": r["calibrated_error"]} for r in worst],
                [("case", "id"), ("metric", "metric"), ("binding term", "bound"), ("error", "calibrated_error")])
    return "\n".join(L) + "\n"


def energy_section() -> list[str]:
    """The energy validation's own section (validation/energy_cases.py: J per output token, held out by source), the
    vendors' throughput-per-MW claims scored apart after it (validation/energy_claims.py)."""
    from tokenomy.validation import energy_cases, energy_claims

    return [*energy_cases.report_lines(), "", *energy_claims.report_lines()]


def kv_tier_section() -> list[str]:
    """Tiered KV caching and prefix-aware routing against their published measurements (validation/kv_tier_report.py:
    the session simulator per case, scored by metric family, what was not cased and why, the residuals' mechanisms)."""
    from tokenomy.validation import kv_tier_report

    return kv_tier_report.report_lines()


LOSO_BY = (("engine", "engine"), ("chip family", "chip_family"), ("dense/MoE", "moe"), ("agg/disagg", "mode"))
LOSO_COLS = [("n", "n"), ("median abs error", "median_abs_error"), (f"within {int(WITHIN * 100)}%", "within_20pct"),
             ("signed bias", "signed_bias")]


def loso_line(loso: list[dict]) -> str:
    """The one line the README quotes (docs/numbers.py copies it from docs/validation.md): median
    |error| per metric over every source, each source predicted by terms fitted without it."""
    parts = []
    for m in METRIC_LABEL:
        st = stats(_err([r for r in loso if r["metric"] == m]))
        if st.n:
            parts.append(f"{METRIC_LABEL[m]} {100 * st.mdape:.1f}% ({st.n} cases)")
    n_src = len({r["source"] for r in loso})
    return f"Leave-one-source-out over {n_src} sources, median |error|: " + "; ".join(parts) + "."


def loso_headline(loso: list[dict]) -> list[str]:
    """The report's first section: leave-one-source-out by metric, then by engine, chip family, dense/MoE and
    agg/disagg."""
    rows = [{**r, "moe": "MoE" if r.get("moe") else "dense"} for r in loso]
    out = [loso_line(rows), "", "Each source is predicted by terms fitted on the training split of every other "
           "source (a framework version, vendor table or benchmark never seen).", ""]
    out += _table(summary(rows, ("metric",), None), [("metric", "metric")] + LOSO_COLS)
    for label, key in LOSO_BY:
        sel = [r for r in rows if key in r]  # training cases have no serving mode
        if sel:
            out += ["", f"By {label}:", ""]
            out += _table(summary(sel, ("metric", key), None), [("metric", "metric"), (label, key)] + LOSO_COLS)
    return out + [""] + load_band_lines(rows) + [""]


LOAD_EDGES = (8.0, 32.0, 128.0)  # upper edges of the load bands: users <= 8, 9-32, 33-128, > 128
LOAD_LABELS = ("<= 8", "9-32", "33-128", "> 128")


def load_band(users: float) -> str:
    """The load band of a serving case's users (run.regime_fields: clients, a static batch, or the requests an open
    loop keeps in the engine)."""
    return LOAD_LABELS[int(np.searchsorted(LOAD_EDGES, float(users), side="left"))]


def load_band_lines(loso: list[dict]) -> list[str]:
    """Leave-one-source-out error of each serving metric by load band: a benchmark's first wave and its queues grow
    with the users, so an error that grows with load is a protocol mechanism missing."""
    rows = [{**r, "load": load_band(r["users"])} for r in loso if np.isfinite(r.get("users", np.nan))]
    table = sorted(summary(rows, ("metric", "load"), None), key=lambda t: (t["metric"], LOAD_LABELS.index(t["load"])))
    out = ["By load (users: a closed loop's clients, a static run's batch, an open loop's or max-throughput run's "
           "predicted requests in the engine):", ""]
    return out + _table(table, [("metric", "metric"), ("users", "load")] + LOSO_COLS)


def _counts_table(rows: list[dict], by: str) -> list[str]:
    c = counts(rows, by)
    metrics = [m for m in METRIC_LABEL if any(m in v for v in c.values())]
    out = [f"| {by} | " + " | ".join(metrics) + " | total |", "|" + "---|" * (len(metrics) + 2)]
    for k in sorted(c):
        out.append(f"| {k} | " + " | ".join(str(c[k].get(m, 0)) for m in metrics) + f" | {sum(c[k].values())} |")
    return out
