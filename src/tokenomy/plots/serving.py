"""Serving-economics figures as plain plotly figure dicts ({"data", "layout"}), built from the rows the econ
functions and CLI return. No computation beyond unit scaling; no plotly import (plotly.js and
``plotly.io.to_json(fig)`` both take these dicts), so the CLI never loads plotly.

    pass rows (answers.passes: decode|prefill)   -> latency_vs_batch, cost_vs_batch, pareto, mfu_vs_context
    schedule rows (econ.latency.schedule_rows)    -> pareto
    context rows (econ.context.context_rows)      -> mfu_vs_context
    cost curves (econ.kv_tiers.cost_curves)       -> tier_costs_vs_hold
"""

from __future__ import annotations

import copy
import math

from tokenomy.plots.style import LAYOUT

LOG = {"type": "log"}


TITLE_CHARS = 52  # a half-page plot's title line (~480 px at 17 px); longer lines wrap, never run off the box


def wrap_title(title: str, width: int = TITLE_CHARS) -> str:
    """Break the first line of a plot title at spaces so each line fits ``width`` characters (plotly does not
    wrap titles: a long one is cut off at the plot's edges)."""
    head, sep, rest = title.partition("<br>")
    lines, line = [], ""
    for word in head.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return "<br>".join(lines) + sep + rest


def unit_range(values, floor: float = 1e-3) -> list[float]:
    """A 0.. axis range for a fraction (MFU): to 1 when values reach a third of it, else to 1.15 x the largest,
    so a curve at 2% is not flat along the bottom of a 0..1 axis."""
    top = max([v for v in values if v is not None] or [1.0])
    return [0, 1.05] if top > 0.33 else [0, max(1.15 * top, floor)]


def percent_ticks(axis_range: list[float]) -> dict:
    """Ticks for a 0..top share axis: ~5 at a 1-2-5 step (dtick, so plotly never crowds them) with the decimals
    that step needs (top 2%: every 0.5%, '.1~%'; top 100%: every 20%, '.0~%'); '~' drops trailing zeros."""
    raw = max(axis_range[1] - axis_range[0], 1e-12) / 5
    exp = math.floor(math.log10(raw))
    step = min((m * 10.0 ** exp for m in (1, 2, 5, 10)), key=lambda x: abs(x - raw))
    return {"tickmode": "linear", "tick0": 0, "dtick": step,
            "tickformat": f".{max(0, -math.floor(math.log10(100 * step)))}~%"}


def _layout(title: str, x: str, y: str, *, xlog=True, ylog=True, **extra) -> dict:
    lay = copy.deepcopy(LAYOUT)
    title = wrap_title(title)
    lay.update(title={"text": title}, xaxis={"title": {"text": x}, **(LOG if xlog else {})},
               yaxis={"title": {"text": y}, **(LOG if ylog else {})}, **extra)
    if "<br>" in title:  # room for the subtitle (and wrapped) lines
        lay["margin"] = {**lay["margin"], "t": 50 + 22 * title.count("<br>")}
    return lay


def _line(x, y, name, **kw) -> dict:
    return {"type": "scatter", "mode": "lines+markers", "x": list(x), "y": list(y), "name": name, **kw}


def band(x, lo, hi, name, **kw) -> list[dict]:
    """The error band of a line (its rows' p10 and p90, answers/error_bars.py) as a shaded area: the lower edge
    drawn invisibly, the upper filled down to it; [] where no point has a band."""
    pts = [(a, b, c) for a, b, c in zip(x, lo, hi) if b is not None and c is not None]
    if not pts:
        return []
    xs, los, his = (list(v) for v in zip(*pts))
    edge = {"type": "scatter", "mode": "lines", "x": xs, "line": {"width": 0}, "hoverinfo": "skip", **kw}
    return [{**edge, "y": los, "name": f"{name} p10", "showlegend": False},
            {**edge, "y": his, "name": f"{name} band (p10-p90 measured)", "fill": "tonexty",
             "fillcolor": "rgba(31, 119, 180, 0.18)"}]


def _vline(x, text, color="#888") -> tuple[dict, dict]:
    """A dotted vertical line on a log x axis (shapes take data units there, annotations log10 units)."""
    shape = {"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0, "y1": 1,
             "line": {"dash": "dot", "color": color}}
    note = {"x": math.log10(x), "xref": "x", "y": 0.98, "yref": "paper", "text": text, "showarrow": False, "yanchor": "top",
            "xanchor": "right", "textangle": -90, "font": {"size": 10, "color": color}}
    return shape, note


def _marks(marks: dict | None) -> dict:
    """Vertical dotted lines at named x positions on a log x axis (e.g. {"balance B*": 5725}); None skipped."""
    pairs = [_vline(x, name) for name, x in (marks or {}).items() if x]
    return {"shapes": [p[0] for p in pairs], "annotations": [p[1] for p in pairs]}


LATENCY_TERMS = (("compute_s", "compute", "dash"), ("weights_read_s", "weight fetch", "dash"),
                 ("kv_s", "KV fetch", "dash"), ("act_s", "activation traffic", "dot"),
                 ("comms_s", "communication", "dashdot"), ("overhead_s", "overhead", "dot"))


def latency_vs_batch(rows: list[dict], title: str = "Step time vs batch", marks: dict | None = None) -> dict:
    """The lecture's latency graph from pass rows (answers.passes): compute rises linearly, weight fetch is flat,
    KV fetch rises; the step (the answer, calibrated) and its roofline bound drawn over the terms. Terms that
    are zero at every batch (no communication on one chip) are left out; points that do not fit too."""
    ok = [r for r in rows if r.get("step_s") is not None]
    b = [r["batch"] for r in ok]
    ms = lambda key: [1e3 * r[key] for r in ok]  # noqa: E731
    data = [_line(b, ms("step_s"), "step", line={"width": 3})]
    if all(r.get("roofline_step_s") is not None for r in ok):
        data.append(_line(b, ms("roofline_step_s"), "roofline bound", mode="lines", line={"color": "#444", "width": 1}))
    data += [_line(b, ms(key), name, line={"dash": dash}) for key, name, dash in LATENCY_TERMS
             if any(r.get(key) for r in ok)]
    data += band(b, [r.get("step_s_p10") and 1e3 * r["step_s_p10"] for r in ok],
                 [r.get("step_s_p90") and 1e3 * r["step_s_p90"] for r in ok], "step")
    return {"data": data, "layout": _layout(title, "batch (sequences)", "ms per step", **_marks(marks))}


def cost_vs_batch(rows: list[dict], title: str = "Cost per token vs batch", marks: dict | None = None) -> dict:
    """The lecture's cost graph: $ per M tokens at each batch, falling until memory binds (points that do not
    fit are left out)."""
    ok = [r for r in rows if r.get("usd_per_mtok") is not None]
    data = [_line([r["batch"] for r in ok], [r["usd_per_mtok"] for r in ok], "$ / M output tokens",
                  line={"width": 3}),
            _line([r["batch"] for r in ok], [r["mfu"] for r in ok], "MFU", yaxis="y2", line={"dash": "dot"})]
    lay = _layout(title, "batch (sequences)", "$ per million tokens", **_marks(marks))
    lay["yaxis2"] = {"title": {"text": "MFU"}, "type": "linear", "overlaying": "y", "side": "right",
                     "range": unit_range([r["mfu"] for r in ok]), "showgrid": False}
    lay["yaxis2"].update(percent_ticks(lay["yaxis2"]["range"]))
    lay["yaxis"]["tickprefix"] = "$"
    return {"data": data, "layout": lay}


def pareto(rows: list[dict], title: str = "Tokens/s per user vs per chip", group: str | None = None,
           point: str = "batch") -> dict:
    """One point per batch (labelled; ``point``: the key that labels it, e.g. a serving plan's concurrency), with
    the Pareto-optimal ones joined; ``group`` (e.g. "plan"): one marker trace per value of that key, so points are
    coloured by layout."""
    ok = [r for r in rows if r.get("tokens_per_s_per_user") is not None]
    front = sorted((r for r in ok if r.get("pareto", True)), key=lambda r: r["tokens_per_s_per_user"])
    groups = list(dict.fromkeys(r[group] for r in ok)) if group else [point]
    data = [{"type": "scatter", "mode": "markers+text", "name": str(g),
             "x": [r["tokens_per_s_per_user"] for r in ok if not group or r[group] == g],
             "y": [r["tokens_per_s_per_chip"] for r in ok if not group or r[group] == g],
             "text": [f"{r[point]:g}" for r in ok if not group or r[group] == g], "textposition": "top right",
             "marker": {"size": 9},
             "hovertemplate": point + " %{text}<br>%{x:.4g} tok/s/user<br>%{y:.4g} tok/s/chip"}
            for g in groups]
    data.append(_line([r["tokens_per_s_per_user"] for r in front], [r["tokens_per_s_per_chip"] for r in front],
                      "Pareto front", mode="lines", line={"color": "#888"}))
    lay = _layout(title, "tokens/s per user", "tokens/s per chip")
    if group and len(groups) > 4:
        lay["legend"] = {"orientation": "h", "y": -0.25, "font": {"size": 10}}
        lay["height"] = 480
    return {"data": data, "layout": lay}


def mfu_vs_context(rows: list[dict], title: str = "MFU vs context", summary: dict | None = None) -> dict:
    """MFU over context at one batch; the Goldilocks zone shaded and the crossovers marked when ``summary``
    (econ.context.ContextSummary.as_dict()) is given."""
    ok = [r for r in rows if r.get("mfu") is not None]
    data = [_line([r["context"] for r in ok], [r["mfu"] for r in ok], "MFU", line={"width": 3})]
    s = summary or {}
    extra = _marks({"crossover (this batch)": s.get("crossover_at_batch"),
                    "crossover (large batch)": s.get("crossover_large_batch")})
    ctx = [r["context"] for r in rows]
    if s.get("goldilocks_lo") and s.get("goldilocks_hi") and ctx:
        extra["shapes"].append({"type": "rect", "xref": "x", "yref": "paper", "x0": max(s["goldilocks_lo"], min(ctx)),
                                "x1": min(s["goldilocks_hi"], max(ctx)), "y0": 0, "y1": 1, "fillcolor": "#2ca02c", "opacity": 0.1,
                                "line": {"width": 0}})
    lay = _layout(title, "context (tokens)", "MFU", ylog=False, **extra)
    lay["yaxis"]["range"] = unit_range([r["mfu"] for r in ok])
    lay["yaxis"].update(percent_ticks(lay["yaxis"]["range"]))
    return {"data": data, "layout": lay}


def tier_costs_vs_hold(curves: dict, title: str = "Holding a cached prefix: cost vs hold time") -> dict:
    """One line per tier (hold + retrieve), the flat rematerialisation cost, and the lecture's 5-min/1-h marks.
    ``curves``: {"hold_s": [...], "tiers": {name: [usd, ...]}, "remat_usd": float} (econ.kv_tiers.cost_curves)."""
    h = curves["hold_s"]
    data = [_line(h, ys, name, mode="lines") for name, ys in curves["tiers"].items()]
    data.append(_line(h, [curves["remat_usd"]] * len(h), "rematerialise (prefill)", mode="lines",
                      line={"dash": "dash", "color": "#000"}))
    return {"data": data, "layout": _layout(title, "hold time (s)", "$ per prefix",
                                            **_marks({"5 min": 300, "1 h": 3600}))}
