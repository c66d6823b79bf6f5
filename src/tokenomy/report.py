"""The HTML report of ``tokenomy demo``: the lecture regenerated, re-asked on today's hardware, with plots.

One self-contained file: tables as HTML, figures as plotly figure dicts drawn by plotly.js inlined from the
installed plotly package (works offline). Without plotly the tables are still written, with a note.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np

from tokenomy.answers.economics import lecture_serving
from tokenomy.formatting import fmt_cell
from tokenomy.headers import header
from tokenomy.econ import batch as eb
from tokenomy.econ import context as ec
from tokenomy.econ import kv_tiers as kt
from tokenomy.econ import latency as el
from tokenomy.lecture_claims import evaluate, seed_corrections
from tokenomy.lecture_claims.real import (CONTEXT, KV_DTYPE, MODEL, PREFIX, PREFIX_BATCH, SYSTEMS, closing_note, real_rows,
                                   system_serving)
from tokenomy.plots import serving as ps

CSS = """body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#111}
table{border-collapse:collapse;margin:1em 0;font-size:13px}td,th{border:1px solid #ddd;padding:3px 6px;text-align:left}
th{background:#f3f4f6}.no{color:#b91c1c;font-weight:600}.yes{color:#15803d}.fig{height:420px}
.grid{display:grid;grid-template-columns:1fr 1fr;gap:1em}"""


def _cell(key: str, v) -> str:
    if isinstance(v, bool):
        return f'<span class="{"yes" if v else "no"}">{"yes" if v else "NO"}</span>'
    if isinstance(v, list):
        return html.escape(", ".join(f"{x:.4g}" if isinstance(x, float) else str(x) for x in v))
    if isinstance(v, float) and key in ("lecture_value", "computed_value", "real_value", "ratio"):
        return html.escape(f"{v:.4g}")
    return html.escape(fmt_cell(key, v))


def table(rows: list[dict], columns) -> str:
    head = "".join(f"<th>{html.escape(header(c))}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_cell(c, r.get(c))}</td>" for c in columns) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def figures() -> list[tuple[str, dict]]:
    """The report's figures: DeepSeek-V3 on each of the lecture-comparison systems (calibrated, on the layout the
    lecture's real-hardware table uses), and the cache tiers."""
    out = []
    B = np.array([2.0 ** i for i in range(0, 17)])
    for name in SYSTEMS:
        sv = system_serving(lecture_serving, name)
        s = eb.summarize_batch(sv, CONTEXT)
        t = sv.terms(B, CONTEXT)
        rows = eb.batch_rows(t)
        marks = {"balance B*": s.balance_batch, "operating": s.operating_batch, "max fit": s.max_batch_fit}
        label = f"{MODEL} on {sv.label()}, context {CONTEXT}"
        out.append((f"latency-{name}", ps.latency_vs_batch(rows, f"Step time vs batch: {label}", marks)))
        out.append((f"cost-{name}", ps.cost_vs_batch(rows, f"$/M tokens vs batch: {label}", marks)))
        out.append((f"pareto-{name}", ps.pareto(el.schedule_rows(t, sv.chips), f"Per user vs per chip: {label}")))
        b = s.operating_batch or 1
        ctx = [int(2 ** i) for i in range(10, 21)]
        out.append((f"context-{name}", ps.mfu_vs_context(ec.context_rows(sv, b, ctx), f"MFU vs context at batch {b}: "
                                                          f"{MODEL} on {sv.label()}",
                                                          ec.summarize_context(sv, b).as_dict())))
    prefix = PREFIX
    sv = lecture_serving(MODEL, "hgx-h200-8", kv_dtype=KV_DTYPE, batch=[PREFIX_BATCH], context=[prefix],
                         len_pass=prefix)
    tiers = [kt.hbm_tier(sv.hardware.chip, sv.price)] + [t for t in kt.tiers_from_catalog() if t.tier != "hbm"]
    size = prefix * float(sv.shape.coeffs.kv_elems_per_token)  # fp8: one byte per element
    curves = kt.cost_curves(size, tiers, kt.remat_usd(sv, prefix, PREFIX_BATCH))
    out.append(("tiers", ps.tier_costs_vs_hold(curves, f"{MODEL} {prefix}-token prefix ({size / 1e9:.2f} GB): "
                                                       "cost vs hold time per tier")))
    return out


def _plotly_js() -> str | None:
    try:
        import plotly.offline
    except ImportError:
        return None
    return plotly.offline.get_plotlyjs()


def render() -> str:
    claims = [r.as_dict() for r in evaluate()]
    real = real_rows(lecture_serving)
    js = _plotly_js()
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>tokenomy: the lecture, regenerated</title>"
             f"<style>{CSS}</style>", f"<script>{js}</script>" if js else "", "</head><body>",
             "<h1>How LLMs are served: the lecture, regenerated claim by claim</h1>",
             f"<p>{sum(c['ok'] for c in claims)}/{len(claims)} claims of lecture.md §4.1 reproduced from their stated "
             "inputs within the lecture's tolerance.</p>",
             table(claims, ("id", "claim", "lecture_value", "computed_value", "tolerance", "ok", "formula", "note")),
             "<h2>What the seed summaries got wrong (lecture.md §2.16)</h2>",
             table(seed_corrections(), ("id", "correction")),
             "<h2>The same claims on today's hardware (calibrated efficiency, real layouts)</h2>",
             table([r.as_dict() for r in real], ("id", "quantity", "setting", "lecture_value", "real_value", "ratio",
                                                  "agrees")),
             "<h2>Closing note: where the lecture and today's hardware disagree</h2><ul>",
             *(f"<li>{html.escape(line)}</li>" for line in closing_note(real)), "</ul><h2>Figures</h2>"]
    if js is None:
        parts.append("<p><b>Figures need the plotly package</b> (pip install 'tokenomy[web]'); tables only.</p>")
    else:
        figs = figures()
        parts.append('<div class="grid">' + "".join(f'<div id="{k}" class="fig"></div>' for k, _ in figs) + "</div>")
        payload = json.dumps({k: f for k, f in figs}).replace("<", "\\u003c")
        parts.append(f"<script>const F={payload};for(const k in F){{Plotly.newPlot(k,F[k].data,F[k].layout,"
                     "{responsive:true});}</script>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(path: str | Path = "out/report.html") -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(render(), encoding="utf-8")
    return p
