"""The Serve page's question: one model on one hardware at one batch and context, and the sweeps around it.

The point is what ``tokenomy decode|prefill`` answers: ``run_pass(...).rows()`` with ``explain_pass``, or, with
a parallel layout (tp/ep/pp/dp), the CLI's own layout rows and ``--explain`` text (web/cli_bridge.py). Dollars
are ``econ.cost.usd_per_mtok``; the sweeps are ``econ.batch.batch_rows`` and ``econ.context.context_rows`` (what
``tokenomy batch`` and ``tokenomy context`` print); figures come from ``tokenomy.plots``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Mapping

from tokenomy.arch.model import ModelArch
from tokenomy.core.explain import explain_pass
from tokenomy.core.op_costs import op_costs
from tokenomy.core.roofline import Efficiency
from tokenomy.econ.batch import batch_rows
from tokenomy.econ.context import context_rows
from tokenomy.econ.cost import Serving, usd_per_mtok
from tokenomy.plots import serving as sp
from tokenomy.plots.roofline import roofline_figure
from tokenomy.web import params as P
from tokenomy.web.cli_bridge import SPECS, run_json, run_text

PLAN_FIELDS = ("tp", "ep", "pp", "dp", "hop_latency")
SERVE_FIELDS = ("kind", "model", "config", "hardware", "chips", "batch", "context", "len_pass", "weight_dtype",
                "kv_dtype", "usd_per_chip_hour", "flops_fraction", "hbm_fraction", "overhead_s") + PLAN_FIELDS
DEFAULTS = {"kind": "decode", "model": "llama-3.1-70b", "hardware": "hgx-h100-8", "batch": "64", "context": "8192",
            "kv_dtype": "bf16"}
BATCH_SWEEP = [2**i for i in range(0, 17)]  # 1 .. 65,536
CONTEXT_SWEEP = [2**i for i in range(7, 21)]  # 128 .. 1M


@dataclass(frozen=True)
class ServeInput:
    kind: str
    serving: Serving
    batch: int
    context: int
    len_pass: int
    plan: dict[str, str]  # tp/ep/pp/dp/hop_latency as given (empty: weights and KV split evenly, no comms)
    query: dict[str, str]  # the checked query (for the CLI when a layout is given)

    @property
    def model(self) -> ModelArch:
        return self.serving.model


def form_values(params: Mapping[str, str]) -> dict[str, str]:
    """What the form shows: the request's values over the defaults (kept as typed, even when invalid)."""
    return {**DEFAULTS, **{k: v for k, v in params.items() if k in SERVE_FIELDS}}


def parse_serve(params: Mapping[str, str]) -> ServeInput:
    q = P.Query(params, SERVE_FIELDS)
    kind = q.choice("kind", ("decode", "prefill"), "decode")
    m = P.model_from(q, DEFAULTS["model"])
    hw = P.hardware_by_name(q.text("hardware", DEFAULTS["hardware"]))
    batch = q.integer("batch", 64, 1, P.MAX_BATCH)
    context = q.integer("context", 8192, 1, P.MAX_CONTEXT)
    len_pass = 1 if kind == "decode" else q.integer("len_pass", context, 1, P.MAX_CONTEXT)
    if len_pass > context:
        raise P.FieldError("len_pass", f"{len_pass} new tokens exceed the context {context} (they are part of it)")
    o = P.pass_options(q)
    price = q.number("usd_per_chip_hour", None, 0.0, 1e4, lo_open=True)
    plan = {k: q.text(k) for k in PLAN_FIELDS if q.text(k) is not None}
    if plan and q.text("config"):
        raise P.FieldError(next(iter(plan)), "parallel layouts need a catalog model (the CLI reads an uploaded "
                                             "config from a file); leave tp/ep/pp/dp empty for an uploaded config")
    eff = Efficiency(o.flops_fraction, o.hbm_fraction, o.overhead_s)
    sv = Serving(m, hw, o.chips, o.weight_dtype, o.kv_dtype, eff, price)
    checked = {k: v for k in SERVE_FIELDS if k not in ("kind", "config") and (v := q.text(k)) is not None}
    return ServeInput(kind, sv, batch, context, len_pass, plan, checked)


_MARKUP = re.compile(r"\[/?(bold|red|green|yellow|dim|italic|cyan)\]")


def plain(lines: list[str]) -> list[str]:
    """Rich console markup off the explain lines."""
    return [_MARKUP.sub("", s) for s in lines]


def _point(si: ServeInput) -> tuple[dict, list[str], float, int]:
    """The row ``tokenomy decode|prefill --json`` prints for this point, its explain lines, FLOPs and chips."""
    sv = si.serving
    r = sv.run(si.batch, si.context, si.len_pass)
    flops, chips = float(r.step.flops), r.chips
    if not si.plan:
        return r.rows()[0], plain(explain_pass(r, sv.coeffs, 0)), flops, chips
    dropped = {"usd_per_chip_hour", "len_pass"} if si.kind == "decode" else {"usd_per_chip_hour"}
    q = {k: v for k, v in si.query.items() if k not in dropped}
    q |= {"model": si.model.name, "hardware": sv.hardware.name, "batch": str(si.batch), "context": str(si.context)}
    row = json.loads(run_json(SPECS[si.kind], q))[0]
    return row, run_text(SPECS[si.kind], q, "--explain"), flops, row["chips"]


def serve_view(si: ServeInput) -> dict:
    """Everything the results panel shows: the point's row, rates and $, explain lines, figures."""
    sv = si.serving
    row, explain, flops, chips = _point(si)
    tokens = si.batch * si.len_pass
    if row["fits"]:
        row.setdefault("tokens_per_s_per_chip", row["tokens_per_s"] / chips)
        row.setdefault("tokens_per_s_per_user", si.len_pass / row["step_s"])
        row["usd_per_mtok"] = float(usd_per_mtok(row["step_s"], tokens, chips, sv.price))
    ops = op_costs(si.model, batch=si.batch, context=si.context, len_pass=si.len_pass,
                   weight_dtype=sv.weight_dtype, kv_dtype=sv.kv_dtype)
    figures = {}
    if row["fits"]:  # a configuration that does not fit gets no times, so no point on the roofline
        r1 = sv.run(1, 1)
        figures["roofline"] = roofline_figure(
            ops, peak_flops_per_s=r1.peak_flops_per_s * sv.eff.flops_fraction,
            hbm_bytes_per_s=r1.hbm_bytes_per_s * sv.eff.hbm_fraction, pass_flops=flops,
            pass_bytes=sum(o.bytes for o in ops), pass_step_s=row["step_s"], chips=chips,
            title=f"{si.kind} roofline: {tokens:,} new tokens, context {si.context:,}")
    even = " (even split, no layout)" if si.plan else ""
    brows = batch_rows(sv.terms(BATCH_SWEEP, si.context))
    marks = {"this batch": si.batch}
    figures["latency"] = sp.latency_vs_batch(brows, f"Decode step time vs batch{even}", marks)
    figures["cost"] = sp.cost_vs_batch(brows, f"Decode $/Mtok and MFU vs batch{even}", marks)
    figures["mfu"] = sp.mfu_vs_context(context_rows(sv, si.batch, CONTEXT_SWEEP),
                                       f"Decode MFU vs context at batch {si.batch:,}{even}")
    figures["pareto"] = sp.pareto(brows, f"Tokens/s per chip vs per user, decode over batch{even}")
    return {"row": row, "explain": explain, "ops": ops, "figures": figures, "chips": chips, "serving": sv,
            "label": f"{si.model.name} on {chips} × {sv.hardware.name}", "plan": row.get("plan"),
            "usd_per_chip_hour": sv.price, "compute_dtype": sv.run(1, 1).compute_dtype}
