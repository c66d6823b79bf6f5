"""Disaggregated validation cases (schema ``mode = "disagg"``), each predicted by the serving model's disaggregated
steady state, ``serving.disagg.disagg`` — the equations ``tokenomy serve --prefill-chips P --decode-chips D``
answers with — on the case's two pools at their published layouts, under the case chip's efficiency terms as the
case's engine runs them (host and EP overlap at its version and settings: case_setup.case_profile), or the roofline.

    tpot_s               TPOT at the decode pool's running batch B (context ISL + OSL/2)
    ttft_s               prefill wait + prefill pass + KV hand-off + half a decode step + a decode step + o_req
    throughput_per_chip  X·OSL / (P + D): output tokens per second over every chip of both pools
    latency_s            the request's end-to-end time

A closed loop is solved at its steady state (the protocol's first wave is not modelled for two pools: a stated
gap for TTFT). Not part of the fit: the fit evaluates the vectorised aggregated cases (predict.py) ~10^5 times, a
disaggregated case is one fixed point per evaluation, so load.cases holds these out (split "test") and every
fit — the stored one or a leave-one-source-out fold — predicts them as held-out cases. A pool that cannot hold
its work (serving.disagg.PoolDoesNotFit) gives NaN, as an aggregated case that does not fit.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from tokenomy.catalog import loader
from tokenomy.core import engine
from tokenomy.core.deployment import Deployment
from tokenomy.core.efficiency import ROOFLINE, Efficiency
from tokenomy.core.layout import Layout
from tokenomy.serving.disagg import DisaggLoad, PoolDoesNotFit, disagg
from tokenomy.units import CHECKPOINT
from tokenomy.validation.load import Case
from tokenomy.validation.case_setup import case_profile
from tokenomy.validation.schema import Pool, ServingCase
from tokenomy.validation.terms_schema import EfficiencyTerms
from tokenomy.validation.theta import SERVING_FIELDS, Theta, term


def is_disagg(case: Case) -> bool:
    return case.kind == "serving" and case.case.mode == "disagg"


@dataclass(frozen=True)
class DisaggPrediction:
    value: np.ndarray  # in each case's metric unit; NaN where a pool does not fit
    bound: list[str]  # what bounds the decode step (engine.BOUNDS)
    batch: np.ndarray  # the decode pool's running batch B
    capacity_limited: np.ndarray  # a pool's capacity, not the clients, set the rate


def pool_layout(p: Pool) -> Layout:
    """A pool's Layout: chips/(tp·ep·pp) workers side by side (dp), attention-DP over the ep ranks where stated."""
    return Layout(tp=p.tp, ep=p.ep, pp=p.pp, dp=p.chips // (p.tp * p.ep * p.pp),
                  attn_dp=p.attn_dp if p.ep > 1 else None)


def case_efficiency(c: ServingCase, terms: EfficiencyTerms | None) -> Efficiency:
    """The chip's terms (None: the roofline) as the case's engine runs them at its version (EngineProfile.on: host
    and EP overlap, the eager launches of its prompt passes, which both pools' prefill passes pay, and its MoE
    kernel's expert tile)."""
    if terms is None:
        return ROOFLINE
    return case_profile(c).on(Theta(**{f: float(term(terms, f)) for f in SERVING_FIELDS}).efficiency(),
                              c.moe_kernel)


def _pool(c: ServingCase, p: Pool, eff: Efficiency):
    """(Deployment, EngineProfile) of one pool: the case's model, chip and dtypes on the pool's layout; the case's
    engine profile at the pool's TP, with the pool's scheduler caps and memory share where the source states them."""
    weights = None if c.weight_dtype == CHECKPOINT else c.weight_dtype
    dep = Deployment(loader.model(c.model), loader.hardware(c.hardware), pool_layout(p), weights, c.kv_dtype, eff)
    prof = case_profile(c.model_copy(update={"tp": p.tp, "max_batch": p.max_batch or c.max_batch}))
    if p.max_num_tokens is not None:
        prof = dataclasses.replace(prof, max_num_tokens=p.max_num_tokens)
    if p.gpu_memory_utilization is not None:
        prof = dataclasses.replace(prof, hbm_fraction=p.gpu_memory_utilization, fraction_of="total")
    return dep, prof


# what a case records about its measurement rather than the point run: the cases of one point (a source's TPOT,
# TTFT and throughput at one concurrency) differ only in these, and share one solve
MEASUREMENT_FIELDS = frozenset({"id", "metric", "value", "published", "split"})


def point_key(c: ServingCase) -> str:
    """The case's point: every field but MEASUREMENT_FIELDS (pools included), as one hashable string."""
    return c.model_dump_json(exclude=set(MEASUREMENT_FIELDS))


def solve_point(c: ServingCase, terms: EfficiencyTerms | None):
    """serving.disagg's steady state at the case's point (its two pools, its load), or None where a pool cannot hold
    its work (PoolDoesNotFit)."""
    eff = case_efficiency(c, terms)
    (pre, prof_p), (dec, prof_d) = _pool(c, c.prefill, eff), _pool(c, c.decode, eff)
    load = DisaggLoad(c.isl, c.osl, concurrency=c.concurrency, rate=c.request_rate)
    try:
        return disagg(pre, dec, prof_p, prof_d, load)
    except PoolDoesNotFit:
        return None


def read_metric(s, metric: str) -> tuple[float, str, float, bool]:
    """(value, bound, decode batch, capacity-limited) of one case's metric from its point's solve ``s`` (module
    docstring); a point that does not fit: (NaN, "memory", NaN, False)."""
    if s is None:
        return np.nan, "memory", np.nan, False
    value = {"tpot_s": s.tpot_s, "ttft_s": s.ttft_s, "latency_s": s.e2e_s,
             "throughput_per_chip": s.tokens_per_s_per_chip}[metric]
    bound = engine.BOUNDS[int(np.ravel(s.bound)[0])]  # serving.disagg's bound: an index into engine.BOUNDS
    return (float(np.ravel(value)[0]), bound, float(np.ravel(s.batch)[0]),
            bool(np.ravel(s.capacity_limited)[0]))


def predict_disagg(cases: list[Case], terms: dict[str, EfficiencyTerms] | None) -> DisaggPrediction:
    """Every disaggregated case under its chip's terms (``terms`` None: the roofline), each distinct point solved
    once (point_key: a source's metrics at one load are one steady state; the catalog's 49 cases are 21 points)."""
    solved: dict[str, object] = {}
    out = []
    for k in cases:
        c = k.case
        key = point_key(c)
        if key not in solved:
            solved[key] = solve_point(c, None if terms is None else terms[c.hardware])
        out.append(read_metric(solved[key], c.metric))
    cols = list(zip(*out)) if out else [(), (), (), ()]
    return DisaggPrediction(np.array(cols[0], float), list(cols[1]), np.array(cols[2], float),
                            np.array(cols[3], bool))
