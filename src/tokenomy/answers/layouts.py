"""plan: search every valid layout x batch for a model on hardware; the Pareto front of tokens/s per chip vs per user.

Given a serving workload (``concurrency`` or ``rate``, ``isl``/``osl``, SLOs ``ttft_slo``/``tpot_slo``) the
objective is the workload instead of one decode step: answers.plan_serving (aggregated layouts through
serving.steady; ``mode="disagg"``: prefill/decode pool splits through answers.workloads.plan_disagg), ranked by
objectives.PLAN_OBJECTIVES (default: goodput per dollar under the SLOs; tokens-per-joule, tco), the table showing
$/Mtok in and out beside tokens/s per chip and per user, TTFT and TPOT. Without a workload, the bare decode search
below.

Every point is the engine under the efficiency set asked for (default: calibrated) — the same engine decode and
prefill answer with, so the best plan's row is reproduced by ``decode`` with its degrees. ``best`` is chosen by
objectives.TOKENS_PER_CHIP (the feasible point with the most tokens/s per chip); ``--top N`` keeps N points evenly spread along the front, ``best`` among them.
"""

from __future__ import annotations

import math

import numpy as np

from tokenomy.answers import error_bars
from tokenomy.answers import inputs
from tokenomy.answers.door import door
from tokenomy.answers.launch import emits
from tokenomy.answers.layout_search import plan_best
from tokenomy.answers.objectives import TOKENS_PER_CHIP
from tokenomy.answers.resolve import deployment, hardware_of
from tokenomy.answers.result import Result
from tokenomy.answers.variants import reports_hardware
from tokenomy.core.layout import Layout
from tokenomy.parallel.search import Constraints, _column, explain_plan, search
from tokenomy.parallel.topology import topology

PLAN_COLUMNS = ("plan", "chips", "batch", "tokens_per_s_per_chip", "tokens_per_s_per_user", "step_s", "ttft_s",
                "usd_per_mtok", "memory_per_chip_bytes", "bound")


SERVING_COLUMNS = ("best", "plan", "chips", "concurrency", "rate", "ttft_s", "tpot_s", "tokens_per_s_per_chip",
                   "tokens_per_s_per_user", "usd_per_mtok_input", "usd_per_mtok_output", "goodput_requests_per_usd",
                   "j_per_output_token", "tco_usd_per_mtok_output", "bound")
DISAGG_PLAN_COLUMNS = ("best", "plan", "prefill_chips", "decode_chips", "concurrency", "rate", "ttft_s", "tpot_s",
                       "tokens_per_s_per_chip", "tokens_per_s_per_user", "usd_per_mtok_input", "usd_per_mtok_output",
                       "goodput_requests_per_usd", "prefill_utilisation")


# plan's keywords beside model, hardware and the chips, with their defaults: the bare search's (BARE_KEYWORDS and
# top, batch (a list; () every batch), torus), the deployment's, and a serving plan's workload, engine, pools and objective
BARE_KEYWORDS = {"context": 8192, "min_tokens_per_user": 0.0, "max_ttft": None, "hop_latency": None}
PLAN_KEYWORDS = {**BARE_KEYWORDS, "batch": (), "weight_dtype": None, "kv_dtype": None, "efficiency": "calibrated",
                 "torus": None, "top": 0, "usd_per_chip_hour": None, "mode": "agg", "concurrency": None, "rate": None,
                 "isl": 1024, "osl": 1024, "ttft_slo": None, "tpot_slo": None, "engine": "vllm", "cache_hit": 0.0,
                 "max_num_tokens": None, "max_batch": None, "prefill_chips": None, "decode_chips": None,
                 "objective": None, "usd_per_kwh": None, "facility": None, "emit": None}


@door(PLAN_KEYWORDS)
@reports_hardware
@emits
def plan(model, hardware, *, chips=None, **kw) -> Result:
    """The layout search (module docstring); a serving plan when a workload or ``mode="disagg"`` is given;
    ``objective`` (objectives.PLAN_OBJECTIVES) what an aggregated serving plan maximises. ``emit`` (vllm | sglang |
    trtllm | dynamo): the chosen plan's launch commands in ``extra["launch"]`` (answers/launch.py, docs/deploy.md);
    ``engine`` left out is then the engine ``emit`` names."""
    from tokenomy.answers.objectives import DEFAULT_PLAN_OBJECTIVE, plan_objective

    v = {**PLAN_KEYWORDS, "chips": chips, **kw}
    mode, objective, workload = v["mode"], v["objective"], v["concurrency"] is not None or v["rate"] is not None
    if mode not in ("agg", "disagg"):
        raise ValueError(f"mode: {mode!r}; allowed: agg, disagg")
    plan_objective(objective)
    if objective not in (None, DEFAULT_PLAN_OBJECTIVE) and (mode == "disagg" or not workload):
        raise ValueError(f"objective: {objective!r} ranks aggregated serving plans: give concurrency or rate "
                         "(mode agg); the bare search and mode disagg rank by their own rule")
    if workload or mode == "disagg":
        # a workload brings its own lengths and SLOs: the bare search's knobs would be silently unused
        unused = [k for k, default in BARE_KEYWORDS.items() if v[k] != default]
        if unused:
            raise ValueError(f"{unused[0]}: not used with a workload (its lengths are isl/osl, its limits "
                             "ttft_slo/tpot_slo); leave it out")
        return _serving_plan(model, hardware, {k: v[k] for k in SERVING_PLAN_KEYWORDS},
                             {k: v[k] for k in ("top", "batch", "torus", "objective")})
    return _bare_plan(model, hardware, v)


def _bare_plan(model, hardware, v: dict) -> Result:
    """The bare decode search (module docstring) on plan's keywords ``v``: the Pareto front under the constraints."""
    chips, context, min_tokens_per_user, max_ttft, hop_latency, top, batch, torus = (
        v[k] for k in ("chips", "context", "min_tokens_per_user", "max_ttft", "hop_latency", "top", "batch", "torus"))
    if v["prefill_chips"] is not None or v["decode_chips"] is not None:
        raise ValueError("prefill_chips: the pool sizes (prefill_chips, decode_chips) only with mode disagg")
    kv_dtype = "bf16" if v["kv_dtype"] in (None, "auto") else v["kv_dtype"]  # a bare layout search has no engine
    for name in ("context", "max_ttft", "hop_latency", "min_tokens_per_user", "top"):
        inputs.optional(name, v[name])
    if min_tokens_per_user is None or top is None:
        raise ValueError(f"{'top' if top is None else 'min_tokens_per_user'}: required (a number)")
    dep = deployment(model, hardware, layout=Layout(), weight_dtype=v["weight_dtype"], kv_dtype=kv_dtype,
                     efficiency=v["efficiency"], usd_per_chip_hour=v["usd_per_chip_hour"])
    dep = dep.with_(topology=topology(dep.hardware, torus=torus))
    budget = inputs.optional("chips", chips) or dep.hardware.num_chips
    cons = Constraints(float(context), float(min_tokens_per_user), math.inf if max_ttft is None else float(max_ttft))
    res = search(dep, chips=budget, constraints=cons, batches=list(batch) if batch else None,
                 hop_latency_s=hop_latency)
    chosen = plan_best(res)
    front = [res.row(int(i)) for i in res.front]
    if top and len(front) > top:  # evenly spaced along the front, both ends and the best kept
        keep = set(np.unique(np.linspace(0, len(front) - 1, top).round()).astype(int).tolist())
        front = [r for i, r in enumerate(front) if i in keep or int(res.front[i]) == chosen]
    best = res.row(chosen) if chosen is not None else None
    banded = error_bars.regime_of(dep, None, error_bars.PLAN)
    front, best = error_bars.attach(front, banded, "batch", float(context)), best and error_bars.attach(
        [best], banded, "batch", float(context))[0]
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
        notes.append(f"best ({TOKENS_PER_CHIP.rule(chips=budget)}): {best['plan']} at batch {best['batch']}: "
                     f"{best['tokens_per_s_per_chip']:.4g} tok/s/chip, {best['tokens_per_s_per_user']:.4g} tok/s/user, "
                     f"TTFT {best['ttft_s']:.3g} s, ${best['usd_per_mtok']:.3g}/Mtok, bound by {best['bound']}")
    derivation = () if chosen is None else tuple(explain_plan(dep, _column(res.layouts), res.decode, chosen))
    return Result("plan", title, tuple(front), PLAN_COLUMNS, extra, tuple(notes), derivation, rows_key="front")



SERVING_PLAN_KEYWORDS = frozenset({"chips", "mode", "concurrency", "rate", "isl", "osl", "ttft_slo", "tpot_slo",
                                   "engine", "cache_hit", "max_num_tokens", "max_batch", "prefill_chips",
                                   "decode_chips", "weight_dtype", "kv_dtype", "efficiency", "usd_per_chip_hour",
                                   "usd_per_kwh", "facility"})


def _serving_plan(model, hardware, given: dict, search: dict) -> Result:
    """plan for a workload: ``given`` serve's keywords (the request objects are built from them at once),
    ``search`` the plan's own (top, batch, torus, objective)."""
    from tokenomy.answers.disagg_plans import disagg_plan
    from tokenomy.answers.objectives import plan_objective
    from tokenomy.answers.requests import ServeRequest

    top = search["top"]
    if search["batch"]:
        raise ValueError("batch: a serving plan runs the batches the workload makes; give --concurrency or --rate")
    if given["concurrency"] is None and given["rate"] is None:
        raise ValueError("concurrency: mode disagg plans for a workload; give concurrency (closed loop, users) or "
                         "rate (open loop, requests/s)")
    if top is None:
        raise ValueError("top: required (a number)")
    inputs.number("top", top)
    pools = {k: given.pop(k) for k in ("prefill_chips", "decode_chips")}
    if given["mode"] == "disagg":
        if search["torus"] is not None:
            raise ValueError("torus: not with mode disagg")
        chips = given.pop("chips")
        req = ServeRequest.of(model, hardware, {**given, "pools": pools})
        budget = inputs.optional("chips", chips) or hardware_of(hardware).num_chips
        r = disagg_plan(req, budget, top or None)
        return Result("plan", r.title, r.table, DISAGG_PLAN_COLUMNS, r.extra, r.notes, rows_key="front")
    if any(v is not None for v in pools.values()):
        raise ValueError("prefill_chips: the pool sizes (prefill_chips, decode_chips) only with mode disagg")
    return _agg_plan(ServeRequest.of(model, hardware, given), search["torus"], top, plan_objective(search["objective"]))


def _agg_plan(req, torus, top, goal) -> Result:
    """The aggregated serving plan (module docstring): layouts screened by the decode front, through the steady
    state, ranked by ``goal`` (objectives.PLAN_OBJECTIVES)."""
    from tokenomy.answers.energy_cols import power_of
    from tokenomy.answers.plan_serving import misses_by, rank, search_agg
    from tokenomy.answers.serve_rows import serving_kv_dtype, within_context

    d, w, e = req.deployment, req.workload, req.serving_engine
    kv = serving_kv_dtype(d.model, e.name, d.weight_dtype, d.kv_dtype)
    dep = deployment(d.model, d.hardware, layout=Layout(), weight_dtype=d.weight_dtype, kv_dtype=kv,
                     efficiency=d.efficiency, usd_per_chip_hour=d.usd_per_chip_hour)
    dep = dep.with_(topology=topology(dep.hardware, torus=torus))
    budget = d.chips or dep.hardware.num_chips
    within_context(dep.model, w.isl_mean, w.osl_mean)
    power = power_of(dep.hardware, d.usd_per_kwh, d.facility)
    rows, n_layouts, n_eval = search_agg(dep, budget, w, e, power)
    if not rows:
        raise ValueError(f"chips: {dep.model.name} does not fit on <= {budget} x {dep.hardware.chip.name} with a KV "
                         f"cache for one {w.isl_mean + w.osl_mean:g}-token sequence under {e.name}'s memory share")
    rule = goal.rule()
    table, best, closest, notes = rank(rows, *w.slos, top or None, goal)
    error_bars.attach([r for r in (*table, best, closest) if r is not None],
                      error_bars.regime_of(dep, e.name, error_bars.SERVE), "running_batch",
                      w.isl_mean + w.osl_mean / 2)
    notes.insert(0, f"{n_layouts:,} candidate layouts on <= {budget} chips; {n_eval} on the decode Pareto front at "
                    f"context {w.isl_mean + w.osl_mean / 2:g} run through the serving steady state ({len(rows)} plans)")
    ttft, tpot = w.slos
    title = (f"plan (agg serving): {dep.model.name} on <= {budget} x {dep.hardware.chip.name} ({dep.hardware.name}); "
             f"ISL {w.isl.label()} / OSL {w.osl.label()}; SLOs TTFT {ttft if ttft else '-'} s, TPOT "
             f"{tpot if tpot else '-'} s; {e.name}; weights {dep.weight_dtype or dep.model.quantization.dense}, "
             f"KV {dep.kv_dtype}; {dep.eff.name} efficiency; best {rule}")
    extra = {"mode": "agg", "model": dep.model.name, "hardware": dep.hardware.name, "chips_budget": budget,
             "rule": rule, "best": best, "closest": closest, "misses_by": misses_by(closest, *w.slos),
             "plans": len(rows), "candidates": n_layouts}
    return Result("plan", title, tuple(table), SERVING_COLUMNS, extra, tuple(notes), rows_key="front")
