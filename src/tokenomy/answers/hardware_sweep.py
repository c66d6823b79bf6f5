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


def what_if(model, hardware, *, field="hbm_bytes_per_s", factors="x0.5..x4", concurrency=64, isl=1024, osl=1024,
            engine="vllm", chips=None, weight_dtype=None, kv_dtype=None, efficiency="calibrated") -> Result:
    """One row per multiplier of ``field`` (module docstring): serve's TPOT, TTFT, tokens/s per chip and $/Mtok at
    ``concurrency`` users with ``isl``/``osl`` tokens, on the layout serve picks for the unmodified hardware."""
    from tokenomy.answers.workloads import serve

    if field not in OVERRIDABLE:
        raise ValueError(f"field: {field!r} is not a hardware field; allowed: {', '.join(OVERRIDABLE)}")
    m, base = model_of(model), hardware_of(hardware)
    fs = factors_of(factors)
    common = dict(concurrency=[concurrency], isl=isl, osl=osl, engine=engine, weight_dtype=weight_dtype,
                  kv_dtype=kv_dtype, efficiency=efficiency)
    ref = serve(m, base, chips=chips, **common)
    lay = _layout_keywords(ref.extra["plan"])
    p = count_params(m)
    rows = []
    for f in fs:
        hw = hardware_with(base, {field: f"x{f!r}"}, door=f"what-if sweep of {field}")
        r = serve(m, hw, **lay, **common)
        peak = _compute_peak(hw, weight_dtype or m.quantization.dense)
        ratio = peak / hw.chip.hbm_bytes_per_s
        row = {"factor": f, "field": field, "value": hw.value(field) if field != "peak_flops_per_s" else peak,
               "flops_per_hbm_byte": ratio, "balance_batch": ratio * p.total / p.active,
               **{k: r.rows()[0].get(k) for k in KEPT}}
        rows.append(row)
    title = (f"what-if {field} x{fs[0]:g}..x{fs[-1]:g}: {m.name} on {ref.extra['plan']['chips']} x {base.chip.name} "
             f"({base.name}), layout {ref.extra['plan']['label']} (serve's choice at x1, held); {concurrency:g} "
             f"users, ISL {isl} / OSL {osl}, {engine}")
    r1 = _compute_peak(base, weight_dtype or m.quantization.dense) / base.chip.hbm_bytes_per_s
    notes = (f"flops_per_hbm_byte R = peak FLOP/s at the compute dtype / HBM bytes/s: the lecture's \"~300\" "
             f"(§2.2); {base.chip.name} as catalogued: {r1:.0f}. balance_batch = R x N_total/N_active.",)
    res = Result("what_if", title, tuple(rows), COLUMNS, {"field": field, "plan": ref.extra["plan"],
                 "layout_rule": "serve's layout on the unmodified hardware, held for every factor"}, notes,
                 rows_key="rows", dims=("factor",))
    return annotate(res, base)


def _compute_peak(hw, weight_dtype: str) -> float:
    return hw.chip.flops_for(weight_dtype)[1]
