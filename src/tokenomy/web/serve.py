"""The Serve page's question: one model on one hardware at one batch and context, and the sweeps around it.

Every number comes from the calls the CLI makes (``run_pass(...).rows()``, ``explain_pass``); the sweeps
are the same call over arrays. Figures are built by ``tokenomy.plots``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from tokenomy.arch.model import ModelArch
from tokenomy.core.coeffs import coefficients
from tokenomy.core.explain import explain_pass
from tokenomy.core.inference import PassResult, run_pass
from tokenomy.core.op_costs import op_costs
from tokenomy.core.roofline import Efficiency
from tokenomy.plots.roofline import roofline_figure
from tokenomy.specs import Hardware
from tokenomy.web import params as P

SERVE_FIELDS = ("kind", "model", "config", "hardware", "chips", "batch", "context", "len_pass", "weight_dtype",
                "kv_dtype", "flops_fraction", "hbm_fraction", "overhead_s")
DEFAULTS = {"kind": "decode", "model": "llama-3.1-70b", "hardware": "hgx-h100-8", "batch": "64", "context": "8192",
            "kv_dtype": "bf16"}
BATCH_SWEEP = [2**i for i in range(0, 17)]  # 1 .. 65,536
CONTEXT_SWEEP = [2**i for i in range(7, 21)]  # 128 .. 1M


@dataclass(frozen=True)
class ServeInput:
    kind: str
    model: ModelArch
    hardware: Hardware
    batch: int
    context: int
    len_pass: int
    chips: int | None
    weight_dtype: str | None
    kv_dtype: str
    eff: Efficiency

    def run(self, batch, context, len_pass=None) -> PassResult:
        S = self.len_pass if len_pass is None else len_pass
        return run_pass(self.model, self.hardware, batch=batch, context=context, len_pass=S, chips=self.chips,
                        weight_dtype=self.weight_dtype, kv_dtype=self.kv_dtype, eff=self.eff,
                        coeffs=coefficients(self.model))


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
    eff = Efficiency(o.flops_fraction, o.hbm_fraction, o.overhead_s)
    return ServeInput(kind, m, hw, batch, context, len_pass, o.chips, o.weight_dtype, o.kv_dtype, eff)


_MARKUP = re.compile(r"\[/?(bold|red|green|yellow|dim|italic|cyan)\]")


def plain(lines: list[str]) -> list[str]:
    """Rich console markup off the explain lines."""
    return [_MARKUP.sub("", s) for s in lines]


def serve_view(si: ServeInput) -> dict:
    """Everything the results panel shows: the point's row, derived rates, explain lines, figures."""
    c = coefficients(si.model)
    r = si.run(si.batch, si.context)
    row = r.rows()[0]
    s = r.step
    tokens = si.batch * si.len_pass
    if row["fits"]:
        row["tokens_per_s_per_chip"] = row["tokens_per_s"] / r.chips
        row["tokens_per_s_per_user"] = si.len_pass / row["step_s"]
    ops = op_costs(si.model, batch=si.batch, context=si.context, len_pass=si.len_pass,
                   weight_dtype=si.weight_dtype, kv_dtype=si.kv_dtype)
    pass_bytes = float(s.weight_bytes + s.kv_read_bytes + s.kv_write_bytes + s.act_bytes)
    eff = si.eff
    roof = roofline_figure(ops, peak_flops_per_s=r.peak_flops_per_s * eff.flops_fraction,
                           hbm_bytes_per_s=r.hbm_bytes_per_s * eff.hbm_fraction, pass_flops=float(s.flops),
                           pass_bytes=pass_bytes, pass_step_s=row["step_s"], chips=r.chips,
                           title=f"{si.kind} roofline: {tokens:,} new tokens, context {si.context:,}")
    figures = {"roofline": roof} if row["fits"] else {}  # a configuration that does not fit gets no times
    return {"result": r, "row": row, "explain": plain(explain_pass(r, c, 0)), "ops": ops, "figures": figures}
