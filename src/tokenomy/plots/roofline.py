"""The log-log roofline of one pass: the chip's roof, the ops of the pass as points, and the pass itself.

x = arithmetic intensity (FLOP per byte of HBM traffic), y = FLOP/s per chip. The roof is min(peak, I·BW);
the ridge I* = peak/BW separates memory-bound ops (left) from compute-bound ones (right). Built from
``core.op_costs.OpCost`` rows as a plain plotly figure dict (like plots/serving.py); the only arithmetic here
is placing points on the roof.
"""

from __future__ import annotations

import copy
import math
from typing import Sequence

from tokenomy.plots.serving import wrap_title
from tokenomy.plots.style import LAYOUT
from tokenomy.units import fmt_bytes, fmt_si

ROOF, RIDGE, OPS, PASS = "roof", "ridge", "ops", "this pass"
KIND_COLORS = {"matmul": "#1f77b4", "expert": "#9467bd", "attention": "#ff7f0e"}


def _roof(peak: float, bw: float, x: float) -> float:
    return min(peak, x * bw)


def roofline_figure(ops: Sequence, *, peak_flops_per_s: float, hbm_bytes_per_s: float, pass_flops: float,
                    pass_bytes: float, pass_step_s: float | None, chips: int = 1, title: str = "") -> dict:
    """Per chip: roof, ridge, one point per op shape (on the roof: the model is a roofline), and the whole
    pass at its achieved FLOP/s per chip (flops / (step_s·chips), so overheads and comms pull it below the
    roof). Intensities do not change when work is split evenly over chips. Ops without FLOPs (the embedding
    gather) have no place on a log axis and are named under the title instead."""
    shown = [o for o in ops if o.flops > 0 and o.bytes > 0]
    hidden = [o.name for o in ops if not (o.flops > 0 and o.bytes > 0)]
    peak, bw = peak_flops_per_s, hbm_bytes_per_s
    ridge = peak / bw
    intensity = [o.flops / o.bytes for o in shown]
    xs = intensity + [ridge] + ([pass_flops / pass_bytes] if pass_bytes else [])
    lo, hi = math.floor(math.log10(min(xs) / 4)), math.ceil(math.log10(max(xs) * 4))
    grid = [10 ** (lo + (hi - lo) * i / 63) for i in range(64)]
    time_s = [max(o.flops / (chips * peak), o.bytes / (chips * bw)) for o in shown]
    data = [
        {"type": "scatter", "mode": "lines", "name": ROOF, "x": grid, "y": [_roof(peak, bw, x) for x in grid],
         "line": {"color": "#444"}, "hoverinfo": "skip"},  # the ops sit on the roof: hover and clicks are theirs
        {"type": "scatter", "mode": "lines", "name": RIDGE, "x": [ridge, ridge], "y": [peak / 1e3, peak],
         "line": {"dash": "dot", "color": "#999"},
         "hovertemplate": f"ridge I* = peak/BW = {ridge:.3g} FLOP/B<extra></extra>"},
        {"type": "scatter", "mode": "markers+text", "name": OPS, "x": intensity,
         "y": [_roof(peak, bw, i) for i in intensity], "text": [o.name for o in shown],
         "textposition": ["bottom center" if k % 2 else "top center" for k in range(len(shown))],
         "textfont": {"size": 9, "color": "#555"},
         "marker": {"size": 11, "color": [KIND_COLORS.get(o.kind, "#1f77b4") for o in shown],
                    "line": {"width": 1, "color": "#fff"}},
         "customdata": [[o.count, fmt_si(o.flops) + "FLOP", fmt_bytes(o.bytes), f"{t * 1e6:.3g} µs",
                         "compute" if i >= ridge else "memory"] for o, i, t in zip(shown, intensity, time_s)],
         "hovertemplate": ("%{text} ×%{customdata[0]}<br>I=%{x:.3g} FLOP/B<br>%{customdata[1]}, %{customdata[2]}"
                           "<br>%{customdata[3]} (%{customdata[4]}-bound)<extra></extra>")},
    ]
    if pass_step_s and pass_bytes:
        data.append({"type": "scatter", "mode": "markers", "name": PASS, "x": [pass_flops / pass_bytes],
                     "y": [pass_flops / (pass_step_s * chips)], "marker": {"size": 16, "symbol": "star",
                                                                           "color": "#d62728"},
                     "hovertemplate": "whole pass<br>I=%{x:.3g} FLOP/B<br>achieved %{y:.3s}FLOP/s<extra></extra>"})
    layout = copy.deepcopy(LAYOUT)
    note = f"<br><sub>not shown (no FLOPs): {', '.join(hidden)}</sub>" if hidden else ""
    layout.update(title={"text": wrap_title(title) + note}, xaxis={"type": "log", "title": {"text": "arithmetic intensity (FLOP / byte)"}},
                  yaxis={"type": "log", "title": {"text": "FLOP/s per chip"}}, margin={"l": 60, "r": 20, "t": 70, "b": 50})
    return {"data": data, "layout": layout}
