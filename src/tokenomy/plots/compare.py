"""Compare figures: two or three configurations on the same axes, one trace per configuration, named by it.

Each series is ``(name, rows)``: a configuration's label and its pass rows (answers.passes decode|prefill over a
batch sweep). No computation beyond unit scaling (seconds -> ms); points that do not fit (no step time) are
left out of a trace, never the trace itself, so the trace count is the configuration count.

    series -> step_vs_batch (ms per step), pareto_curves (tokens/s per chip vs per user), cost_vs_batch ($/Mtok)
"""

from __future__ import annotations

from tokenomy.plots.serving import _layout, _line, _marks

Series = list[tuple[str, list[dict]]]


def _legend_below(lay: dict) -> dict:
    """Configuration labels are long: the legend goes under the plot, one entry a line."""
    lay["legend"] = {"orientation": "h", "y": -0.22, "yanchor": "top", "x": 0, "font": {"size": 11}}
    lay["height"] = 500
    lay["margin"] = {**lay["margin"], "b": 120}
    return lay


def _fitting(rows: list[dict], key: str) -> list[dict]:
    return [r for r in rows if r.get(key) is not None]


def step_vs_batch(series: Series, title: str, batch: int | None = None) -> dict:
    """Step time (ms, the answer's calibrated or roofline ``step_s``) vs batch, one line per configuration."""
    data = [_line([r["batch"] for r in ok], [1e3 * r["step_s"] for r in ok], name)
            for name, rows in series for ok in [_fitting(rows, "step_s")]]
    lay = _layout(title, "batch (sequences)", "ms per step", **_marks({"this batch": batch}))
    return {"data": data, "layout": _legend_below(lay)}


def pareto_curves(series: Series, title: str) -> dict:
    """Tokens/s per chip vs tokens/s per user, one curve per configuration over the batch sweep (each point's
    batch as its text): up and right is better; where one curve lies above another, it wins at that speed."""
    data = []
    for name, rows in series:
        ok = sorted(_fitting(rows, "tokens_per_s_per_user"), key=lambda r: r["batch"])
        data.append(_line([r["tokens_per_s_per_user"] for r in ok], [r["tokens_per_s_per_chip"] for r in ok], name,
                          text=[str(r["batch"]) for r in ok],
                          hovertemplate="batch %{text}<br>%{x:.4g} tok/s/user<br>%{y:.4g} tok/s/chip"))
    return {"data": data, "layout": _legend_below(_layout(title, "tokens/s per user", "tokens/s per chip"))}


def cost_vs_batch(series: Series, title: str, batch: int | None = None) -> dict:
    """$ per million tokens vs batch, one line per configuration (the price each configuration's chips carry)."""
    data = [_line([r["batch"] for r in ok], [r["usd_per_mtok"] for r in ok], name)
            for name, rows in series for ok in [_fitting(rows, "usd_per_mtok")]]
    lay = _layout(title, "batch (sequences)", "$ per million tokens", **_marks({"this batch": batch}))
    lay["yaxis"]["tickprefix"] = "$"
    return {"data": data, "layout": _legend_below(lay)}
