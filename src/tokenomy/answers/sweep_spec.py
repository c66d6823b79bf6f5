"""What a sweep computes: its variables and their units, the reasons a point is refused beyond the engine's, the
``Spec`` a worker evaluates any chunk by, the deployment of a loop point, and how a refused point is marked."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.answers.resolve import deployment
from tokenomy.answers.sweep_axes import Grid, _label
from tokenomy.answers.workloads import serving_kv_dtype
from tokenomy.core import engine
from tokenomy.core.deployment import Deployment
from tokenomy.core.layout import Layout
from tokenomy.units import CHECKPOINT

SWEEP_REASONS = ("len_pass exceeds the context", "no valid layout uses exactly the chips",
                 "no room for the KV cache of one sequence beside the weights",
                 "beyond the model's context window (max_position_embeddings)")
REASONS = engine.REASONS + SWEEP_REASONS
LEN_PASS_REASON, NO_LAYOUT_REASON, NO_KV_REASON, WINDOW_REASON = (len(engine.REASONS) + i for i in range(4))
PASS_VARS = {"step_s": "s", "compute_s": "s", "memory_s": "s", "comms_s": "s", "overhead_s": "s",
             "tokens_per_s_per_chip": "tokens/s", "tokens_per_s_per_user": "tokens/s", "usd_per_mtok": "USD/Mtok",
             "memory_per_chip_bytes": "bytes", "mfu": "1", "j_per_token_all_in": "J/token",
             "tokens_per_s_per_mw": "tokens/s/MW", "tco_usd_per_mtok": "USD/Mtok"}
PASS_ENERGY = ("j_per_token_all_in", "tokens_per_s_per_mw", "tco_usd_per_mtok")  # answers/energy_cols.py
SERVE_VARS = {"ttft_s": "s", "tpot_s": "s", "e2e_s": "s", "requests_per_s": "requests/s",
              "tokens_per_s_per_chip": "tokens/s", "tokens_per_s_per_user": "tokens/s",
              "usd_per_mtok_input": "USD/Mtok", "usd_per_mtok_output": "USD/Mtok", "kv_occupancy": "1",
              "capacity_limited": "1", "j_per_output_token": "J/token", "tokens_per_s_per_mw": "tokens/s/MW",
              "tco_usd_per_mtok_output": "USD/Mtok"}
SERVE_ENERGY = ("j_per_output_token", "tokens_per_s_per_mw", "tco_usd_per_mtok_output")
# each point's error band (answers/error_bars.py): the 10th and 90th percentile of the measured value
PASS_BANDS = {f"{k}_p{q}": u for k, u in (("step_s", "s"), ("tokens_per_s_per_chip", "tokens/s")) for q in (10, 90)}
SERVE_BANDS = {f"{k}_p{q}": u for k, u in (("ttft_s", "s"), ("tpot_s", "s"), ("tokens_per_s_per_chip", "tokens/s"))
               for q in (10, 90)}
CODES = {"bound": "index into engine.BOUNDS", "reason": "index into REASONS (0: valid and fits)"}
PLAN_VARS = ("plan_tp", "plan_ep", "plan_pp", "plan_dp", "plan_redundant_experts", "plan_attn_dp", "plan_kv_batch")


@dataclass(frozen=True)
class Spec:
    """Everything a worker needs to evaluate any chunk: the grid and the settings that are not axes."""

    grid: Grid
    plan: bool  # no layout degrees given: each point on its best layout
    budget: int  # points per engine call (plan: candidates x points)
    usd_per_chip_hour: float | None = None
    serving_engine: str = "vllm"  # vllm | sglang | trtllm: the serving engine whose profile runs a serving sweep
    max_num_tokens: int | None = None
    max_batch: int | None = None
    cache_hit: float = 0.0
    arrivals: str = "staggered"
    keep: tuple[str, ...] | None = None  # the variables to return (None: all); reason always

    def all_variables(self) -> dict[str, str]:
        """Variable -> unit (codes and plan degrees have no unit)."""
        out = dict(SERVE_VARS | SERVE_BANDS if self.grid.serving else PASS_VARS | PASS_BANDS)
        out.update({k: "" for k in CODES})
        if self.plan:
            out.update({k: "" for k in PLAN_VARS})
        return out

    def variables(self) -> dict[str, str]:
        out = self.all_variables()
        return out if self.keep is None else {k: u for k, u in out.items() if k in self.keep or k == "reason"}

    def computes(self, name: str) -> bool:
        """Whether a chunk computes variable ``name``: every one without ``variables=``; else the kept ones, the
        reason, and the values a kept error band scales (a sweep of step_s alone forms no energy, price or band)."""
        if self.keep is None or name in self.keep or name == "reason":
            return True
        bands = SERVE_BANDS if self.grid.serving else PASS_BANDS  # error_bars.band_arrays reads every banded field
        return any(b in self.keep for b in bands) and any(b.startswith(name + "_p") for b in bands)


_BASE: dict = {}


def base(spec: Spec, point: dict) -> Deployment:
    """The deployment of a loop point (layout left at 1 chip), cached per process (workers keep theirs)."""
    wd = point.get("weight_dtype", CHECKPOINT)
    key = tuple(_label(point.get(k, "")) for k in ("model", "hardware", "kv_dtype", "efficiency")) + (
        wd, spec.usd_per_chip_hour, spec.serving_engine)
    if key not in _BASE:
        kv = point.get("kv_dtype", "bf16")
        if kv == "auto":  # a serving sweep's default: the engine's KV dtype for the weights (tk.serve's)
            kv = serving_kv_dtype(point["model"], spec.serving_engine, wd)
        _BASE[key] = deployment(point["model"], point["hardware"], layout=Layout(),
                                weight_dtype=wd, kv_dtype=kv,
                                efficiency=point.get("efficiency", "calibrated"),
                                usd_per_chip_hour=spec.usd_per_chip_hour, serving_engine=spec.serving_engine)
    return _BASE[key]


def _marked(vals: dict, where, reason: int) -> dict:
    """The points ``where`` a sweep's door refuses them: NaN, with their ``reason`` (the other doors raise)."""
    if not np.any(where):
        return vals
    out = {k: np.where(where, np.nan, v) if k not in ("reason", "bound") else v for k, v in vals.items()}
    out["reason"] = np.where(where, reason, vals["reason"])
    return out
