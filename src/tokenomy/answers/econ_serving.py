"""The deployment an economics answer runs on (batch, latency, context, pricing, speculate, cache, lecture): its
door's keywords (ECONOMICS_KEYWORDS) -> a DeploymentRequest -> a Serving whose layout is chosen at the points asked,
and the lines every answer's derivation and JSON share (the plan, the rule, the engine's pass lines)."""

from __future__ import annotations

from dataclasses import fields
from typing import Mapping

import numpy as np

from tokenomy.answers import inputs
from tokenomy.answers.deployment_request import DeploymentRequest
from tokenomy.answers.passes import choose_layout
from tokenomy.answers.resolve import deployment, hardware_of, model_of
from tokenomy.core.deployment import Deployment
from tokenomy.core.efficiency import ROOFLINE
from tokenomy.core.explain import explain_pass
from tokenomy.core.layout import Layout
from tokenomy.econ.cost import Serving

BATCHES = tuple(2 ** i for i in range(15))  # the CLI's 1..16384
CONTEXTS = tuple(2 ** i for i in range(10, 21))  # 1024..1048576


# the deployment keywords every economics answer takes beside model, hardware and chips, with their defaults
ECONOMICS_KEYWORDS = {"tp": None, "ep": None, "pp": None, "dp": None, "redundant_experts": None, "layout": None,
                      "weight_dtype": None, "kv_dtype": "bf16", "efficiency": "calibrated", "usd_per_chip_hour": None}


def deployment_request(model, hardware, chips, kw: Mapping) -> DeploymentRequest:
    """What an economics answer deploys, from its door's keywords (ECONOMICS_KEYWORDS; absent ones their default)."""
    unknown = sorted(set(kw) - set(ECONOMICS_KEYWORDS))
    if unknown:
        raise TypeError(f"unexpected keyword {unknown[0]!r}; allowed: chips, {', '.join(ECONOMICS_KEYWORDS)}")
    return DeploymentRequest.of(model, hardware, {**ECONOMICS_KEYWORDS, **kw, "chips": chips})


def serving(d: DeploymentRequest, batch, context, len_pass=1) -> Serving:
    """The deployment an economics answer runs on: its layout chosen at the (batch, context, len_pass) points."""
    inputs.optional("usd_per_chip_hour", d.usd_per_chip_hour)
    m, hw = model_of(d.model), hardware_of(d.hardware)
    dep = deployment(m, hw, layout=Layout(), weight_dtype=d.weight_dtype, kv_dtype=d.kv_dtype, efficiency=d.efficiency,
                     usd_per_chip_hour=d.usd_per_chip_hour)
    B, C, S = (np.asarray(x, dtype=float) for x in np.broadcast_arrays(np.asarray(batch, float)[:, None],
                                                                       np.asarray(context, float)[None, :], len_pass))
    lay, rule = choose_layout(dep, d.chips, d.layout, B, C, S)
    return Serving(**{f.name: getattr(dep, f.name) for f in fields(Deployment)} | {"layout": lay},
                   layout_rule=rule)


def _context(sv: Serving) -> dict:
    return {"plan": sv.layout.as_dict(), "layout_rule": sv.layout_rule, "efficiency": sv.eff.name}


def _pass_lines(sv: Serving, batch, context, len_pass=1) -> list[str]:
    """The engine derivation of one point, the roofline bound beside it."""
    return explain_pass(sv, sv.run(batch, context, len_pass), sv.run(batch, context, len_pass, eff=ROOFLINE), 0)


def _g(v) -> str:
    return "-" if v is None else f"{v:.4g}"


def lecture_serving(model, hardware, *, kv_dtype, batch, context, len_pass=1) -> Serving:
    """What lecture/real.py asks on: the calibrated set on the best layout over the system's chips."""
    return serving(deployment_request(model, hardware, None, {"kv_dtype": kv_dtype}), batch, context, len_pass)

