"""The Serve page's question: one model on one hardware at one batch and context, and the sweeps around it.

The point is the ``decode|prefill`` answer (tokenomy.answers.passes) for the query: its row (``step_s`` the
calibrated estimate, ``roofline_step_s`` the bound, the layout ``plan``), its header (``Result.title``: the
layout rule and efficiency set) and its derivation (``Result.explain()``). The sweeps are the same answer over
batch (step time and its terms for the point's kind; decode $/Mtok and the Pareto front) and over context on the
point's layout; the roofline plot's op points come from ``core.op_costs`` (per chip, per micro-batch).
"""

from __future__ import annotations

import re
from typing import Mapping

from tokenomy.answers.launch import EMIT, launch_commands
from tokenomy.answers.resolve import deployment, layout_of
from tokenomy.core.layout import Layout
from tokenomy.core.op_costs import op_costs
from tokenomy.plots import serving as sp
from tokenomy.plots.roofline import roofline_figure
from tokenomy.units import fmt_seconds
from tokenomy.web import params as P
from tokenomy.web import op_breakdown as OB
from tokenomy.web import serve_request as R

LAYOUT_FIELDS = ("tp", "ep", "pp", "dp", "redundant_experts", "attn_dp", "kv_batch", "layout", "hop_latency")
SERVE_FIELDS = ("emit", "kind", "model", "config", "hardware", "chips", "batch", "context", "len_pass", "weight_dtype",
                "kv_dtype", "efficiency", "usd_per_chip_hour", "set") + LAYOUT_FIELDS + R.REQUEST_FIELDS
DEFAULTS = {"kind": "decode", "model": "llama-3.1-70b", "hardware": "hgx-h100-8", "batch": "64", "context": "8192",
            "kv_dtype": "bf16", "efficiency": "calibrated"}
PREFILLED = ("batch", "context")  # number fields the form shows filled: sent back empty, they are refused
BATCH_SWEEP = ",".join(str(2**i) for i in range(0, 17))  # 1 .. 65,536
CONTEXT_SWEEP = ",".join(str(2**i) for i in range(7, 21))  # 128 .. 1M
_MARKUP = re.compile(r"\[/?(bold|red|green|yellow|dim|italic|cyan)\]")


def form_values(params: Mapping[str, str]) -> dict[str, str]:
    """What the form shows: the request's values over the defaults (kept as typed, even when invalid)."""
    return {**DEFAULTS, **R.DEFAULTS, **{k: v for k, v in params.items() if k in SERVE_FIELDS}}


def plain(lines: list[str]) -> list[str]:
    """Rich console markup off the explain lines."""
    return [_MARKUP.sub("", s) for s in lines]


def parse_serve(params: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """The kind and the decode|prefill query of the page (one batch, one context)."""
    P.Query(params, SERVE_FIELDS)
    P.refuse_emptied(params, PREFILLED + ("isl", "osl"))
    values = {k: v for k, v in form_values(params).items() if v.strip()}
    kind = P.Query(values, SERVE_FIELDS).choice("kind", ("decode", "prefill"), "decode")
    if "len_pass" in values:  # decode ignores it, but a bad number is refused, never silently dropped
        P.Query(values, SERVE_FIELDS).number("len_pass", None)
    q = {k: v for k, v in values.items() if k != "kind" and not (kind == "decode" and k == "len_pass")}
    if "config" in q:
        q.pop("model", None)
    for name in PREFILLED:  # one point: one value each (the sweeps around it are the page's own)
        P.Query(q, tuple(q)).number(name, None)
    return kind, q


def critical_path(row: dict) -> list[dict]:
    """The step as the engine adds it up (core/engine.py: stage = max(compute, memory) + phi·min + TP + EP − hidden
    by two-batch overlap + the kernels' floor + host work − hidden under the GPU; step = stage + pipeline), one row
    per term with its signed seconds, so the rows shown add up to the step shown. ``binds``: the row the binding
    term names. Terms that are zero and cannot be otherwise on this layout are left out (no EP rows without EP)."""
    top = "compute" if row["compute_s"] >= row["memory_s"] else "memory"
    other = "memory" if top == "compute" else "compute"
    bound = row["bound"]
    out = [(top, row[f"{top}_s"], bound == top),
           (f"{other} {fmt_seconds(row[f'{other}_s'])} overlaps it; the part not hidden (phi·min)", row["overlap_s"],
            False),
           ("TP all-reduce", row["tp_comm_s"], bound == "comms")]
    if row["ep_comm_s"] or row["ep_hidden_s"]:
        out += [("EP dispatch + combine", row["ep_comm_s"] + row["ep_hidden_s"], bound == "comms"),
                ("hidden by two-batch overlap (eps)", -row["ep_hidden_s"], False)]
    out += [("kernel launch floor ((1 + eps)·K·kappa)", row["floor_s"], bound == "overhead"),
            ("host scheduling (o_step + o_seq·b)", row["host_work_s"], bound == "overhead")]
    if row["host_hidden_s"]:
        out.append(("hidden under the GPU (host overlap h)", -row["host_hidden_s"], False))
    if row["pipeline_s"]:
        out.append(("pipeline: the other stages, micro-batches and hops", row["pipeline_s"], bound == "pipeline hop"))
    return [{"term": t, "seconds": x, "binds": b} for t, x, b in out]


def _sweep(kind: str, q: dict, plan: dict, **grid) -> list[dict]:
    """The ``kind`` answer over a grid on the point's layout (so the curves pass through the point)."""
    degrees = ({"layout": "ideal"} if plan["ideal"] else
               {k: str(plan[k]).lower() for k in ("tp", "ep", "pp", "dp", "redundant_experts", "attn_dp", "kv_batch")})
    drop = ("tp", "ep", "pp", "dp", "redundant_experts", "attn_dp", "kv_batch", "layout", "chips") + (("len_pass",) if kind == "decode" else ())
    keep = {k: v for k, v in q.items() if k not in drop}  # hop_latency stays: it is part of the point
    return P.answer(kind, {**keep, **degrees, **grid}).rows()


def serve_view(kind: str, q: dict[str, str]) -> dict:
    """Everything the results panel shows: the point's row, header, explain lines, figures."""
    emit = q.pop("emit", None)  # not the pass's: the launch command of its layout (answers/launch.py)
    q, req = R.split(kind, dict(q))  # the serving mode and its request; disagg: the pass on its kind's pool
    res = P.answer(kind, q)
    row, plan = res.rows()[0], res.extra["plan"]
    kw = P.answer_kwargs(kind, q)
    layout = (Layout.even_split(plan["chips"]) if plan["ideal"] else
              layout_of(*(plan[k] for k in ("tp", "ep", "pp", "dp", "redundant_experts", "attn_dp", "kv_batch"))))
    dep = deployment(kw["model"], kw["hardware"], layout=layout, weight_dtype=kw.get("weight_dtype"),
                     kv_dtype=kw.get("kv_dtype", "bf16"))
    compute_dtype, _ = dep.compute
    figures, op_rows = {}, []
    if row["fits"]:  # a configuration that does not fit gets no times, so no point on the roofline
        ops = op_costs(dep, batch=row["batch"], context=row["context"], len_pass=row["len_pass"])  # busiest chip
        chip, m = dep.hardware.chip, plan["microbatches"]  # a step runs M micro-batches through each stage
        op_rows = OB.op_rows(ops, chip.peak_flops_per_s[compute_dtype], chip.hbm_bytes_per_s)
        figures["roofline"] = roofline_figure(
            ops, peak_flops_per_s=chip.peak_flops_per_s[compute_dtype], hbm_bytes_per_s=chip.hbm_bytes_per_s,
            pass_flops=m * sum(o.flops for o in ops), pass_bytes=m * sum(o.bytes for o in ops),
            pass_step_s=row["step_s"], chips=1,
            title=f"{kind} roofline: {row['batch'] * row['len_pass']:,} new tokens, context {row['context']:,}")
    on = f"<br><sub>on {plan['label']}, {row['efficiency']}</sub>"  # second line: plots are half the page wide
    marks = {"this batch": row["batch"]}
    Kind = kind.capitalize()  # every sweep is the page's own pass kind on the page's own layout
    brows = _sweep(kind, q, plan, batch=BATCH_SWEEP, context=str(row["context"]))
    figures["latency"] = sp.latency_vs_batch(brows, f"{Kind} step time vs batch at context {row['context']:,}{on}",
                                             marks)
    figures["cost"] = sp.cost_vs_batch(brows, f"{Kind} $/Mtok and MFU vs batch{on}", marks)
    window = dep.model.max_position_embeddings or float("inf")  # the sweep stays inside the model's context window
    contexts = ",".join(c for c in CONTEXT_SWEEP.split(",") if row["len_pass"] <= int(c) <= window)
    figures["mfu"] = sp.mfu_vs_context(_sweep(kind, q, plan, batch=str(row["batch"]), context=contexts or
                                              str(row["context"])),
                                       f"{Kind} MFU vs context at batch {row['batch']:,}{on}")
    figures["pareto"] = sp.pareto(brows, f"Tokens/s per chip vs per user ({kind}){on}")
    launch = [] if not emit else launch_commands(
        kw["model"], emit=P.Query({"emit": emit}, ("emit",)).choice("emit", EMIT, None), layout=plan,
        weight_dtype=kw.get("weight_dtype"), kv_dtype=kw.get("kv_dtype"), max_batch=row["batch"])
    request = R.request_view(kind, q, req, row, plan) if row["fits"] else None
    return {"one_request": request, "mode": req["mode"], "launch": launch, "row": row, "kind": kind, "critical": critical_path(row) if row["fits"] else [], "title": res.title, "overrides": res.extra.get("hardware_overrides"), "layout_rule": res.extra["layout_rule"], "plan": plan,
            "explain": plain(res.explain()), "notes": list(res.notes), "figures": figures, "ops": op_rows, "kinds": OB.kind_rows(op_rows), "chips": plan["chips"],
            "label": f"{dep.model.name} on {plan['chips']} × {dep.hardware.name}", "compute_dtype": compute_dtype,
            "weight_dtype": kw.get("weight_dtype"), "kv_dtype": kw.get("kv_dtype", "bf16")}
