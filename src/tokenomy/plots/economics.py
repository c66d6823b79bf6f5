"""Figures of the Latency, Pricing and Speculative-decoding pages, from the answers' payloads
(``tokenomy latency|pricing|speculate --json``) as plain plotly figure dicts. No computation beyond unit scaling.

    latency payload["schedule"]   -> latency_schedule (worst-case latency and tokens/s per user vs batch)
    pricing payload["rows"]       -> pricing_vs_batch ($ per M input and output tokens vs decode batch)
    speculate payload["rows"]     -> speculate_vs_batch (speed-up and cost ratio vs batch)
"""

from __future__ import annotations

import math

from tokenomy.plots.serving import _layout, _line, _marks


def _ok(rows: list[dict], key: str) -> list[dict]:
    return [r for r in rows if r.get(key) is not None]


def latency_schedule(rows: list[dict], title: str = "Departure schedule: latency vs batch") -> dict:
    """Step (a departure every tick) and the worst-case wait (tick + step) in ms; tokens/s per user on the right."""
    ok = _ok(rows, "step_s")
    b = [r["batch"] for r in ok]
    data = [_line(b, [1e3 * r["step_s"] for r in ok], "step (one departure)", line={"width": 3}),
            _line(b, [1e3 * r["worst_case_latency_s"] for r in ok], "worst-case latency", line={"dash": "dash"}),
            _line(b, [r["tokens_per_s_per_user"] for r in ok], "tokens/s per user", yaxis="y2",
                  line={"dash": "dot"})]
    lay = _layout(title, "batch (sequences)", "ms")
    lay["yaxis2"] = {"title": {"text": "tokens/s per user"}, "type": "log", "overlaying": "y", "side": "right",
                     "showgrid": False}
    lay["legend"] = {"orientation": "h", "y": -0.2}
    return {"data": data, "layout": lay}


def pricing_vs_batch(rows: list[dict], title: str = "$ per M tokens: input (prefill) vs output (decode)") -> dict:
    """Output $/Mtok falls with the decode batch; input $/Mtok is one prefill pass (flat); their ratio on the
    right beside the providers' range when the payload gives it."""
    ok = _ok(rows, "usd_per_mtok_output")
    b = [r["decode_batch"] for r in ok]
    data = [_line(b, [r["usd_per_mtok_output"] for r in ok], "output $/Mtok", line={"width": 3}),
            _line(b, [r["usd_per_mtok_input"] for r in ok], "input $/Mtok", mode="lines", line={"dash": "dash"}),
            _line(b, [r["output_over_input"] for r in ok], "output / input", yaxis="y2", line={"dash": "dot"})]
    lay = _layout(title, "decode batch (sequences)", "$ per million tokens")
    lay["yaxis"]["tickprefix"] = "$"
    lay["yaxis2"] = {"title": {"text": "output / input"}, "type": "log", "overlaying": "y", "side": "right",
                     "showgrid": False}
    if ok and ok[0].get("provider_ratio_lo"):
        lo, hi = ok[0]["provider_ratio_lo"], ok[0]["provider_ratio_hi"]
        lay.setdefault("shapes", []).append({"type": "rect", "xref": "paper", "yref": "y2", "x0": 0, "x1": 1,
                                             "y0": lo, "y1": hi, "fillcolor": "#2ca02c", "opacity": 0.12,
                                             "line": {"width": 0}})
        # an annotation on a log axis is placed in log10 units (shapes in data units): y = hi would stretch the
        # axis to 10^hi and its ticks to '11.27039k'
        lay.setdefault("annotations", []).append({"xref": "paper", "yref": "y2", "x": 0.02, "y": math.log10(hi),
                                                  "text": f"providers' output/input {lo:g}-{hi:g}x",
                                                  "showarrow": False, "yanchor": "bottom", "xanchor": "left",
                                                  "font": {"size": 10, "color": "#2ca02c"}})
    lay["legend"] = {"orientation": "h", "y": -0.2}
    return {"data": data, "layout": lay}


def speculate_vs_batch(rows: list[dict], title: str = "Speculative decoding: speed-up and cost vs batch") -> dict:
    """Speed-up (tokens per second per user over plain decoding) and cost ratio ($ per token over plain), per
    batch; 1 marked: above it speculation pays in speed, below it in price."""
    ok = _ok(rows, "speedup")
    b = [r["batch"] for r in ok]
    data = [_line(b, [r["speedup"] for r in ok], "speed-up (per user)", line={"width": 3}),
            _line(b, [r["cost_ratio"] for r in ok], "cost ratio ($/token vs plain)", line={"dash": "dash"})]
    lay = _layout(title, "batch (sequences)", "ratio to plain decoding", ylog=False, **_marks(None))
    lay["shapes"] = [{"type": "line", "xref": "paper", "yref": "y", "x0": 0, "x1": 1, "y0": 1, "y1": 1,
                      "line": {"dash": "dot", "color": "#888"}}]
    lay["legend"] = {"orientation": "h", "y": -0.2}
    return {"data": data, "layout": lay}
