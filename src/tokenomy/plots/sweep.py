"""A sweep's Pareto fronts as plotly figure dicts (answers.sweep_front rows in; no computation, no plotly import).

    pass sweeps     tokens/s per chip vs tokens/s per user, one line per (model, hardware)
    serving sweeps  $/Mtok (output) vs TTFT, one line per (model, hardware)
Each front point is coloured by its binding term (compute, memory, comms, overhead, pipeline hop); hovering shows
the point's coordinates (layout, batch, context, ...).
"""

from __future__ import annotations

import copy

from tokenomy.plots.style import LAYOUT

BOUND_COLOURS = {"compute": "#d62728", "memory": "#1f77b4", "comms": "#2ca02c", "overhead": "#7f7f7f",
                 "pipeline hop": "#9467bd"}
TITLES = {"tokens_per_s_per_user": "tokens/s per user", "tokens_per_s_per_chip": "tokens/s per chip",
          "ttft_s": "TTFT (s)", "usd_per_mtok_output": "$ per million output tokens"}


def _hover(point: dict) -> str:
    return "<br>".join(f"{k} {v}" for k, v in point.items())


def pareto_figure(rows: list[dict], x: str, y: str, title: str) -> dict:
    """One line per series through its front points, markers coloured by the binding term, a legend entry per term."""
    data, series = [], {}
    for r in rows:
        series.setdefault(r["series"], []).append(r)
    for name, pts in series.items():
        data.append({"type": "scatter", "mode": "lines+markers", "name": name, "x": [p[x] for p in pts],
                     "y": [p[y] for p in pts], "text": [_hover({"bound": p["bound"], **p["point"]}) for p in pts],
                     "hoverinfo": "text+x+y", "line": {"width": 1},
                     "marker": {"size": 8, "color": [BOUND_COLOURS[p["bound"]] for p in pts]}})
    used = sorted({r["bound"] for r in rows}, key=list(BOUND_COLOURS).index)
    for b in used:  # legend: what each colour means
        data.append({"type": "scatter", "mode": "markers", "name": f"binding: {b}", "x": [None], "y": [None],
                     "marker": {"size": 8, "color": BOUND_COLOURS[b]}, "hoverinfo": "skip"})
    lay = copy.deepcopy(LAYOUT)
    lay.update(title={"text": title}, height=560, xaxis={"title": {"text": TITLES.get(x, x)}, "type": "log"},
               yaxis={"title": {"text": TITLES.get(y, y)}, "type": "log"})
    return {"data": data, "layout": lay}
