"""Predicted vs measured for a user's benchmark points (answers validate against= / calibrate rows in; no
computation, no plotly import): one log-log panel per metric (TTFT, TPOT, ITL, throughput per chip), a marker per
point and series, the line predicted = measured and the ±20% lines beside it."""

from __future__ import annotations

import copy

from tokenomy.plots.style import LAYOUT

TITLES = {"ttft_s": "TTFT (s)", "tpot_s": "TPOT (s)", "itl_s": "ITL (s)",
          "throughput_per_chip": "output tokens/s per chip"}
BAND = 0.20  # the ±20% lines (metrics.WITHIN, the share the validation report counts)
GRID = ((0.0, 0.45), (0.55, 1.0))  # panel domains: two columns, two rows
COLOURS = {"predicted": "#1f77b4", "before": "#ff7f0e", "after": "#1f77b4"}  # one colour per series in every panel


def _domain(k: int) -> tuple[tuple[float, float], tuple[float, float]]:
    """(x domain, y domain) of panel k (0..3): left to right, top to bottom."""
    return GRID[k % 2], GRID[::-1][k // 2]


def _hover(r: dict) -> str:
    load = f"rate {r['rate']:g}/s" if r.get("rate") else f"concurrency {r.get('concurrency')}"
    return f"point {r['point']}: {load}, ISL {r['isl']}, OSL {r['osl']}, bound {r['bound']}"


def predicted_vs_measured(rows: list[dict], series: tuple[str, ...] = ("predicted",), title: str = "") -> dict:
    """A plotly figure dict: per metric a panel, x = measured, y = each of ``series`` (row fields), log axes."""
    metrics = [m for m in TITLES if any(r["metric"] == m for r in rows)]
    data, lay = [], copy.deepcopy(LAYOUT)
    for k, m in enumerate(metrics):
        ax = "" if k == 0 else str(k + 1)
        pts = [r for r in rows if r["metric"] == m and r["measured"] > 0]
        lo = min(min(r["measured"] for r in pts), *(r[s] for r in pts for s in series if r[s] == r[s])) / 1.3
        hi = max(max(r["measured"] for r in pts), *(r[s] for r in pts for s in series if r[s] == r[s])) * 1.3
        for s in series:
            data.append({"type": "scatter", "mode": "markers", "name": s, "legendgroup": s, "showlegend": k == 0,
                         "x": [r["measured"] for r in pts], "y": [r[s] for r in pts], "text": [_hover(r) for r in pts],
                         "hoverinfo": "text+x+y", "xaxis": f"x{ax}", "yaxis": f"y{ax}",
                         "marker": {"size": 8, "color": COLOURS.get(s, "#2ca02c")}})
        for f, dash in ((1.0, "solid"), (1 - BAND, "dot"), (1 + BAND, "dot")):
            data.append({"type": "scatter", "mode": "lines", "x": [lo, hi], "y": [lo * f, hi * f], "hoverinfo": "skip",
                         "showlegend": False, "xaxis": f"x{ax}", "yaxis": f"y{ax}",
                         "line": {"color": "#9ca3af", "width": 1, "dash": dash}})
        xd, yd = _domain(k)
        lay[f"xaxis{ax}"] = {"type": "log", "domain": list(xd), "anchor": f"y{ax}",
                             "title": {"text": f"measured {TITLES[m]}"}}
        lay[f"yaxis{ax}"] = {"type": "log", "domain": list(yd), "anchor": f"x{ax}",
                             "title": {"text": f"predicted {TITLES[m]}"}}
    lay.update(title={"text": title or "predicted vs measured", "font": {"size": 13}}, height=780,
               margin={"l": 60, "r": 20, "t": 70, "b": 50},
               annotations=[{"text": "lines: predicted = measured, ±20%", "showarrow": False, "xref": "paper",
                             "yref": "paper", "x": 1.0, "y": 1.06, "xanchor": "right", "font": {"size": 11}}])
    return {"data": data, "layout": lay}
