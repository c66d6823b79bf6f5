"""plan: search every valid layout x batch for a model on hardware; the Pareto front of tokens/s per chip vs per user.

Every point is the engine under the efficiency set asked for (default: calibrated) — the same engine decode and
prefill answer with, so the best plan's row is reproduced by ``decode`` with its degrees. ``best`` is the feasible
point with the most tokens/s per chip; ``--top N`` keeps N points evenly spread along the front, ``best`` among them.
"""

from __future__ import annotations

import math

import numpy as np

from tokenomy.answers.resolve import deployment, positive_int
from tokenomy.answers.result import Result
from tokenomy.core.layout import Layout
from tokenomy.parallel.search import Constraints, _column, explain_plan, search
from tokenomy.parallel.topology import topology

PLAN_COLUMNS = ("plan", "chips", "batch", "tokens_per_s_per_chip", "tokens_per_s_per_user", "step_s", "ttft_s",
                "usd_per_mtok", "memory_per_chip_bytes", "bound")


def _positive(name: str, v):
    if v is not None and not (v > 0 and math.isfinite(v)):
        raise ValueError(f"{name}: must be a positive number, got {v}")
    return v


def plan(model, hardware, *, chips=None, context=8192, min_tokens_per_user=0.0, max_ttft=None, batch=None,
         weight_dtype=None, kv_dtype="bf16", efficiency="calibrated", hop_latency=None, torus=None, top=0,
         usd_per_chip_hour=None) -> Result:
    for name, v in (("context", context), ("max_ttft", max_ttft), ("hop_latency", hop_latency)):
        _positive(name, v)
    if min_tokens_per_user is None or not min_tokens_per_user >= 0:
        raise ValueError(f"min_tokens_per_user: must be >= 0, got {min_tokens_per_user}")
    if top is None or int(top) != top or top < 0:
        raise ValueError(f"top: must be an integer >= 0, got {top}")
    dep = deployment(model, hardware, layout=Layout(), weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                     efficiency=efficiency, usd_per_chip_hour=usd_per_chip_hour)
    dep = dep.with_(topology=topology(dep.hardware, torus=torus))
    budget = positive_int("chips", chips) or dep.hardware.num_chips
    cons = Constraints(float(context), float(min_tokens_per_user), math.inf if max_ttft is None else float(max_ttft))
    res = search(dep, chips=budget, constraints=cons, batches=None if batch is None else list(batch),
                 hop_latency_s=hop_latency)
    front = [res.row(int(i)) for i in res.front]
    if top and len(front) > top:  # evenly spaced along the front, both ends and the best kept
        keep = set(np.unique(np.linspace(0, len(front) - 1, top).round()).astype(int).tolist())
        front = [r for i, r in enumerate(front) if i in keep or int(res.front[i]) == res.best]
    best = res.row(res.best) if res.best is not None else None
    feasible = int(np.count_nonzero(res.feasible))
    used, _ = dep.compute
    extra = {"model": dep.model.name, "hardware": dep.hardware.name, "chips_budget": budget, "compute_dtype": used,
             "efficiency": dep.eff.name,
             "constraints": {"context": context, "min_tokens_per_s_per_user": min_tokens_per_user,
                             "max_ttft_s": max_ttft}, "candidates": res.candidates, "feasible": feasible,
             "rejected": res.rejected, "best": best}
    title = (f"plan: {dep.model.name} on <= {budget} x {dep.hardware.chip.name} ({dep.hardware.name}, domain "
             f"{dep.topo.domain_size}, compute {used}, {dep.eff.name} efficiency): {res.candidates:,} candidates, "
             f"{feasible:,} feasible, Pareto front")
    notes = [f"rejected: {n:,} {why}" for why, n in res.rejected.items()]
    if best is None:
        notes.append("no plan meets the constraints")
    else:
        notes.append(f"best tokens/s per chip: {best['plan']} at batch {best['batch']}: "
                     f"{best['tokens_per_s_per_chip']:.4g} tok/s/chip, {best['tokens_per_s_per_user']:.4g} tok/s/user, "
                     f"TTFT {best['ttft_s']:.3g} s, ${best['usd_per_mtok']:.3g}/Mtok, bound by {best['bound']}")
    derivation = () if res.best is None else tuple(explain_plan(dep, _column(res.layouts), res.decode, res.best))
    return Result("plan", title, tuple(front), PLAN_COLUMNS, extra, tuple(notes), derivation, rows_key="front")

