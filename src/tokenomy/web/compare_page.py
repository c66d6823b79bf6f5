"""The Compare page: two or three configurations of one pass (decode|prefill) side by side on the same plots.

A configuration is a column of the form, its query keys prefixed by the column (``a.model``, ``b.hardware``,
``c.tp``, ...): model, hardware, chips, layout degrees or ``layout=ideal``, weight/KV dtype, efficiency and price.
The pass kind, the batch and the context are the page's (one question asked of every configuration). Columns a
and b are always there; c is there when any ``c.*`` value is given. Each column is the ``decode|prefill`` answer
(tokenomy.answers.passes, through web/params.py as /api/decode does) at the page's batch — its headline row —
and the same answer over the batch sweep on the layout that point resolved to (so each curve passes through its
point, as on the Serve page). Bad input in a column is a FieldError naming ``<column>.<field>``.
"""

from __future__ import annotations

from typing import Mapping
from urllib.parse import urlencode

from tokenomy.headers import header
from tokenomy.plots import compare as cp
from tokenomy.web import params as P
from tokenomy.web.serve import BATCH_SWEEP

COLUMNS = ("a", "b", "c")
OPTIONAL = ("c",)  # a column that is left out when none of its fields is given
COLUMN_FIELDS = ("model", "hardware", "chips", "tp", "ep", "pp", "dp", "layout", "weight_dtype", "kv_dtype",
                 "efficiency", "usd_per_chip_hour")
SHARED = ("kind", "batch", "context")
FIELDS = SHARED + tuple(f"{c}.{f}" for c in COLUMNS for f in COLUMN_FIELDS)
DEFAULTS = {"kind": "decode", "batch": "64", "context": "8192",
            "a.model": "llama-3.1-70b", "a.hardware": "hgx-h100-8",
            "b.model": "llama-3.1-70b", "b.hardware": "hgx-b200-8"}
DEGREES = ("tp", "ep", "pp", "dp", "redundant_experts", "attn_dp", "kv_batch")
HEADLINE = tuple((k, header(k)) for k in ("plan", "chips", "step_s", "bound", "roofline_step_s",
                                          "tokens_per_s_per_chip", "tokens_per_s_per_user", "usd_per_mtok", "mfu",
                                          "memory_per_chip_bytes", "fits"))  # people's headers: tokenomy.headers


def form_values(params: Mapping[str, str]) -> dict[str, str]:
    """What the form shows: the request's values over the defaults (kept as typed, even when invalid)."""
    return {**DEFAULTS, **{k: v for k, v in params.items() if k in FIELDS}}


def _in_column(col: str, given: dict, fn):
    """``fn()``, its ValueError re-raised as a FieldError naming ``<col>.<field>`` (the page's own fields stay)."""
    try:
        return fn()
    except ValueError as e:
        field = P.field_of(e, given)
        raise P.FieldError(field if field in SHARED else f"{col}.{field}", P.message_of(e)) from None


def parse(params: Mapping[str, str]) -> tuple[str, list[tuple[str, dict[str, str]]]]:
    """The pass kind and each present column's decode|prefill query (its fields, the page's batch and context)."""
    P.Query(params, FIELDS)  # an unknown key (a typo, a fourth column) is refused by name
    P.refuse_emptied(params, ("batch", "context"))
    v = {k: x.strip() for k, x in form_values(params).items() if x.strip()}
    q = P.Query(v, FIELDS)
    kind = q.choice("kind", ("decode", "prefill"), "decode")
    for name in ("batch", "context"):
        if q.number(name, None) is None:
            raise P.FieldError(name, "required: a positive integer")
    configs = []
    for col in COLUMNS:
        fields = {f: v[f"{col}.{f}"] for f in COLUMN_FIELDS if f"{col}.{f}" in v}
        if not fields and col in OPTIONAL:
            continue
        for need in ("model", "hardware"):
            if need not in fields:
                raise P.FieldError(f"{col}.{need}", "required: a catalog name" +
                                   (f" (or clear configuration {col.upper()})" if col in OPTIONAL else ""))
        configs.append((col, {**fields, "batch": v["batch"], "context": v["context"]}))
    return kind, configs


def sweep_query(q: dict[str, str], plan: dict, fits: bool) -> dict[str, str]:
    """The column's query over the batch sweep on the layout its point resolved to (ideal: the same chips). A
    point that does not fit on a layout the answer chose says nothing of a good layout: then the answer chooses
    one for the sweep (the column's query as given), so the configuration still has a curve."""
    chosen = not any(k in q for k in ("layout",) + DEGREES)
    if plan["ideal"] or (chosen and not fits):
        return {**q, "batch": BATCH_SWEEP}
    keep = {k: x for k, x in q.items() if k not in ("chips", "layout") + DEGREES}
    return {**keep, **{k: str(plan[k]).lower() for k in DEGREES}, "batch": BATCH_SWEEP}


def label_of(col: str, q: dict[str, str], plan: dict) -> str:
    """A configuration as its traces and table column name it: letter, model, chips x hardware, the layout of its
    curve, and what differs from the defaults (dtypes, roofline efficiency, price)."""
    extra = ["ideal even split" if plan["ideal"] else plan["label"]]
    if q.get("weight_dtype"):
        extra.append(f"weights {q['weight_dtype']}")
    if q.get("kv_dtype", "bf16") != "bf16":
        extra.append(f"KV {q['kv_dtype']}")
    if q.get("efficiency") == "roofline":
        extra.append("roofline")
    if q.get("usd_per_chip_hour"):
        extra.append(f"${q['usd_per_chip_hour']}/chip-h")
    hardware = P.hardware_by_name(q["hardware"]).name
    return f"{col.upper()}: {q['model']} on {plan['chips']} × {hardware} ({', '.join(extra)})"


def column(kind: str, col: str, q: dict[str, str]) -> dict:
    """One configuration: its headline row at the page's batch, its sweep, its label and its /api link."""
    res = _in_column(col, q, lambda: P.answer(kind, q))
    row, plan = res.rows()[0], res.extra["plan"]
    swept = sweep_query(q, plan, row["fits"])
    curve = _in_column(col, swept, lambda: P.answer(kind, swept))  # its plan: the point's, unless re-chosen
    rows = curve.rows()
    return {"col": col, "label": label_of(col, q, curve.extra["plan"]), "row": row, "plan": plan, "rows": rows, "title": res.title,
            "layout_rule": res.extra["layout_rule"], "api": f"/api/{kind}?" + urlencode(q)}


def view(params: Mapping[str, str]) -> dict:
    """Everything the results panel shows: a column per configuration, the headline table, three figures."""
    kind, configs = parse(params)
    cols = [column(kind, col, q) for col, q in configs]
    series = [(c["label"], c["rows"]) for c in cols]
    batch, context = cols[0]["row"]["batch"], cols[0]["row"]["context"]
    Kind = kind.capitalize()
    figures = {"step": cp.step_vs_batch(series, f"{Kind} step time vs batch at context {context:,}", batch),
               "pareto": cp.pareto_curves(series, f"Tokens/s per chip vs per user ({kind}, context {context:,})"),
               "cost": cp.cost_vs_batch(series, f"{Kind} $ per M tokens vs batch at context {context:,}", batch)}
    return {"kind": kind, "columns": cols, "figures": figures, "headline": HEADLINE, "batch": batch,
            "context": context}
