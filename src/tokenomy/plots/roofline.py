"""The log-log roofline of one pass: the chip's roof, the ops of the pass as points, and the pass itself.

x = arithmetic intensity (FLOP per byte of HBM traffic), y = FLOP/s. The roof is min(peak, I·BW); the
ridge I* = peak/BW separates memory-bound ops (left) from compute-bound ones (right). Built from
``core.op_costs.OpCost`` rows; the only arithmetic here is placing points on the roof.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from tokenomy.plots.style import LAYOUT
from tokenomy.units import fmt_bytes, fmt_si

ROOF = "roof"
RIDGE = "ridge"
OPS = "ops"
PASS = "this pass"
KIND_COLORS = {"matmul": "#1f77b4", "expert": "#9467bd", "attention": "#ff7f0e"}


def _roof(peak: float, bw: float, x: np.ndarray) -> np.ndarray:
    return np.minimum(peak, x * bw)


def roofline_figure(ops: Sequence, *, peak_flops_per_s: float, hbm_bytes_per_s: float, pass_flops: float,
                    pass_bytes: float, pass_step_s: float | None, chips: int = 1, title: str = "") -> go.Figure:
    """Per chip: roof, ridge, one point per op shape (on the roof: the model is a roofline), and the whole
    pass at its achieved FLOP/s per chip (flops / (step_s·chips), so overheads and comms pull it below the
    roof). Intensities do not change when work is split evenly over chips. Ops without FLOPs (the embedding
    gather) have no place on a log axis and are listed in the legend title instead."""
    shown = [o for o in ops if o.flops > 0 and o.bytes > 0]
    hidden = [o.name for o in ops if not (o.flops > 0 and o.bytes > 0)]
    ridge = peak_flops_per_s / hbm_bytes_per_s
    xs = [o.flops / o.bytes for o in shown] + [ridge, pass_flops / pass_bytes if pass_bytes else ridge]
    lo, hi = 10 ** np.floor(np.log10(min(xs) / 4)), 10 ** np.ceil(np.log10(max(xs) * 4))
    grid = np.geomspace(lo, hi, 64)
    traces = [go.Scatter(x=grid, y=_roof(peak_flops_per_s, hbm_bytes_per_s, grid), mode="lines", name=ROOF,
                         line=dict(color="#444"),
                         hovertemplate="I=%{x:.3g} FLOP/B<br>roof %{y:.3s}FLOP/s<extra></extra>"),
              go.Scatter(x=[ridge, ridge], y=[peak_flops_per_s / 1e3, peak_flops_per_s], mode="lines",
                         name=RIDGE, line=dict(dash="dot", color="#999"),
                         hovertemplate=f"ridge I* = peak/BW = {ridge:.3g} FLOP/B<extra></extra>")]
    intensity = np.array([o.flops / o.bytes for o in shown])
    time_s = np.maximum([o.flops / (chips * peak_flops_per_s) for o in shown],
                        [o.bytes / (chips * hbm_bytes_per_s) for o in shown])
    traces.append(go.Scatter(
        x=intensity, y=_roof(peak_flops_per_s, hbm_bytes_per_s, intensity), mode="markers", name=OPS,
        text=[o.name for o in shown], marker=dict(size=11, color=[KIND_COLORS.get(o.kind, "#1f77b4") for o in shown],
                                                  line=dict(width=1, color="#fff")),
        customdata=[[o.count, fmt_si(o.flops) + "FLOP", fmt_bytes(o.bytes), f"{t * 1e6:.3g} µs",
                     "compute" if i >= ridge else "memory"] for o, i, t in zip(shown, intensity, time_s)],
        hovertemplate=("%{text} ×%{customdata[0]}<br>I=%{x:.3g} FLOP/B<br>%{customdata[1]}, %{customdata[2]}"
                       "<br>%{customdata[3]} (%{customdata[4]}-bound)<extra></extra>")))
    if pass_step_s and pass_bytes:
        traces.append(go.Scatter(
            x=[pass_flops / pass_bytes], y=[pass_flops / (pass_step_s * chips)], mode="markers", name=PASS,
            marker=dict(size=16, symbol="star", color="#d62728"),
            hovertemplate="whole pass<br>I=%{x:.3g} FLOP/B<br>achieved %{y:.3s}FLOP/s<extra></extra>"))
    return go.Figure(data=traces, layout=dict(
        **LAYOUT, title=title,
        xaxis=dict(type="log", title="arithmetic intensity (FLOP / byte)"),
        yaxis=dict(type="log", title="FLOP/s per chip"),
        legend=dict(title=dict(text=f"not shown (no FLOPs): {', '.join(hidden)}" if hidden else ""))))
