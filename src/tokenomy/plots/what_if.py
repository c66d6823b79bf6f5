"""The what-if sweep (answers.what_if rows in; no computation): TPOT, tokens/s per chip and $/Mtok against the
multiplier of the swept field, log x, one panel per quantity, the FLOP/s-to-bandwidth ratio R in the hover."""

from __future__ import annotations

import copy

from tokenomy.plots.style import LAYOUT

PANELS = (("tpot_s", "TPOT (s)"), ("tokens_per_s_per_chip", "tokens/s per chip"),
          ("usd_per_mtok_output", "$ per million output tokens"))


def what_if_figure(rows: list[dict], title: str) -> dict:
    """Three stacked panels sharing the multiplier axis (log); each point's hover: value, R, bound."""
    field = rows[0]["field"] if rows else "field"
    x = [r["factor"] for r in rows]
    hover = [f"{field} {r['value']:.4g}<br>R = {r['flops_per_hbm_byte']:.0f} FLOP/B<br>bound {r['bound']}"
             for r in rows]
    data = []
    for i, (key, name) in enumerate(PANELS, start=1):
        data.append({"type": "scatter", "mode": "lines+markers", "name": name, "x": x, "y": [r[key] for r in rows],
                     "text": hover, "hoverinfo": "text+y", "xaxis": "x", "yaxis": f"y{i if i > 1 else ''}"})
    lay = copy.deepcopy(LAYOUT)
    n = len(PANELS)
    lay.update(title={"text": title}, height=220 * n + 80, showlegend=False,
               xaxis={"title": {"text": f"{field} (x the catalog's)"}, "type": "log", "anchor": f"y{n}"})
    for i, (_, name) in enumerate(PANELS, start=1):
        top = 1 - (i - 1) / n
        lay[f"yaxis{i if i > 1 else ''}"] = {"title": {"text": name}, "domain": [top - 1 / n + 0.06, top]}
    return {"data": data, "layout": lay}
