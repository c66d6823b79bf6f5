"""what_if: one hardware field swept over multipliers, answered by serve at one workload on a fixed layout.

    tk.what_if("llama-3.1-70b", "hgx-h100-8", field="hbm_bytes_per_s", factors="x0.5..x4", concurrency=64)
Each factor is ``Hardware.with_(field="x<f>")`` (answers/variants.py) and the row is ``serve``'s at that workload
(answers/workloads.py: the steady-state serving model, the one engine per step) — no second formula. The layout is
the one serve chooses on the unmodified hardware, held for every factor, so a row differs from the next only by the
field. Each row also carries the chip's FLOP/s-to-bandwidth ratio R = peak at the compute dtype / HBM bytes/s (the
lecture's "~300", §2.2: B_crit = FLOP/s ÷ HBM byte/s) and the batch that balances weights against compute,
B* = R · N_total / N_active (weights read once per step; KV ignored, as the lecture does).
``factors``: 'x0.5..x4' (log-spaced, POINTS_PER_OCTAVE per factor of 2, x1 included when inside), or a list
'x0.5,x1,x2'.
"""

from __future__ import annotations

import math

import numpy as np

from tokenomy.answers.resolve import hardware_of, model_of
from tokenomy.answers.result import Result
from tokenomy.answers.variants import annotate, hardware_with
from tokenomy.arch.params import count_params
from tokenomy.specs import OVERRIDABLE

POINTS_PER_OCTAVE = 2
MAX_FACTORS = 33
COLUMNS = ("factor", "value", "flops_per_hbm_byte", "balance_batch", "tpot_s", "ttft_s", "tokens_per_s_per_chip",
           "usd_per_mtok_output", "bound", "running_batch")
KEPT = ("tpot_s", "ttft_s", "e2e_s", "tokens_per_s_per_chip", "tokens_per_s_per_user", "usd_per_mtok_input",
        "usd_per_mtok_output", "bound", "running_batch", "kv_occupancy", "capacity_limited", "requests_per_s", "plan")


def _factor(text: str) -> float:
    t = text.strip()
    try:
        f = float(t[1:]) if t.lower().startswith("x") else math.nan
    except ValueError:
        f = math.nan
    if not (f > 0 and math.isfinite(f)):
        raise ValueError(f"factors: {text.strip()!r} is not a multiplier such as x0.5 or x4")
    return f


def factors_of(text) -> list[float]:
    """'x0.5..x4' -> log-spaced multipliers from 0.5 to 4 (POINTS_PER_OCTAVE per octave, 1 kept); 'x1,x2' -> [1, 2];
    a list of numbers passes through."""
    if not isinstance(text, str):
        out = [float(x) for x in np.atleast_1d(text)]
        if not out or not all(x > 0 and math.isfinite(x) for x in out):
            raise ValueError(f"factors: must be multipliers > 0, got {text!r}")
    elif ".." in text:
        lo, _, hi = text.partition("..")
        a, b = _factor(lo), _factor(hi)
        if not a < b:
            raise ValueError(f"factors: range {text!r} must rise (e.g. x0.5..x4)")
        n = max(2, round(POINTS_PER_OCTAVE * math.log2(b / a)) + 1)
        out = sorted(set(np.round(np.geomspace(a, b, n), 6).tolist()) | ({1.0} if a <= 1.0 <= b else set()))
    else:
        out = [_factor(p) for p in text.split(",") if p.strip()]
    if not out or len(out) > MAX_FACTORS:
        raise ValueError(f"factors: give 1 to {MAX_FACTORS} multipliers, got {len(out)}")
    return sorted(out)


def _layout_keywords(plan: dict) -> dict:
    return {k: plan[k] for k in ("tp", "ep", "pp", "dp", "redundant_experts", "kv_batch")} | {
        "attn_dp": plan["attn_dp"] if plan["ep"] > 1 else None}


LAYOUT_KEYS = ("tp", "ep", "pp", "dp", "redundant_experts", "attn_dp", "kv_batch", "chips")


def what_if(model, hardware, *, field="hbm_bytes_per_s", factors="x0.5..x4", concurrency=64, **serve_options) -> Result:
    """One row per multiplier of ``field`` (module docstring): serve's TPOT, TTFT, tokens/s per chip and $/Mtok at
    ``concurrency`` users, on the layout serve picks for the unmodified hardware. ``serve_options``: serve's own
    keywords (isl, osl, engine, weight_dtype, kv_dtype, efficiency; chips and layout degrees choose the layout)."""
    from tokenomy.answers.workloads import serve

    if field not in OVERRIDABLE:
        raise ValueError(f"field: {field!r} is not a hardware field; allowed: {', '.join(OVERRIDABLE)}")
    if serve_options.get("mode", "agg") != "agg":
        raise ValueError("mode: the what-if sweep serves aggregated (agg); ask serve for disaggregated pools")
    m, base = model_of(model), hardware_of(hardware)
    fs = factors_of(factors)
    ref = serve(m, base, concurrency=[concurrency], **serve_options)
    plan = ref.extra["plan"]
    held = {k: v for k, v in serve_options.items() if k not in LAYOUT_KEYS} | _layout_keywords(plan)
    p, weights = count_params(m), serve_options.get("weight_dtype") or m.quantization.dense
    rows = []
    for f in fs:
        hw = hardware_with(base, {field: f"x{f!r}"}, door=f"what-if sweep of {field}")
        served = serve(m, hw, concurrency=[concurrency], **held).rows()[0]
        peak = _compute_peak(hw, weights)
        ratio = peak / hw.chip.hbm_bytes_per_s
        rows.append({"factor": f, "field": field, "value": peak if field == "peak_flops_per_s" else hw.value(field),
                     "flops_per_hbm_byte": ratio, "balance_batch": ratio * p.total / p.active,
                     **{k: served.get(k) for k in KEPT}})
    title = (f"what-if {field} x{fs[0]:g}..x{fs[-1]:g}: {m.name} on {plan['chips']} x {base.chip.name} "
             f"({base.name}), layout {plan['label']} (serve's choice at x1, held); {concurrency:g} users, "
             f"{ref.extra['engine']}")
    r1 = _compute_peak(base, weights) / base.chip.hbm_bytes_per_s
    notes = (f"flops_per_hbm_byte R = peak FLOP/s at the compute dtype / HBM bytes/s: the lecture's \"~300\" "
             f"(§2.2); {base.chip.name} as catalogued: {r1:.0f}. balance_batch = R x N_total/N_active.",)
    res = Result("what_if", title, tuple(rows), COLUMNS, {"field": field, "plan": plan,
                 "layout_rule": "serve's layout on the unmodified hardware, held for every factor"}, notes,
                 (f"each row: serve at x<factor> of {field}, on the point asked at x1: {ref.title}",),
                 rows_key="rows", dims=("factor",))
    return annotate(res, base)


def _compute_peak(hw, weight_dtype: str) -> float:
    return hw.chip.flops_for(weight_dtype)[1]
