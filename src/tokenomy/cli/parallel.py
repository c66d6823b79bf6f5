"""Parallel layouts: `tokenomy plan` (the search) and decode/prefill with --tp --ep --pp --dp."""

from __future__ import annotations

import math

import numpy as np
import typer

from tokenomy.catalog import loader
from tokenomy.cli.app import UsageError, app, guarded, int_list
from tokenomy.cli.foundation import _dtype
from tokenomy.cli.options import (CSV, EXPLAIN, FLOPS_FRACTION, HBM_FRACTION, HOP_LATENCY, JSON, KV_DTYPE, MODEL,
                                  WEIGHT_DTYPE)
from tokenomy.cli.render import emit, explain
from tokenomy.core.inference import compute_dtype_for, hw_coeffs
from tokenomy.core.roofline import Efficiency
from tokenomy.parallel.plan import BOUNDS, Plans, evaluate, shape_of, why_not
from tokenomy.parallel.search import Constraints, explain_plan, search
from tokenomy.parallel.topology import parse_torus, topology
from tokenomy.units import dtype_bytes

PLAN_COLUMNS = ("plan", "chips", "batch", "tokens_per_s_per_chip", "tokens_per_s_per_user", "step_s", "ttft_s",
                "memory_per_chip_bytes", "bound")
PASS_COLUMNS = ("batch", "context", "compute_s", "memory_s", "comms_s", "hop_s", "step_s", "bound",
                "tokens_per_s_per_chip", "tokens_per_s_per_user", "memory_per_chip_bytes", "fits")


def _setup(model: str, hardware: str, weight_dtype: str | None, kv_dtype: str, torus: str | None):
    m, hw = loader.model(model), loader.hardware(hardware)
    wd, kd = _dtype("weight-dtype", weight_dtype), _dtype("kv-dtype", kv_dtype)
    hwc, used = hw_coeffs(hw, compute_dtype_for(m, wd))
    kw = {"weight_bytes_per_param": None if wd is None else dtype_bytes(wd), "kv_bytes_per_elem": dtype_bytes(kd)}
    return m, hw, topology(hw, torus=parse_torus(torus)), hwc, used, kw


def _positive(name: str, v) -> None:
    if v is not None and not v > 0:
        raise UsageError(f"--{name} must be positive, got {v}")


def plan_pass_cmd(kind: str, model: str, hardware: str, chips: int | None, batch: str, context: str,
                  len_pass: int | None, weight_dtype: str | None, kv_dtype: str, eff: Efficiency, as_json: bool,
                  as_csv: bool, show: bool, *, tp=None, ep=None, pp=None, dp=None, hop_latency_s=None,
                  torus=None) -> None:
    """decode/prefill under an explicit parallel plan (degrees left out are 1)."""
    for name, v in (("tp", tp), ("ep", ep), ("pp", pp), ("dp", dp), ("len-pass", len_pass)):
        _positive(name, v)
    plans = Plans(tp or 1, ep or 1, pp or 1, dp or 1)
    n = int(plans.chips)
    if chips is not None and chips != n:
        raise UsageError(f"--chips {chips} does not equal tp*ep*pp*dp = {n}; drop --chips or change the degrees")
    m, hw, topo, hwc, used, kw = _setup(model, hardware, weight_dtype, kv_dtype, torus)
    B = np.array(int_list("batch", batch), dtype=float)[:, None]
    C = np.array(int_list("context", context), dtype=float)[None, :]
    S = np.ones_like(C) if kind == "decode" else (C if len_pass is None else np.full_like(C, float(len_pass)))
    if np.any(S > C):
        raise UsageError("--len-pass must be <= every --context (the new tokens are part of the context)")
    sh = shape_of(m)
    r = evaluate(sh, topo, hwc, plans, B, C, S, eff=eff, hop_latency_s=hop_latency_s, **kw)
    shape = np.shape(r.reason)
    rows = []
    for i in range(int(np.prod(shape))):
        g = lambda x: float(np.ravel(np.broadcast_to(x, shape))[i])  # noqa: E731
        ok = g(r.reason) == 0
        row = {"plan": plans.label(), "chips": n, "batch": int(g(r.batch)), "context": int(g(r.context)),
               "len_pass": int(g(r.len_pass))}
        for k in ("compute_s", "memory_s", "tp_comm_s", "ep_comm_s", "comms_s", "overhead_s", "hop_s", "step_s",
                  "tokens_per_s", "tokens_per_s_per_chip", "tokens_per_s_per_user", "mfu", "micro_batch",
                  "memory_per_chip_bytes", "weight_bytes_per_chip", "kv_bytes_per_chip", "act_bytes_per_chip",
                  "rack_hop_ratio"):
            v = g(getattr(r, k))
            row[k] = None if math.isnan(v) else v
        row.update(bound=BOUNDS[int(g(r.bound))] if ok else None, fits=ok, why=why_not(r, plans, i))
        rows.append(row)
        if show and not (as_json or as_csv):
            explain(explain_plan(sh, topo, plans, r, i, hwc.peak_flops_per_s))
    title = (f"{kind}: {m.name} on {n} x {hw.chip.name} ({plans.label()}; {topo.name} scale-up domain "
             f"{topo.domain_size}; compute {used})")
    notes = [f"[red]{row['batch']} x {row['context']}: {row['why']}[/red]" for row in rows if not row["fits"]]
    emit(rows, as_json=as_json, as_csv=as_csv, title=title, columns=PASS_COLUMNS, notes=notes)


@app.command("plan")
@guarded
def plan_cmd(model: str = MODEL,
             hardware: str = typer.Option(..., "--hardware", help="Chip or system (its scale-up domain and links)."),
             chips: int = typer.Option(None, "--chips", help="Chip budget (default: the system's chips)."),
             context: int = typer.Option(8192, "--context", help="Context length in tokens (prompt for TTFT)."),
             min_tokens_per_user: float = typer.Option(0.0, "--min-tokens-per-user",
                                                       help="Minimum decode tokens/s per user."),
             max_ttft: float = typer.Option(None, "--max-ttft", help="Maximum time to first token, seconds."),
             batch: str = typer.Option(None, "--batch", help="Batches to try (default 1..65536, 1.5x steps)."),
             weight_dtype: str = WEIGHT_DTYPE, kv_dtype: str = KV_DTYPE,
             flops_fraction: float = FLOPS_FRACTION, hbm_fraction: float = HBM_FRACTION,
             overhead_s: float = typer.Option(0.0, help="Fixed per-stage overhead in seconds."),
             hop_latency: float = HOP_LATENCY,
             torus: str = typer.Option(None, "--torus", help="TPU ICI torus shape of the domain, e.g. 4x4x4."),
             top: int = typer.Option(0, "--top", help="Show only this many front points (0: all)."),
             as_json: bool = JSON, as_csv: bool = CSV, show: bool = EXPLAIN) -> None:
    """Search every tp x ep x pp x dp layout and batch; print the Pareto front of tokens/s per chip vs per user.

    Example: tokenomy plan --model deepseek-v3 --hardware gb200-nvl72 --chips 288 --min-tokens-per-user 20

    --explain derives the best plan (most tokens/s per chip on the front) step by step.
    """
    for name, v in (("chips", chips), ("context", context), ("max-ttft", max_ttft), ("hop-latency", hop_latency)):
        _positive(name, v)
    if top < 0:
        raise UsageError(f"--top must be >= 0, got {top}")
    m, hw, topo, hwc, used, kw = _setup(model, hardware, weight_dtype, kv_dtype, torus)
    budget = chips or hw.num_chips
    cons = Constraints(float(context), min_tokens_per_user, math.inf if max_ttft is None else max_ttft)
    sh = shape_of(m)
    res = search(sh, topo, hwc, chips=budget, constraints=cons,
                 batches=None if batch is None else int_list("batch", batch),
                 eff=Efficiency(flops_fraction, hbm_fraction, overhead_s), hop_latency_s=hop_latency, **kw)
    front = [res.row(int(i)) for i in res.front]
    if top and len(front) > top:  # evenly spaced along the front, both ends kept
        front = [front[int(i)] for i in np.unique(np.linspace(0, len(front) - 1, top).round())]
    best = res.row(res.best) if res.best is not None else None
    if as_json:
        emit({"model": m.name, "hardware": hw.name, "chips_budget": budget, "compute_dtype": used,
              "constraints": {"context": context, "min_tokens_per_s_per_user": min_tokens_per_user,
                              "max_ttft_s": max_ttft}, "candidates": res.candidates,
              "feasible": int(np.count_nonzero(res.feasible)), "rejected": res.rejected, "best": best, "front": front},
             as_json=True, as_csv=False)
        return
    title = (f"plan: {m.name} on <= {budget} x {hw.chip.name} ({topo.name}, domain {topo.domain_size}, compute {used})"
             f": {res.candidates:,} candidates, {int(np.count_nonzero(res.feasible)):,} feasible, Pareto front")
    notes = [f"rejected: {n:,} {why}" for why, n in res.rejected.items()]
    if best is None:
        notes.append("[red]no plan meets the constraints[/red]")
    else:
        notes.append(f"[bold]best tokens/s per chip:[/bold] {best['plan']} at batch {best['batch']}: "
                     f"{best['tokens_per_s_per_chip']:.4g} tok/s/chip, {best['tokens_per_s_per_user']:.4g} tok/s/user, "
                     f"TTFT {best['ttft_s']:.3g} s, bound by {best['bound']}")
    emit(front, as_json=False, as_csv=as_csv, title=title, columns=PLAN_COLUMNS, notes=() if as_csv else notes)
    if show and best is not None and not as_csv:
        grid = Plans(*(np.asarray(getattr(res.plans, k))[:, None] for k in ("tp", "ep", "pp", "dp", "attn_dp",
                                                                             "kv_batch")))
        explain(explain_plan(sh, topo, grid, res.decode, res.best, hwc.peak_flops_per_s))
