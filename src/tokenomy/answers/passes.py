"""decode and prefill: one pass of a model on hardware over a grid of batch x context, on a real layout.

    step_s          the answer: the engine under the efficiency set asked for (default: the chip's calibrated set)
    roofline_step_s the bound beside it: the same engine, the same layout, ideal efficiencies
Layout: the degrees given (tp, ep, pp, dp, redundant_experts), else the best valid layout over all the chips
(answers.layout_search.best_layout: objectives.FASTEST_STEP, its rule printed in the header and the JSON
``layout_rule``); ``layout="ideal"`` asks for
the even split of every byte over the chips with no communication, a bound no layout reaches.
Batch and context lists cross (every batch at every context), as on the CLI.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from tokenomy.answers import error_bars
from tokenomy.answers import inputs
from tokenomy.answers.deployment_request import POOL_DEGREES, DeploymentRequest
from tokenomy.answers.door import door
from tokenomy.answers.resolve import deployment, hardware_of, model_of, within_window
from tokenomy.answers.layout_search import best_layout
from tokenomy.answers.energy_cols import ENERGY_KEYS, pass_energy, power_of
from tokenomy.answers.result import Later, Result
from tokenomy.answers.variants import reports_hardware
from tokenomy.core import engine
from tokenomy.core.deployment import Deployment
from tokenomy.core.layout import Layout
from tokenomy.parallel.search import explain_plan
from tokenomy.units import fmt_seconds

PASS_COLUMNS = ("batch", "context", "step_s", "roofline_step_s", "compute_s", "memory_s", "comms_s", "bound",
                "tokens_per_s_per_chip", "tokens_per_s_per_user", "usd_per_mtok", "j_per_token_all_in", "tokens_per_s_per_mw",
                "tco_usd_per_mtok", "memory_per_chip_bytes", "fits")
MAX_POINTS = 1 << 20
TERM_KEYS = ("compute_s", "memory_s", "weights_read_s", "kv_s", "act_s", "tp_comm_s", "ep_comm_s", "comms_s", "overhead_s", "hop_s", "step_s",
             "tokens_per_s", "tokens_per_s_per_chip", "tokens_per_s_per_user", "mfu")
# the step's critical path (core/engine.py): stage = max(compute, memory) + overlap + tp + ep + floor + host_work
# − host_hidden; step = stage + pipeline
PATH_KEYS = ("stage_s", "overlap_s", "ep_hidden_s", "floor_s", "host_work_s", "host_hidden_s", "pipeline_s")


def choose_layout(dep: Deployment, chips: int | None, layout, B, C, S, usable=None) -> tuple[Layout, str]:
    """The explicit layout, the ideal bound, or the best valid layout over the chips (and the rule used;
    ``usable``: answers.layout_search.best_layout's further test)."""
    n = chips or dep.hardware.num_chips
    if layout == "ideal":
        return Layout.even_split(n), "ideal even split: every weight and KV byte over the chips, no communication"
    if isinstance(layout, Layout):
        if chips is not None and int(layout.chips) != chips:
            hint = ""
            if int(layout.ep) > 1 and int(layout.chips) // int(layout.ep) == chips:
                hint = (f" (ep multiplies the chips: experts split over ep groups of tp ranks; TP{int(layout.tp)} with "
                        f"expert parallelism on the same {chips} GPUs, as vLLM and SGLang run it, is --tp 1 --ep "
                        f"{chips} (attention data-parallel, experts split {chips} ways) or --tp {chips} (experts "
                        "tensor-split))")
            raise ValueError(f"chips: {chips} does not equal tp*ep*pp*dp = {int(layout.chips)}{hint}")
        check_layout(dep, layout)
        return layout, "the layout given"
    if layout is not None:
        raise ValueError(f"layout: {layout!r}; allowed: 'ideal', or layout degrees (tp, ep, pp, dp)")
    return best_layout(dep, n, B, C, S, usable)


def check_layout(dep: Deployment, layout: Layout, fields: str = "tp, ep, pp, dp") -> None:
    """Refuse a layout given that is not valid for the model, with the engine's reason (engine.REASONS below
    FIRST_POINT_REASON: from the layout alone), naming ``fields`` (a disaggregated pool's: decode_tp, ...)."""
    code = int(np.max(dep.with_(layout=layout).lower(1.0).layout_code))
    if code:
        raise ValueError(f"{fields}: {layout.label()} is not valid for {dep.model.name}: {engine.REASONS[code]}")


# the keywords decode and prefill take beside model, hardware, batch and context, with their defaults
PASS_KEYWORDS = {"len_pass": None, "chips": None, **dict.fromkeys(POOL_DEGREES), "layout": None, "weight_dtype": None,
                 "kv_dtype": "bf16", "efficiency": "calibrated", "usd_per_chip_hour": None, "hop_latency": None,
                 "usd_per_kwh": None, "facility": None}


@dataclass(frozen=True)
class PassRequest:
    """One pass question: decode or prefill, what is deployed (layout: degrees, "ideal" or None for the best), the
    batch x context grid (lists cross), the new tokens per pass (prefill; None: the whole context) and the pipeline
    hop latency in seconds (None: the hardware's)."""

    kind: str
    deployment: DeploymentRequest
    batch: Any
    context: Any
    len_pass: float | None = None
    hop_latency: float | None = None

    @classmethod
    def of(cls, kind: str, model, hardware, values: Mapping) -> "PassRequest":
        """From a door's keywords: batch, context and PASS_KEYWORDS (absent ones take their defaults)."""
        v = {**PASS_KEYWORDS, **values}
        return cls(kind, DeploymentRequest.of(model, hardware, v), v["batch"], v["context"], v["len_pass"],
                   v["hop_latency"])

    def __str__(self) -> str:
        return f"{self.kind} {self.deployment}; batch {self.batch}, context {self.context}"


def pass_answer(req: PassRequest) -> Result:
    """The decode or prefill answer of a request (module docstring)."""
    d, kind, len_pass = req.deployment, req.kind, req.len_pass
    m, hw = model_of(d.model), hardware_of(d.hardware)
    B = np.asarray(inputs.numbers("batch", req.batch), dtype=float)[:, None]
    C = np.asarray(inputs.numbers("context", req.context), dtype=float)[None, :]
    if B.size * C.size > MAX_POINTS:
        raise ValueError(f"batch x context: at most {MAX_POINTS} points, got {B.size * C.size}")
    within_window(m, float(np.max(C)), "context")
    S = np.ones_like(C) if kind == "decode" else (C if len_pass is None else np.full_like(C, float(len_pass)))
    if len_pass is not None:
        inputs.optional("len_pass", len_pass)
    if np.any(S > C):
        raise ValueError("len_pass: must be <= every context (the new tokens are part of the context)")
    power = power_of(hw, d.usd_per_kwh, d.facility)
    dep = deployment(m, hw, layout=Layout(), weight_dtype=d.weight_dtype, kv_dtype=d.kv_dtype,
                     efficiency=d.efficiency, usd_per_chip_hour=d.usd_per_chip_hour)
    lay, rule = choose_layout(dep, d.chips, d.layout, B, C, S)
    dep = dep.with_(layout=lay)
    hop = {} if req.hop_latency is None else {"hop_latency_s": float(req.hop_latency)}
    r = dep.run(B, C, S, **hop)
    bound = dep.run(B, C, S, eff=engine.ROOFLINE, **hop)
    used, _ = dep.compute
    title = (f"{kind}: {m.name} on {dep.chips} x {hw.chip.name} ({hw.name}); layout {lay.label()} ({rule}); "
             f"{dep.eff.name} efficiency{' (terms of ' + dep.eff.terms_from + ')' if dep.eff.terms_from else ''}; "
             f"compute {used}")
    # rows, notes and the per-point derivation are written on first use: a sweep returns once it is computed
    banded = error_bars.regime_of(dep, None, error_bars.DECODE if kind == "decode" else error_bars.PREFILL)
    rows = Later(lambda: error_bars.attach(pass_rows(dep, r, bound, power), banded, "batch", "context"))
    notes = lambda: (f"{row['batch']} x {row['context']}: {row['why']}" for row in rows if row["why"])  # noqa: E731
    derivation = lambda: (line for i in range(int(np.prod(r.shape))) for line in explain_point(dep, r, bound, i))  # noqa: E731
    return Result(kind, title, rows, PASS_COLUMNS, {"plan": lay.as_dict(), "layout_rule": rule},
                  notes, derivation, rows_key="", coords={"model": m.name, "hardware": hw.name},
                  dims=("plan", "batch", "context"))


def pass_rows(dep: Deployment, r: engine.PassTerms, bound: engine.PassTerms, power=None) -> list[dict]:
    """One dict per grid point (vectorised: arrays -> lists once), NaN -> None; with ``power`` (a PowerSpec) the
    energy and ownership columns (answers/energy_cols.py: per token of the pass, output in decode, input in
    prefill)."""
    shape = r.shape
    flat = lambda x: np.ravel(np.broadcast_to(x, shape))  # noqa: E731
    cols = {k: flat(getattr(r, k)) for k in TERM_KEYS}
    cols |= {k: flat(getattr(r, k) + r.nan) for k in PATH_KEYS}  # floor_s is unmasked: NaN where no answer
    if power is not None:
        e = pass_energy(power, r.busy_shares(), r.step_s, r.chips, np.asarray(r.batch) * np.asarray(r.len_pass))
        cols.update({k: flat(e[k]) for k in ENERGY_KEYS})
    cols["roofline_step_s"] = flat(bound.step_s)
    cols["usd_per_mtok"] = flat(dep.usd_per_mtok(r))
    cols["memory_per_chip_bytes"] = flat(r.memory_per_chip_bytes)
    cols["weights_per_chip_bytes"] = flat(r.weight_bytes_per_chip)
    cols["kv_per_chip_bytes"] = flat(r.kv_bytes_per_chip)
    cols["activations_per_chip_bytes"] = flat(r.act_bytes_per_chip)
    cols["hbm_bytes"] = flat(r.hbm_bytes)
    lists = {k: [None if x != x else x for x in v.tolist()] for k, v in cols.items()}
    B, C, S = (flat(x).astype(int).tolist() for x in (r.batch, r.context, r.len_pass))
    reason, bidx = flat(r.reason).tolist(), flat(r.bound).tolist()
    r_reason, ridx = flat(bound.reason).tolist(), flat(bound.bound).tolist()
    plan = dep.layout.label()
    rows = []
    for i in range(len(B)):
        ok = reason[i] == 0
        row = {"batch": B[i], "context": C[i], "len_pass": S[i], "plan": plan, "chips": dep.chips,
               "efficiency": dep.eff.name}
        row.update({k: v[i] for k, v in lists.items()})
        row["bound"] = engine.BOUNDS[bidx[i]] if ok else None
        row["roofline_bound"] = engine.BOUNDS[ridx[i]] if r_reason[i] == 0 else None
        row["fits"] = ok
        row["why"] = None if ok else engine.why_not(r, dep.layout, i)
        rows.append(row)
    return rows


def explain_point(dep: Deployment, r: engine.PassTerms, bound: engine.PassTerms, i: int) -> list[str]:
    """The engine's derivation of point ``i`` under the answer's efficiency set, then the roofline bound beside it."""
    lines = explain_plan(dep, dep.layout, r, i)
    b = float(np.ravel(np.broadcast_to(bound.step_s, bound.shape))[i])
    if b == b:
        lines.append(f"  roofline bound (same layout, ideal efficiencies): {fmt_seconds(b)} "
                     f"(binding: {engine.BOUNDS[int(np.ravel(bound.bound)[i])]})")
    return lines


@door(PASS_KEYWORDS)
@reports_hardware
def decode(model, hardware, *, batch=(1, 8, 64), context=(2048,), **kw) -> Result:
    """Decode steps (one new token per sequence) at every batch x context (lists cross, any lengths; defaults as
    ``tokenomy decode``'s); the keywords are the command's options (see the module docstring)."""
    return pass_answer(PassRequest.of("decode", model, hardware, {"batch": batch, "context": context, **kw}))


@door(PASS_KEYWORDS)
@reports_hardware
def prefill(model, hardware, *, batch=(1, 8, 64), context=(2048,), **kw) -> Result:
    """Prefill passes of ``context`` tokens (or ``len_pass`` new tokens over a cached context)."""
    return pass_answer(PassRequest.of("prefill", model, hardware, {"batch": batch, "context": context, **kw}))
