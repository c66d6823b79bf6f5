"""The KV tiers page (issue 28): a model serving multi-turn or agentic sessions on a system, with a tiered KV cache
(a catalog/kv_tiering policy) swept over the host DRAM given to it, and what that buys: the hit rate in all and per
tier, TTFT by turn, and $ per M tokens split into input miss, input hit and output (tokenomy.answers.workloads.serve
with ``workload=``, the same answer as ``tokenomy serve --workload`` and ``/api/serve``), beside providers' published
API prices for a miss (base input), a hit (cached input) and output (catalog/prices, each with its source)."""

from __future__ import annotations

from typing import Mapping
from urllib.parse import urlencode

from tokenomy.answers.engines import ENGINES
from tokenomy.answers.workloads import serve
from tokenomy.catalog import loader
from tokenomy.plots import kv_tiers as kp
from tokenomy.web import params as P

WORKLOADS = ("agentic", "multiturn")
METHODS = ("analytic", "simulate")
FIELDS = ("model", "hardware", "workload", "concurrency", "think_s", "kv_tiering", "dram_bytes", "nvme_bytes",
          "engine", "method", "turns")
DEFAULTS = {"model": "llama-3.1-70b", "hardware": "hgx-h100-8", "workload": "agentic", "concurrency": "256",
            "think_s": "", "kv_tiering": "lmcache", "dram_bytes": "0,64G,256G,1024G", "nvme_bytes": "0",
            "engine": "vllm", "method": "analytic", "turns": ""}
PREFILLED = ("concurrency", "dram_bytes")  # shown filled: sent back empty, they are refused
MAX_DRAM_POINTS = 6  # DRAM sizes on one page (each a simulation of the sessions)
COLUMNS = ("dram_bytes", "hit_rate", "ttft_s", "tpot_s", "requests_per_s", "tokens_per_s_per_chip",
           "usd_per_mtok_input_miss", "usd_per_mtok_input_hit", "usd_per_mtok_output", "hit_rate_for_10x")


def policies() -> list[str]:
    return ["none", *loader.kv_tiering_names()]


def form_values(params: Mapping[str, str]) -> dict[str, str]:
    return {**DEFAULTS, **{k: v for k, v in params.items() if k in FIELDS}}


def kwargs(params: Mapping[str, str]) -> dict:
    """The page's query as serve()'s keyword arguments, each bounded (a bad one: FieldError naming it)."""
    P.Query(params, FIELDS)  # an unknown field is refused by name
    v = {k: x for k, x in form_values(params).items() if x.strip()}
    q = P.Query(v, FIELDS)
    P.refuse_emptied(params, PREFILLED)
    hardware = q.text("hardware", DEFAULTS["hardware"])
    P.hardware_by_name(hardware)
    dram = q.numbers("dram_bytes", v["dram_bytes"])
    if len(dram) > MAX_DRAM_POINTS:
        raise P.FieldError("dram_bytes", f"{len(dram)} sizes; at most {MAX_DRAM_POINTS} on the web")
    policy = q.choice("kv_tiering", policies(), DEFAULTS["kv_tiering"])
    nvme = q.number("nvme_bytes", None)
    return {"model": P.model_from(q, DEFAULTS["model"]), "hardware": hardware.lower(),
            "workload": q.choice("workload", WORKLOADS, DEFAULTS["workload"]),
            "concurrency": [q.number("concurrency", None)], "think_s": q.number("think_s", None),
            "turns": q.number("turns", None), "kv_tiering": None if policy == "none" else policy,
            # HBM only: the pre-filled DRAM sweep is not sent; a DRAM or NVMe size the user set is (serve refuses it)
            "dram_bytes": None if policy == "none" and v["dram_bytes"] == DEFAULTS["dram_bytes"] else dram,
            "nvme_bytes": nvme,
            "engine": q.choice("engine", ENGINES), "method": q.choice("method", METHODS, DEFAULTS["method"])}


def api_url(params: Mapping[str, str]) -> str:
    v = {k: x for k, x in form_values(params).items() if x.strip()}
    return "/api/serve?" + urlencode(v)


def view(params: Mapping[str, str]) -> dict:
    kw = kwargs(params)
    res = serve(**kw)
    rows = list(res.rows())
    on = f"<br><sub>{kw['model'].name} on {rows[0]['chips']} chips, {kw['workload']} sessions, {kw['kv_tiering'] or 'HBM only'}</sub>"
    figures = {"hits": kp.hit_vs_dram(rows, f"Hit rate vs host DRAM{on}"),
               "cost": kp.cost_split(rows, f"$ per M tokens: input miss, input hit, output{on}")}
    if any(r.get("ttft_by_turn") for r in rows):
        figures["turns"] = kp.ttft_by_turn(rows, f"TTFT by turn{on}")
    return {"rows": rows, "columns": [c for c in COLUMNS if any(r.get(c) is not None for r in rows)],
            "title": res.title, "notes": list(res.notes), "figures": figures,
            "tiers": res.extra.get("tiers", []), "tier_for_hold": res.extra.get("tier_for_hold", {}),
            "published": res.extra.get("published_prices", [])}
