"""The Serve page's serving mode and its one request (issue 30: D2 and "a prefill + decode total for one chat
request on Serve").

Aggregated (``mode=agg``, the default): the pass is on the page's layout (chips, tp, ep, ...). Disaggregated
(``mode=disagg``): a prefill pool and a decode pool, each with its chips and layout (``prefill_chips``,
``prefill_tp``, ``prefill_ep``, ``prefill_attn_dp``, ...; serve's pools, as ``/api/serve`` and ``tokenomy serve
--mode disagg --prefill-chips ...`` take them); the pass shown is the pass kind's pool (decode: the decode pool).

The request: ``isl`` in, ``osl`` out, among ``batch`` concurrent users (the page's batch) — the ``serve`` answer
(answers.workloads) on the point's layout (agg) or on the pools (disagg), its TTFT, TPOT and prices turned into one
request's total by answers.request_total.one_request.
"""

from __future__ import annotations

from typing import Mapping

from tokenomy.answers.request_total import one_request
from tokenomy.web import params as P

POOL_KEYS = ("chips", "tp", "ep", "pp", "dp", "attn_dp")
POOL_FIELDS = tuple(f"{pool}_{k}" for pool in ("prefill", "decode") for k in POOL_KEYS)
REQUEST_FIELDS = ("mode", "isl", "osl") + POOL_FIELDS
DEFAULTS = {"mode": "agg", "isl": "2048", "osl": "500"}
AGG_LAYOUT = ("chips", "tp", "ep", "pp", "dp", "redundant_experts", "attn_dp", "kv_batch", "layout")
SHARED = ("model", "config", "hardware", "set", "weight_dtype", "kv_dtype", "efficiency", "usd_per_chip_hour")


def split(kind: str, q: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(the pass's query, the request's fields). Disaggregated: the pass kind's pool becomes the pass's chips and
    layout; the aggregated layout fields are refused by name (as serve refuses them with pools)."""
    req = {**DEFAULTS, **{k: q.pop(k) for k in REQUEST_FIELDS if k in q}}
    mode = P.Query(req, REQUEST_FIELDS).choice("mode", ("agg", "disagg"), "agg")
    for name in ("isl", "osl"):  # '2k' -> '2048': the grammar's value, as serve will read it
        req[name] = str(int(P.Query(req, REQUEST_FIELDS).number(name, None)))
    pools = [k for k in POOL_FIELDS if k in req]
    if mode == "agg":
        if pools:
            raise P.FieldError(pools[0], "a pool's field: only with mode=disagg (the aggregated layout is tp, ep, ...)")
        return q, req
    given = [k for k in AGG_LAYOUT if k in q]
    if given:
        raise P.FieldError(given[0], "with mode=disagg, give each pool's (prefill_tp, decode_tp, ...)")
    for pool in ("prefill", "decode"):
        if f"{pool}_attn_dp" in req:  # checked by its own name before it stands for the pass's attn_dp
            P.Query(req, REQUEST_FIELDS).choice(f"{pool}_attn_dp", ("true", "false"))
        if f"{pool}_chips" not in req:
            raise P.FieldError(f"{pool}_chips", "required with mode=disagg: the chips of each pool")
    for k in POOL_KEYS:
        if f"{kind}_{k}" in req:
            q[k] = req[f"{kind}_{k}"]
    return q, req


def request_view(kind: str, q: dict[str, str], req: dict[str, str], row: dict, plan: dict) -> dict | None:
    """One request of ``isl`` in, ``osl`` out among the page's batch of users, or why there is none (a layout that
    is a bound, a deployment serve refuses for a reason that is not a field the query gave)."""
    if plan["ideal"]:
        return {"why": "the ideal layout is a bound, not a deployment: choose a real layout to serve a request"}
    isl, osl = int(req["isl"]), int(req["osl"])
    query = {k: q[k] for k in SHARED if k in q} | {"concurrency": str(row["batch"]), "isl": str(isl),
                                                   "osl": str(osl), "mode": req["mode"]}
    if req["mode"] == "disagg":
        query |= {k: req[k] for k in POOL_FIELDS if k in req}
    else:
        query |= {k: str(plan[k]).lower() for k in ("tp", "ep", "pp", "dp", "redundant_experts", "kv_batch")}
        if plan["ep"] > 1:
            query["attn_dp"] = str(plan["attn_dp"]).lower()
    try:
        served = P.answer("serve", query).rows()[0]
    except ValueError as e:
        if P.field_of(e, query) in set(req):
            raise  # the request's own value (isl, osl, a pool's): a 422 naming it; the pass above stands otherwise
        return {"why": P.message_of(e)}
    return {**one_request(served, isl, osl), "users": row["batch"], "mode": req["mode"]}


def form_values(params: Mapping[str, str]) -> dict[str, str]:
    """The request's fields as the form shows them (typed values kept, even invalid)."""
    return {**DEFAULTS, **{k: v for k, v in params.items() if k in REQUEST_FIELDS}}
