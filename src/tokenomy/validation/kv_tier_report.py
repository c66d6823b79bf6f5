"""The tiered-KV section of docs/validation.md (validation/report.py's ``kv_tier_section`` calls ``report_lines``).

The published measurements of tiered KV caching and prefix-aware routing (catalog/validation/kv_tiering) as
validation/kv_tiering scores them through the session simulator: median |error| by metric family (hit rate, TTFT,
throughput), by metric and source, every case, what each source published that could not be cased and why
(counted, sources read with no case included), and what each source's residuals point to (its file's
``residual``). Error = predicted / measured - 1 for every metric here, throughput included (the serving tables
above sign throughput as a time); nothing is fitted to these cases.
"""

from __future__ import annotations

import numpy as np

from tokenomy.catalog import loader
from tokenomy.validation import kv_tiering as kt

FAMILIES = {"hit rate": ("hit_rate",), "TTFT": ("ttft_mean_s", "ttft_p50_s", "ttft_mean_ratio"),
            "throughput": ("input_tokens_per_s", "output_tokens_per_s", "input_tokens_per_s_ratio")}


def family_errors(rows) -> dict[str, np.ndarray]:
    """Each metric family's errors (predicted / measured - 1) over the scored rows."""
    return {name: np.array([r.error for r in rows if r.case.metric in metrics], float)
            for name, metrics in FAMILIES.items()}


def headline(rows) -> str:
    """One line: median |error| per metric family, with its case count."""
    parts = [f"{name} {100 * np.median(np.abs(e)):.0f}% ({len(e)} cases)"
             for name, e in family_errors(rows).items() if len(e)]
    return "Median |error|: " + "; ".join(parts) + "."


def _median_abs(rows, source: str) -> tuple[float, int]:
    e = np.array([r.error for r in rows if r.source == source], float)
    return (float(np.median(np.abs(e))) if len(e) else float("nan")), len(e)


def not_cased_lines(files) -> list[str]:
    """Per source: cases scored and published rows not used; then every source read with no case, with why."""
    L = ["| source | cases scored | published rows not used |", "|---|---:|---:|"]
    L += [f"| `{f.source.id}` | {len(f.case)} | {len(f.skipped)} |" for f in files]
    unread = [f for f in files if not f.case]
    if unread:
        L += ["", f"Sources read with no case ({len(unread)}): the setup cannot be stated or the figures are not in "
              "text.", ""]
        for f in unread:
            L.append(f"- `{f.source.id}`: {f.source.title}. <{f.source.url}>")
            L += [f"  - {k['what']}: {k['why']}" for k in f.skipped]
    return L


def residual_lines(rows, files) -> list[str]:
    """What each cased source's remaining errors point to, with the source's median |error|."""
    L = []
    for f in files:
        if f.case and f.residual:
            med, n = _median_abs(rows, f.source.id)
            L.append(f"- `{f.source.id}` (median |error| {100 * med:.0f}% over {n} cases):")
            L += [f"  - {line}" for line in f.residual]
    return L or ["- none stated"]


def report_lines(rows=None, files=None) -> list[str]:
    """The section: headline, by metric, by source, every case, not cased (counted), residuals, sources."""
    files = loader.kv_tier_validation() if files is None else files
    rows = kt.scored() if rows is None else rows
    cased = [f for f in files if f.case]
    L = ["## Tiered KV caching and prefix-aware routing (issue 28)", "",
         f"{len(rows)} published figures from {len(cased)} sources (and {len(files) - len(cased)} sources read with no "
         "usable figure), each with its deployment, KV tiers, routing and traffic "
         "(`catalog/validation/kv_tiering/*.toml`), predicted by the session simulator that `serve --workload` runs "
         "(`validation/kv_tiering.py`; the traffic `validation/kv_tier_plans.py`). Nothing is fitted to these cases. "
         "Error = predicted / measured - 1 for every metric, throughput included.", "",
         f"**{headline(rows)}**", "", *kt.summary_lines(rows), "", "By source:", "",
         *kt.source_lines_by_metric(rows), "", "Every case:", "", *kt.table_lines(rows), "",
         "### Not cased, and why", "", *not_cased_lines(files), "",
         "### What the residuals point to", "", *residual_lines(rows, files), "", "Sources cased:", ""]
    L += [f"- `{f.source.id}` ({f.source.kind}, {f.source.engine} {f.source.engine_version}, {f.source.as_of}): "
          f"{f.source.title}. <{f.source.url}>" for f in cased]
    return L
