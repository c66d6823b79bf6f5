"""The Workload page (issue 13's question): a model served on chips to a workload — closed loop (a list of
concurrencies) or open loop (a list of request rates), ISL/OSL, prefix-cache hit, engine profile and SLOs — and
what users see at each point: TTFT, TPOT, throughput and $ (tokenomy.answers.workloads.serve, the same answer as
``tokenomy serve`` and ``/api/serve``). Figures: the latency-throughput curve (tokens/s per chip vs per user),
TTFT/TPOT vs load, $ per M tokens vs load (tokenomy.plots.workload)."""

from __future__ import annotations

from typing import Mapping
from urllib.parse import urlencode

from tokenomy.answers.engines import ENGINES, PROTOCOLS
from tokenomy.answers.sizing import USE_CASES
from tokenomy.answers.workloads import serve
from tokenomy.plots import workload as wp
from tokenomy.web import params as P
from tokenomy.web.serve import plain

LOOPS = ("concurrency", "rate")
METHODS = ("analytic", "simulate")
DEGREES = ("tp", "ep", "pp", "dp")
MODES = ("agg", "disagg")
POOLS = tuple(f"{pool}_{k}" for pool in ("prefill", "decode") for k in ("chips",) + DEGREES)  # disagg's pools
POOL_ATTN = ("prefill_attn_dp", "decode_attn_dp")  # with ep > 1: attention data-parallel (true) or tensor-parallel
FIELDS = ("model", "config", "hardware", "chips", "loop", "concurrency", "rate", "isl", "osl", "cache_hit", "engine",
          "method", "protocol", "ttft_slo", "tpot_slo", "weight_dtype", "kv_dtype", "efficiency", "usd_per_chip_hour",
          "set", "mode", "preset") + DEGREES + POOLS + POOL_ATTN
DEFAULTS = {"model": "llama-3.1-70b", "hardware": "hgx-h100-8", "loop": "concurrency", "concurrency": "1,4,16,64,256",
            "rate": "0.5,1,2,4,8", "isl": "1024", "osl": "1024", "cache_hit": "0", "engine": "vllm",
            "method": "analytic", "protocol": "steady", "kv_dtype": "auto", "efficiency": "calibrated", "mode": "agg"}
COLUMNS = ("concurrency", "rate", "plan", "prefill_chips", "decode_chips", "ttft_s", "ttft_p99_s", "tpot_s",
           "tpot_p99_s", "kv_transfer_s", "e2e_s", "requests_per_s",
           "tokens_per_s_per_chip", "tokens_per_s_per_user", "usd_per_mtok_input", "usd_per_mtok_output",
           "j_per_output_token", "tokens_per_s_per_mw", "tco_usd_per_mtok_output", "kv_occupancy", "capacity_limited",
           "bound", "goodput_requests_per_s")
NUMBERS = ("isl", "osl", "cache_hit", "ttft_slo", "tpot_slo", "usd_per_chip_hour", "chips") + DEGREES
PREFILLED = ("concurrency", "rate", "isl", "osl", "cache_hit")  # shown filled: sent back empty, they are refused
MAX_POINTS = 16  # load points on one page (each an analytic steady state; simulate runs 2000 requests per point)
SIM_MAX_POINTS = 6


def preset_values(name: str) -> dict[str, str]:
    """A use case's lengths and SLOs (answers.sizing.USE_CASES) as the form's values; '' for no SLO."""
    u = USE_CASES[name]
    return {"isl": str(u.isl), "osl": str(u.osl), "ttft_slo": "" if u.ttft_slo_s is None else f"{u.ttft_slo_s:g}",
            "tpot_slo": "" if u.tpot_slo_s is None else f"{u.tpot_slo_s:g}"}


def form_values(params: Mapping[str, str]) -> dict[str, str]:
    """The request's values over a preset's (``preset=chat``: its lengths and SLOs) over the defaults; a preset
    fills only what the query leaves out, so a link to a preset and a form that edits its values both hold."""
    preset = params.get("preset", "")
    given = {k: v for k, v in params.items() if k in FIELDS}
    return {**DEFAULTS, **(preset_values(preset) if preset in USE_CASES else {}), **given}


def _loads(name: str, text: str) -> list[float]:
    load = P.Query({name: text}, (name,)).numbers(name, text)
    if len(load) > MAX_POINTS:
        raise P.FieldError(name, f"{len(load)} values; at most {MAX_POINTS}")
    return load


def kwargs(params: Mapping[str, str]) -> dict:
    """The page's query as serve()'s keyword arguments, each bounded (a bad one: FieldError naming it)."""
    q = P.Query(params, FIELDS)
    v = {k: x for k, x in form_values(params).items() if x.strip()}
    qv = P.Query(v, FIELDS)
    if v.get("preset"):
        qv.choice("preset", tuple(USE_CASES))
    loop = qv.choice("loop", LOOPS, DEFAULTS["loop"])
    P.refuse_emptied(params, [f for f in PREFILLED if f not in LOOPS or f == loop])  # the other loop's is hidden
    method = qv.choice("method", METHODS, DEFAULTS["method"])
    load = _loads(loop, v.get(loop, ""))
    if method == "simulate" and len(load) > SIM_MAX_POINTS:
        raise P.FieldError(loop, f"the simulator runs at most {SIM_MAX_POINTS} points on the web; "
                                 f"{len(load)} given")
    hardware = qv.text("hardware", DEFAULTS["hardware"])
    P.hardware_by_name(hardware)
    kw = {"model": P.model_from(q, DEFAULTS["model"]), "hardware": hardware.lower(), loop: load, "method": method,
          "engine": qv.choice("engine", ENGINES), "protocol": qv.choice("protocol", PROTOCOLS), "kv_dtype": "auto" if v.get("kv_dtype") == "auto" else qv.dtype("kv_dtype", None),
          "weight_dtype": qv.dtype("weight_dtype", None),
          "efficiency": qv.choice("efficiency", P.CHOICES["efficiency"]),
          **{n: qv.number(n, None) for n in NUMBERS}}
    if v.get("set"):  # the custom-chip panel's what-if fields
        kw["hardware"] = P.hardware_with_set(kw["hardware"], P.set_text(v["set"]))
    kw["mode"] = qv.choice("mode", MODES, DEFAULTS["mode"])
    pools = {k: qv.number(k, None) for k in POOLS}
    pools |= {k: {"true": True, "false": False}[qv.choice(k, ("true", "false"))] for k in POOL_ATTN if v.get(k)}
    kw["pools"] = {k: x for k, x in pools.items() if x is not None} or None  # serve refuses them with agg
    return kw


def api_url(params: Mapping[str, str]) -> str:
    """/api/serve for the question on screen (lists as the CLI writes them)."""
    v = {k: x for k, x in form_values(params).items() if x.strip() and k not in ("loop", "preset")}
    loop = v.get("loop", form_values(params)["loop"])
    v.pop("rate" if loop == "concurrency" else "concurrency", None)
    return "/api/serve?" + urlencode(v)


def view(params: Mapping[str, str]) -> dict:
    kw = kwargs(params)
    res = serve(**kw)
    rows = list(res.rows())
    key = wp.load_key(rows)
    on = f"<br><sub>{rows[0]['plan']} on {rows[0]['chips']} chips, {res.extra['engine']}</sub>"
    slos = {"ttft_slo": kw["ttft_slo"], "tpot_slo": kw["tpot_slo"]}
    figures = {"curve": wp.throughput_curve(rows, f"Tokens/s per chip vs per user{on}"),
               "latency": wp.ttft_tpot_vs_load(rows, f"TTFT and TPOT vs {key}{on}", slos,
                                               percentiles=kw["method"] == "simulate"),
               "cost": wp.cost_vs_load(rows, f"$ per M tokens vs {key}{on}"),
               "energy": wp.energy_curve(rows, f"Tokens/s per all-in MW vs interactivity{on}")}
    best = max(rows, key=lambda r: (r["goodput_requests_per_s"] or 0, r["tokens_per_s_per_chip"] or 0))
    # the analytic steady state has means only: its 'p99' fields repeat them, so they are not shown as percentiles
    hidden = () if kw["method"] == "simulate" else ("ttft_p99_s", "tpot_p99_s")
    return {"rows": rows, "columns": [c for c in COLUMNS if c not in hidden and any(r.get(c) is not None for r in rows)],
            "title": res.title, "overrides": res.extra.get("hardware_overrides"), "notes": list(res.notes), "explain": plain(list(res.explain())),
            "figures": figures, "best": best, "load_key": key, "plan": res.extra.get("plan"),
            "percentiles": kw["method"] == "simulate", "step_of_bound": STEP_OF_BOUND[kw["mode"]],
            "headers": {**HEADERS, "bound": f"bound ({STEP_OF_BOUND[kw['mode']]})"},
            "layout_rule": res.extra.get("layout_rule", "each pool's layout given, else the best for its load"),
            "dtype_label": res.extra.get("dtypes", "")}


# headers that say which step a value is of (Serve's bound is of one decode step or prefill pass)
HEADERS = {"ttft_s": "TTFT (mean)", "tpot_s": "TPOT (mean)"}
STEP_OF_BOUND = {"agg": "the mean step: decode + its prefill chunks", "disagg": "the decode pool's step"}
