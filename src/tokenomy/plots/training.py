"""Training and lifecycle figures as plain plotly figure dicts, from the rows ``tokenomy train --json`` and
``tokenomy lifecycle --json`` print. No computation beyond unit scaling.

    train rows      -> step_terms (compute + bubble + exposed comms = step, per global batch)
                    -> memory_stack (weights, gradients, optimizer, activations vs HBM, per global batch)
    lifecycle row   -> lifecycle_split (tokens and $ of pre-training, RL and inference)
"""

from __future__ import annotations

import copy

from tokenomy.plots.style import LAYOUT

STEP_TERMS = (("compute_s", "compute"), ("bubble_s", "pipeline bubble"), ("comm_exposed_s", "exposed communication"))
MEMORY_TERMS = (("weights_bytes", "weights"), ("gradients_bytes", "gradients"), ("optimizer_bytes", "optimizer"),
                ("activations_bytes", "activations"))
LIFECYCLE_TERMS = (("pretraining", "pre-training"), ("rl", "RL"), ("inference", "inference"))


def _layout(title: str, x: str, y: str, **extra) -> dict:
    lay = copy.deepcopy(LAYOUT)
    lay.update(title={"text": title}, xaxis={"title": {"text": x}, "type": "category"},
               yaxis={"title": {"text": y}}, barmode="stack")
    lay.update(extra)
    return lay


def _bar(x, y, name, **kw) -> dict:
    return {"type": "bar", "x": list(x), "y": list(y), "name": name, **kw}


def step_terms(rows: list[dict], title: str = "Training step: where the time goes") -> dict:
    """Stacked seconds per step for each global batch; the stack is the step time (modelled)."""
    x = [str(r["global_batch"]) for r in rows]
    data = [_bar(x, [r[k] for r in rows], name) for k, name in STEP_TERMS]
    data.append({"type": "scatter", "mode": "markers", "name": "step", "x": x, "y": [r["step_s"] for r in rows],
                 "marker": {"symbol": "line-ew-open", "size": 30, "color": "#000"}})
    return {"data": data, "layout": _layout(title, "global batch (sequences)", "seconds per step")}


def memory_stack(rows: list[dict], title: str = "Memory per chip") -> dict:
    """Stacked bytes per chip (GB) for each global batch against the chip's HBM."""
    x = [str(r["global_batch"]) for r in rows]
    data = [_bar(x, [r[k] / 1e9 for r in rows], name) for k, name in MEMORY_TERMS]
    data.append({"type": "scatter", "mode": "lines+markers", "name": "HBM", "x": x,
                 "y": [r["hbm_bytes"] / 1e9 for r in rows], "line": {"dash": "dash", "color": "#d62728"}})
    return {"data": data, "layout": _layout(title, "global batch (sequences)", "GB per chip")}


def lifecycle_split(row: dict, title: str = "Lifecycle: pre-training vs RL vs inference") -> dict:
    """Tokens of each phase (both directions of ``tokenomy lifecycle``) and, when priced, dollars with each
    phase's share of the total as the bar text."""
    names = [name for _, name in LIFECYCLE_TERMS]
    data = [_bar(names, [row["d_pre"], row["d_rl"], row["d_inf"]], "tokens", yaxis="y2", offsetgroup="tokens",
                 opacity=0.45)]
    if "total_usd" in row:
        share = [f"{100 * row[f'{k}_fraction']:.1f}%" for k, _ in LIFECYCLE_TERMS]
        data.insert(0, _bar(names, [row[f"{k}_usd"] / 1e6 for k, _ in LIFECYCLE_TERMS], "$ (millions)", text=share,
                            textposition="auto", offsetgroup="usd"))
    lay = _layout(title, "phase", "$ millions" if "total_usd" in row else "", barmode="group")
    lay["yaxis"]["tickprefix"] = "$"
    lay["legend"] = {"orientation": "h", "y": -0.2}
    lay["yaxis2"] = {"title": {"text": "tokens"}, "type": "linear", "overlaying": "y", "side": "right",
                     "showgrid": False, "rangemode": "tozero", "exponentformat": "SI"}
    return {"data": data, "layout": lay}
