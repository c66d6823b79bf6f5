"""The Lecture page: the lecture's argument as it goes (reference/lecture.md §2), each step a figure and a paragraph
whose numbers are computed by the answers on the lecture's setting (DeepSeek-V3 on a GB200 NVL72 rack, fp8 KV,
8k context; a 32k-token prefix on 8 x H200; 50 M tokens/s for 60 days), then every claim of §4.1 with its value
and unit, computed, and the same claims on today's hardware.

The figures are the plots the other pages draw (tokenomy.plots) from the answers they call: ``batch`` (cost and
step time vs batch, with the balance batch B* = R·sparsity marked), ``latency`` (the departure schedule's per-user
vs per-chip front), ``context`` (MFU vs context), ``lifecycle`` (pre-training vs RL vs inference) and ``cache``
(a cached prefix's cost per tier vs hold time). The lecture has no inputs: the page is computed once per process.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Mapping
from urllib.parse import urlencode

from tokenomy.formatting import fmt_human, fmt_unit
from tokenomy.lecture_claims.claim_units import unit_of_claim
from tokenomy.plots import serving as sp
from tokenomy.plots import training as tp
from tokenomy.web import params as P
from tokenomy.web.views import cache_figures

_DSV3 = {"model": "deepseek-v3", "hardware": "gb200-nvl72", "context": "8192", "kv_dtype": "fp8"}
CACHE = {"model": "deepseek-v3", "hardware": "hgx-h200-8", "kv_dtype": "fp8", "prefix_tokens": "32768"}
DEMAND = {"demand_tokens_per_s": "5e7", "period_days": "60"}  # L12: one model's share of the lecture's traffic
# Each claim of lecture.md §4.1, preset on the page where its quantity shows (mostly Serve: the lecture's model
# is DeepSeek-like on a GB200 NVL72 rack). tests/web checks every claim the CLI lists has one, and that each loads.
LECTURE_LINKS: dict[str, tuple[str, dict]] = {
    "L1": ("serve", {**_DSV3, "batch": "2400"}),
    "L2": ("serve", {"model": "llama-3.1-70b", "hardware": "hgx-h100-8", "weight_dtype": "fp8", "batch": "300",
                     "context": "2048"}),
    "L3": ("serve", {**_DSV3, "batch": "4800"}),
    "L4": ("serve", {**_DSV3, "batch": "2000"}),
    "L5": ("serve", {**_DSV3, "batch": "2000"}),
    "L6": ("serve", {"model": "kimi-k2-instruct", "hardware": "vr200-nvl144", "batch": "1", "context": "8192"}),
    "L7": ("serve", {**_DSV3, "batch": "2000"}),
    # the lecture's 200k lies beyond these models' windows (the one window rule refuses it): their whole window
    "L8": ("serve", {**_DSV3, "batch": "256", "context": "160k"}),
    "L9": ("serve", {"model": "llama-3.1-70b", "hardware": "hgx-h100-8", "kv_dtype": "fp8", "batch": "1",
                     "context": "128k"}),
    "L10": ("serve", {**_DSV3, "batch": "256", "context": "100000"}),
    "L11": ("lifecycle", {"demand_tokens_per_s": "5e8", "period_days": "60"}),
    "L12": ("lifecycle", DEMAND),
    "L13": ("lifecycle", {"infer": "true", "active_params": "1e11"}),
    "L14": ("lifecycle", {"infer": "true", **DEMAND, "active_params": "1e11"}),
    "L15": ("lifecycle", {"rl_flops_factor": "3", "rl_penalty": "3", "inference_penalty": "3"}),
    "L16": ("plan", {"model": "deepseek-v3", "hardware": "gb200-nvl72"}),
    "L17": ("serve", {**_DSV3, "ep": "64", "pp": "4", "batch": "2400", "context": "100000"}),
    "L18": ("serve", {**_DSV3, "ep": "64", "batch": "2000"}),
    "L19": ("serve", {"model": "llama-3.1-70b", "hardware": "hgx-h100-8", "batch": "64", "context": "8192"}),
    "L20": ("serve", {**_DSV3, "ep": "64", "pp": "4", "batch": "2000"}),
    "L21": ("serve", {**_DSV3, "batch": "2000"}),
    "L22": ("serve", {**_DSV3, "kind": "prefill", "batch": "8"}),
    "L23": ("serve", {**_DSV3, "kind": "prefill", "batch": "8", "context": "160k"}),
    "L24": ("cache", {**{k: v for k, v in CACHE.items() if k != "prefix_tokens"}, "hold": "300,3600"}),
    "L25": ("serve", {**_DSV3, "batch": "1"}),
    "L26": ("serve", {"model": "kimi-k2-instruct", "hardware": "gb200-nvl72", "batch": "1", "context": "8192"}),
    "L27": ("serve", {**_DSV3, "batch": "2000", "usd_per_chip_hour": "2"}),
    "L28": ("serve", {"model": "deepseek-v3", "hardware": "hgx-h200-8", "kv_dtype": "fp8", "batch": "64",
                      "context": "8192"}),
}


def claim_link(claim_id: str) -> str | None:
    hit = LECTURE_LINKS.get(claim_id)
    return None if hit is None else f"/{hit[0]}?{urlencode(hit[1])}"


def _f(key: str, v) -> str:
    return "-" if v is None else fmt_human(key, v)


def _batch_step(d: dict) -> dict:
    """§2.1-2.2: cost per token falls as 1/B until the weights are paid for at the balance batch B*."""
    s, on = d["summary"], f"DeepSeek-V3 on {d['plan']['label']}"
    marks = {"lecture's B* = R·sparsity": s["lecture_balance_batch"], "B* (this chip's terms)": s["balance_batch"],
             "max batch that fits": s["max_batch_fit"]}
    prose = (f"At batch 1 every token pays for reading all the weights: {_f('usd_per_mtok', s['cost_batch1_usd_per_mtok'])} "
             f"per M tokens. Batching shares that read: cost falls as 1/B until the weight fetch equals the weight "
             f"multiply at B* ≈ R × sparsity = {s['lecture_ratio']:.0f} FLOP/B × {s['sparsity']:.3g} = "
             f"{fmt_unit(s['lecture_balance_batch'], 'sequences')} (the lecture's 300 × 8 = 2,400 with its "
             f"sparsity of 8), then flattens at {_f('usd_per_mtok', s['cost_floor_usd_per_mtok'])} per M tokens: "
             f"unbatched serving is {fmt_unit(s['unbatched_penalty_no_kv'], 'x')} dearer (KV ignored; "
             f"{fmt_unit(s['unbatched_penalty'], 'x')} at this context). The lecture: \"a thousand times worse\".")
    return {"id": "batch", "title": "One forward pass: batch until the weights are paid for", "section": "§2.1-2.2",
            "claims": ("L1", "L2", "L3", "L25", "L27"), "prose": prose,
            "figures": {"lecture-cost": sp.cost_vs_batch(d["rows"], f"$/M tokens and MFU vs batch: {on}", marks)}}


def _latency_step(d: dict, lat: dict) -> dict:
    """§2.3-2.4: a train departs every step; one unit's throughput against the world's traffic."""
    s, drain = d["summary"], lat["drain"][0]
    # the world's traffic the lecture compares a unit with, as the latency answer states it (unit / its share)
    world = next(r["unit_tokens_per_s"] / r["fraction_of_global"] for r in lat["schedule"] if r.get("fraction_of_global"))
    prose = (f"A step reads what HBM holds once: its drain time, capacity / bandwidth = "
             f"{_f('hbm_bytes', drain['hbm_bytes'])} / {_f('hbm_bytes_per_s', drain['hbm_bytes_per_s'])} = "
             f"{_f('drain_s', drain['drain_s'])} on {drain['chip']} (the lecture: about 20 ms on many generations, "
             f"15 ms on Rubin). A batch leaves every step, so a user waits up to one step and rides one: at the "
             f"operating batch of {fmt_unit(s['operating_batch'], 'sequences')} the step is "
             f"{_f('step_s', s['operating_step_s'])} and the worst case {_f('worst_case_latency_s', s['worst_case_latency_s'])}. "
             f"One rack then serves {fmt_unit(s['operating_tokens_per_s'], 'tok/s')}, about "
             f"{fmt_unit(s['operating_tokens_per_s'] / world, 'share')} of the {fmt_unit(world, 'tok/s')} the "
             f"lecture takes for a frontier provider (\"one-thousandth of that\").")
    on = f"DeepSeek-V3 on {d['plan']['label']}"
    return {"id": "latency", "title": "Latency: the train-departure schedule", "section": "§2.3-2.4",
            "claims": ("L4", "L5", "L6", "L7"), "prose": prose,
            "figures": {"lecture-latency": sp.latency_vs_batch(d["rows"], f"Step time vs batch: {on}"),
                        "lecture-front": sp.pareto(lat["schedule"], f"Tokens/s per chip vs per user: {on}")}}


def _context_step(c: dict) -> dict:
    """§2.5: past the crossover context the KV read binds and MFU falls as 1/context."""
    s = c["summary"]
    prose = (f"Each token of context adds {_f('bytes', s['kv_bytes_per_token'])} of KV to read per step. "
             f"The KV read equals the weight multiply at len* = N_active / (R · bytes per token): "
             f"{fmt_unit(s['lecture_crossover_large_batch'], 'tokens')} by the lecture's formula, {fmt_unit(s['crossover_large_batch'], 'tokens')} "
             f"with this rack's terms at a large batch. Past it decode is memory-bound and MFU falls as 1/context "
             f"(twice len* halves it: the lecture's 50%); at batch {s['batch']:,} the KV of at most "
             f"{fmt_unit(s['max_context_fit'], 'tokens')} of context fits. Sparse attention bends the KV term to grow slower than context.")
    return {"id": "context", "title": "Context: memory-bound past the crossover", "section": "§2.5",
            "claims": ("L8", "L9", "L10"), "prose": prose,
            "figures": {"lecture-context": sp.mfu_vs_context(c["rows"], f"MFU vs context at batch {s['batch']:,}: "
                                                             f"DeepSeek-V3 on {c['plan']['label']}", s)}}


def _lifecycle_step(life: dict) -> dict:
    """§2.10: equalising pre-training, RL and inference cost over-trains the model ~100x."""
    rate, days = float(DEMAND["demand_tokens_per_s"]), DEMAND["period_days"]
    prose = (f"A model serving {fmt_unit(rate, 'tok/s')} for {days} days answers {fmt_unit(life['d_inf'], 'tokens')}. "
             f"For the quality of a Chinchilla-optimal 100 B model, the size that minimises pre-training + RL + "
             f"inference dollars has {_f('n_active_params', life['n_active_params'])} active parameters trained on "
             f"{fmt_unit(life['d_pre'], 'tokens')}: {fmt_unit(life['overtraining'], 'x')} Chinchilla's 20 tokens "
             f"per parameter (the lecture: ~100x). Inference is {fmt_unit(life['inference_fraction'], 'share')} "
             f"of the {_f('total_usd', life['total_usd'])} total; the model sized as if inference were free would "
             f"cost {_f('ignoring_inference_total_usd', life['ignoring_inference_total_usd'])} in all.")
    return {"id": "lifecycle", "title": "Cost equalisation: over-train for inference", "section": "§2.10",
            "claims": ("L11", "L12", "L13", "L14", "L15"), "prose": prose,
            "figures": {"lecture-lifecycle": tp.lifecycle_split(life)}}


def _cache_step(k: dict) -> dict:
    """§2.13: a cached prefix lives in the tier whose drain time matches how long it is held."""
    tiers = ", ".join(f"{e['tier']} from {_f('from_s', e['from_s']) if e['from_s'] else 'the start'}"
                      for e in k["envelope"])
    prose = (f"A {k['prefix_tokens']:,}-token prefix is {_f('bytes', k['prefix_bytes'])} of KV; recomputing it (a "
             f"prefill) costs {_f('remat_usd', k['remat_usd'])}. Holding it costs rent by the second in each tier; the "
             f"cheapest by hold time: {tiers}. The lecture: HBM for milliseconds, flash for a 5-minute hold, disk "
             f"for an hour, which is why a cache hit is priced at about a tenth of the input.")
    return {"id": "cache", "title": "Prompt caching: the tier by hold time", "section": "§2.13",
            "claims": ("L23", "L24"), "prose": prose, "figures": cache_figures(k, {})}


@lru_cache(maxsize=1)
def _argument() -> tuple[dict, ...]:
    d = P.answer("batch", _DSV3).payload()
    lat = P.answer("latency", _DSV3).payload()
    c = P.answer("context", {k: v for k, v in _DSV3.items() if k != "context"}).payload()
    return (_batch_step(d), _latency_step(d, lat), _context_step(c),
            _lifecycle_step(P.answer("lifecycle", DEMAND).payload()), _cache_step(P.answer("cache", CACHE).payload()))


@lru_cache(maxsize=2)
def _lecture(real: bool) -> list[dict]:
    return P.answer("lecture", {"real": "true"} if real else {}).payload()


def lecture_view(params: Mapping[str, str]) -> dict:
    """The argument's steps, every claim with its value and unit, computed, tolerance, verdict and link; then the
    same claims on real hardware."""
    P.Query(params, ())
    claims = []
    for c in _lecture(False):
        unit = unit_of_claim(c["id"])
        claims.append({**c, "link": claim_link(c["id"]), "lecture_shown": fmt_unit(c["lecture_value"], unit),
                       "computed_shown": fmt_unit(c["computed_value"], unit)})
    real = [{**r, "link": claim_link(r["id"]), "lecture_shown": fmt_unit(r["lecture_value"], r["unit"]),
             "real_shown": fmt_unit(r["real_value"], r["unit"])} for r in _lecture(True)]
    steps = _argument()
    return {"claims": claims, "real": real, "agree": sum(c["ok"] for c in claims), "steps": steps,
            "figures": {k: f for s in steps for k, f in s["figures"].items()}}
