"""Figures of the Workload page, from ``tokenomy serve --json`` rows (answers.workloads: one row per concurrency or
rate point) as plain plotly figure dicts. No computation beyond unit scaling.

    rows -> throughput_curve (tokens/s per chip vs tokens/s per user: the latency-throughput curve)
         -> ttft_tpot_vs_load (TTFT and TPOT, mean and p99, vs concurrency or rate)
         -> cost_vs_load ($ per M input and output tokens vs load)
         -> energy_curve (tokens/s per all-in MW vs interactivity, InferenceX's power-efficiency view)
"""

from __future__ import annotations

import math

from tokenomy.plots.serving import _layout, _line, band


def load_key(rows: list[dict]) -> str:
    """``concurrency`` for a closed loop, ``rate`` for an open one."""
    return "concurrency" if rows and rows[0].get("concurrency") is not None else "rate"


def _label(key: str) -> str:
    return "concurrency (users)" if key == "concurrency" else "request rate (requests/s)"


def throughput_curve(rows: list[dict], title: str = "Tokens/s per chip vs per user") -> dict:
    """One point per load (labelled with it); capacity-limited points drawn as open circles."""
    key = load_key(rows)
    ok = [r for r in rows if r.get("tokens_per_s_per_user") is not None]
    data = [_line([r["tokens_per_s_per_user"] for r in ok], [r["tokens_per_s_per_chip"] for r in ok],
                  key, mode="lines+markers+text", text=[f"{r[key]:g}" for r in ok], textposition="top right",
                  marker={"size": 9, "symbol": ["circle-open" if r.get("capacity_limited") else "circle"
                                                for r in ok]})]
    return {"data": data, "layout": _layout(title, "tokens/s per user", "tokens/s per chip")}


def ttft_tpot_vs_load(rows: list[dict], title: str = "TTFT and TPOT vs load", slos: dict | None = None,
                      percentiles: bool = True) -> dict:
    """Mean TTFT (left, s) and TPOT (right, ms) over the load, and their p99 when ``percentiles`` (a simulation's:
    the analytic steady state has means only); the SLOs as labelled dotted lines when given."""
    key = load_key(rows)
    ok = [r for r in rows if r.get("ttft_s") is not None]
    x = [r[key] for r in ok]
    scaled = lambda key, k: [r.get(key) and k * r[key] for r in ok]  # noqa: E731
    shades = (band(x, scaled("ttft_s_p10", 1.0), scaled("ttft_s_p90", 1.0), "TTFT")
              + band(x, scaled("tpot_s_p10", 1e3), scaled("tpot_s_p90", 1e3), "TPOT", yaxis="y2"))
    data = [_line(x, [r["ttft_s"] for r in ok], "TTFT (mean)", line={"width": 3}),
            _line(x, [1e3 * r["tpot_s"] for r in ok], "TPOT (mean)", yaxis="y2", line={"width": 3})] + shades
    if percentiles:
        data += [_line(x, [r.get("ttft_p99_s") for r in ok], "TTFT p99", line={"dash": "dash", "color": "#1f77b4"}),
                 _line(x, [1e3 * r["tpot_p99_s"] if r.get("tpot_p99_s") is not None else None for r in ok],
                       "TPOT p99", yaxis="y2", line={"dash": "dash", "color": "#ff7f0e"})]
    lay = _layout(title, _label(key), "TTFT (s)")
    lay["yaxis2"] = {"title": {"text": "TPOT (ms)"}, "type": "log", "overlaying": "y", "side": "right",
                     "showgrid": False}
    shapes, notes = [], []
    for name, axis, scale, text in (("ttft_slo", "y", 1.0, "TTFT SLO {:g} s"), ("tpot_slo", "y2", 1e3, "TPOT SLO {:g} ms")):
        if (slos or {}).get(name):
            y = scale * slos[name]
            shapes.append({"type": "line", "xref": "paper", "yref": axis, "x0": 0, "x1": 1, "y0": y, "y1": y,
                           "line": {"dash": "dot", "color": "#d62728"}})
            # an annotation on a log axis is placed in log10 units (shapes in data units)
            notes.append({"xref": "paper", "yref": axis, "x": 0.01 if axis == "y" else 0.99, "y": math.log10(y),
                          "text": text.format(y), "showarrow": False, "yanchor": "bottom",
                          "xanchor": "left" if axis == "y" else "right", "font": {"size": 10, "color": "#d62728"}})
    lay["shapes"], lay["annotations"] = shapes, notes
    lay["yaxis"]["nticks"] = lay["yaxis2"]["nticks"] = 6  # two log axes side by side: fewer, readable ticks
    lay["legend"] = {"orientation": "h", "y": -0.2}
    return {"data": data, "layout": lay}


def cost_vs_load(rows: list[dict], title: str = "$ per M tokens vs load") -> dict:
    key = load_key(rows)
    ok = [r for r in rows if r.get("usd_per_mtok_output") is not None]
    x = [r[key] for r in ok]
    data = [_line(x, [r["usd_per_mtok_output"] for r in ok], "output", line={"width": 3}),
            _line(x, [r["usd_per_mtok_input"] for r in ok], "input", line={"dash": "dash"})]
    lay = _layout(title, _label(key), "$ per million tokens")
    lay["yaxis"]["tickprefix"] = "$"
    return {"data": data, "layout": lay}


def energy_curve(rows: list[dict], title: str = "Tokens/s per all-in MW vs interactivity") -> dict:
    """Total and output tokens/s per MW of all-in power (PUE x (boards + hosts + network), answers/energy_cols.py)
    against tokens/s per user (1/TPOT), one point per load, labelled with it."""
    key = load_key(rows)
    ok = [r for r in rows if r.get("tokens_per_s_per_mw") is not None and r.get("tokens_per_s_per_user") is not None]
    x = [r["tokens_per_s_per_user"] for r in ok]
    data = [_line(x, [r["tokens_per_s_per_mw"] for r in ok], "total tokens", mode="lines+markers+text",
                  text=[f"{r[key]:g}" for r in ok], textposition="top right", line={"width": 3}),
            _line(x, [r.get("output_tokens_per_s_per_mw") for r in ok], "output tokens", line={"dash": "dash"})]
    return {"data": data, "layout": _layout(title, "interactivity (tokens/s per user)", "tokens/s per all-in MW")}
