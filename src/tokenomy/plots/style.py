"""One light figure template for every builder. A small dict, not the named "plotly_white": plotly deep-copies
and validates a named template on each figure (~20 ms), which dominated a page's render time."""

from __future__ import annotations

_AXIS = {"gridcolor": "#e5e7eb", "zerolinecolor": "#e5e7eb", "linecolor": "#9ca3af", "ticks": "outside",
         "automargin": True}
TEMPLATE = {"layout": {
    "paper_bgcolor": "white", "plot_bgcolor": "white", "font": {"family": "system-ui, sans-serif", "size": 12},
    "colorway": ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"],
    "xaxis": _AXIS, "yaxis": _AXIS, "hovermode": "closest",
    "legend": {"bgcolor": "rgba(255,255,255,0.8)"},
}}
LAYOUT = {"template": TEMPLATE, "margin": {"l": 60, "r": 20, "t": 50, "b": 50}, "height": 420}
