"""plan for a serving workload: search layouts (aggregated) or pool splits (disaggregated) under TTFT/TPOT SLOs.

The objective is the workload, not one decode step. Every row is a plan evaluated at a workload point by the
serving model itself — serving.steady for aggregated continuous batching (the same ``answers.serve_rows.row`` that
``tokenomy serve --tp .. --ep ..`` prints), serving.disagg for prefill/decode pools (``answers.disagg_plans``):
    meets     TTFT <= ttft_slo, TPOT <= tpot_slo (a missing SLO always holds), and not an open loop beyond capacity
              (``meets``: the rule ``tokenomy serve`` applies too, and why)
    goodput   goodput_requests_per_s = requests/s where it meets, else 0 (``goodput_requests_per_s``)
    rule      objectives.GOODPUT_PER_USD (plan --objective: objectives.PLAN_OBJECTIVES, also tokens-per-joule and
              tco): the most goodput per dollar, goodput_requests_per_usd = goodput·3600/(chips·$/chip-hour); ties:
              more tokens/s per user. With one OSL this is the most output tokens/s per chip among the plans that
              meet, so the best plan is always on the front.
    table     the Pareto front (tokens/s per chip vs per user) of the plans that meet, best first by the rule, so
              ``top`` N keeps the N best; when none meets: the closest plan (the smallest worst ratio of TTFT/SLO
              and TPOT/SLO) and by how much it misses each SLO — an answer (exit 0), not an error
    $/Mtok    in·ISL + out·OSL = 1e6·chips·$/chip-s / requests/s: every chip-second is paid by the tokens it served
Aggregated candidates: every valid layout on at most ``chips`` chips (parallel.search.candidate_layouts), screened
by the vectorised decode search at context ISL + OSL/2 (parallel.search.search): only layouts on its Pareto front
(tokens/s per chip vs per user over all batches) go on to the steady state — a layout off it is beaten on both axes,
at every batch, by one on it.
"""

from __future__ import annotations

import math

import numpy as np

from tokenomy.answers import objectives
from tokenomy.answers.objectives import GOODPUT_PER_USD, Objective
from tokenomy.units import SECONDS_PER_HOUR, fmt_seconds


def overloaded(r: dict) -> bool:
    """An open-loop point (a request rate or a trace, no concurrency) at or beyond what the deployment serves."""
    return bool(r["capacity_limited"]) and r.get("concurrency") is None


def meets(r: dict, ttft_slo, tpot_slo) -> bool:
    """A workload point meets the SLOs in steady state when its TTFT and TPOT are within them and it is not an
    open loop beyond capacity. Such a point has no steady state: its queue grows without bound (the k-th request
    waits about k·(1/mu − 1/λ) at λ requests/s offered and mu served), so past a finite transient every request
    misses any TTFT SLO; and under a TPOT SLO alone its requests still wait without bound for their turn — it serves
    mu of the λ offered and the rest pile up. Counting the served rate mu would make the cheapest overloaded plan
    the best under a TPOT-only SLO, so it meets nothing and its goodput is 0 (a finite simulation's first requests,
    served before the queue has grown, are a transient, not a rate it sustains). A closed loop beyond capacity is
    another matter: its U clients wait in a queue of finite length (Little's law), their TTFT counts that wait,
    and the point meets the SLOs or not on those values."""
    if overloaded(r) or r["tpot_s"] is None or r["ttft_s"] is None:
        return False
    return (ttft_slo is None or r["ttft_s"] <= ttft_slo) and (tpot_slo is None or r["tpot_s"] <= tpot_slo)


def goodput_requests_per_s(r: dict, ttft_slo, tpot_slo, sim=None) -> float:
    """Requests/s that meet the SLOs (``meets``' rule): 0 for an open loop beyond capacity; a simulation's own count
    of the requests within the SLOs over its span when one ran and an SLO is set; else the point's requests/s where
    its means meet the SLOs, 0 where they do not."""
    if overloaded(r):
        return 0.0
    if sim is not None and (ttft_slo or tpot_slo):
        return sim.goodput(ttft_slo, tpot_slo)
    return (r["requests_per_s"] or 0.0) if meets(r, ttft_slo, tpot_slo) else 0.0


def misses(r: dict, ttft_slo, tpot_slo) -> dict:
    """Each SLO's ratio value/SLO (> 1: missed); capacity-limited rows miss by an infinite TTFT when open loop."""
    out = {}
    if ttft_slo is not None:
        out["ttft"] = (r["ttft_s"] if r["ttft_s"] is not None else math.inf) / ttft_slo
    if tpot_slo is not None:
        out["tpot"] = (r["tpot_s"] if r["tpot_s"] is not None else math.inf) / tpot_slo
    return out


def with_goodput(r: dict, usd_per_chip_hour: float, ttft_slo, tpot_slo) -> dict:
    """The row plus ``meets``, ``goodput_requests_per_s`` and ``goodput_requests_per_usd`` (module docstring)."""
    good = goodput_requests_per_s(r, ttft_slo, tpot_slo)
    out = dict(r, meets_slos=meets(r, ttft_slo, tpot_slo), goodput_requests_per_s=good,
               goodput_requests_per_usd=good * SECONDS_PER_HOUR / (r["chips"] * usd_per_chip_hour))
    # the energy objectives: goodput per all-in joule (output tokens: requests x OSL) and per $ of ownership
    watts, tco_h, rps = r.get("all_in_w_per_chip"), r.get("tco_usd_per_chip_hour"), r.get("requests_per_s")
    osl = (r["tokens_per_s_per_chip"] * r["chips"] / rps) if rps and r.get("tokens_per_s_per_chip") else 0.0
    out["goodput_tokens_per_joule"] = good * osl / (r["chips"] * watts) if watts else 0.0
    out["goodput_requests_per_usd_tco"] = good * SECONDS_PER_HOUR / (r["chips"] * tco_h) if tco_h else 0.0
    return out


def rank(rows: list[dict], ttft_slo, tpot_slo, top=None, objective: Objective = GOODPUT_PER_USD
         ) -> tuple[list[dict], dict | None, dict | None, list[str]]:
    """(table, best, closest, notes) over ``rows`` (each ``with_goodput``): the best by ``objective``
    (objectives.choose), the table the Pareto front of the plans meeting the SLOs in the objective's order."""
    from tokenomy.parallel.search import pareto

    notes: list[str] = []
    good = [r for r in rows if r["meets_slos"]]
    if good:
        order = objectives.rank(objective, {c: np.array([r[c] or 0.0 for r in good], float)
                                            for c in objective.columns})
        best = good[order[0]]
        x = np.array([r["tokens_per_s_per_chip"] for r in good])
        y = np.array([r["tokens_per_s_per_user"] for r in good])
        on_front = set(pareto(x, y, np.ones(len(good), bool)).tolist()) | {order[0]}
        table = [good[i] for i in order if i in on_front]
        for r in table:
            r["best"] = r is best
        notes.append(f"{len(good)} of {len(rows)} plans meet the SLOs; the table is their Pareto front, best first")
        near = None
    else:
        best = None
        near = closest(rows, ttft_slo, tpot_slo)
        table = [dict(near, best=False)]
        notes.append(no_plan_meets(near, ttft_slo, tpot_slo))
    if top is not None and top > 0:
        table = table[:int(top)]
    return table, best, near, notes


def closest(rows: list[dict], ttft_slo, tpot_slo) -> dict:
    """The row nearest to meeting the SLOs: the smallest worst ratio of TTFT/SLO and TPOT/SLO (an open loop beyond
    capacity last); ties: more requests/s."""
    return min(rows, key=lambda r: (max(misses(r, ttft_slo, tpot_slo).values(), default=math.inf)
                                    if not overloaded(r) else math.inf, -(r["requests_per_s"] or 0.0)))


def no_plan_meets(r: dict, ttft_slo, tpot_slo, what: str = "plan") -> str:
    """"no <what> meets the SLOs; closest: ..." with by how much the closest row misses each SLO."""
    load = f"concurrency {r['concurrency']:g}" if r.get("concurrency") is not None else f"rate {r['rate']:g}/s"
    miss = [f"{k.upper()} {fmt_seconds(r[k + '_s'] if r[k + '_s'] is not None else math.inf)} vs SLO "
            f"{fmt_seconds(slo)} ({f'{(v - 1) * 100:.0f}% over' if v > 1 else 'meets it'})"
            for (k, v), slo in zip(misses(r, ttft_slo, tpot_slo).items(),
                                   [s for s in (ttft_slo, tpot_slo) if s is not None])]
    cap = "; capacity-limited (the deployment cannot hold the load)" if r["capacity_limited"] else ""
    return f"no {what} meets the SLOs; closest: {r['plan']} on {r['chips']} chips at {load}: {', '.join(miss)}{cap}"


def misses_by(r: dict | None, ttft_slo, tpot_slo) -> dict | None:
    """JSON: by what fraction the closest plan misses each SLO (0 where it meets it)."""
    if r is None:
        return None
    return {f"{k}_over": max(v - 1.0, 0.0) for k, v in misses(r, ttft_slo, tpot_slo).items()}


def search_agg(dep, chips: int, w, eng, power) -> tuple[list[dict], int, int]:
    """Every screened layout (module docstring) at every point of the workload ``w`` (answers.requests
    .WorkloadRequest) through serving.steady under the engine ``eng`` (EngineRequest): (rows, candidate layouts,
    layouts evaluated). Each row is ``answers.serve_rows.row`` of that layout: what ``serve`` prints."""
    from tokenomy.answers.energy_cols import serving_energy
    from tokenomy.answers.serve_rows import row
    from tokenomy.parallel.search import Constraints, default_batches, search
    from tokenomy.serving.steady import Prefix, steady

    isl, osl = w.isl_mean, w.osl_mean
    res = search(dep, chips=chips, constraints=Constraints(context=isl + osl / 2.0),
                 batches=default_batches(eng.profile().max_batch))
    n_b = np.size(res.batches)
    shortlist = sorted({int(i) // n_b for i in res.front})
    rows = []
    for j in shortlist:
        lay = res.layout(j * n_b)
        d = dep.with_(layout=lay)
        prof = eng.profile(int(lay.tp))
        with np.errstate(divide="ignore", invalid="ignore"):  # a layout whose KV holds nothing: nan rows, skipped
            s = steady(d, prof, isl=isl, osl=osl, concurrency=w.U, rate=w.lam, prefix=Prefix(w.cache_hit))
        if not np.any(s.fits):
            continue
        energy = serving_energy(power, s, d.chips, isl)
        for i in range(len(w.load)):
            r = row(d, prof, s, i, w, None, energy)
            r.update({k: v for k, v in lay.as_dict().items() if k != "label"})
            rows.append(with_goodput(r, d.price, *w.slos))
    return rows, int(np.size(res.layouts.tp)), len(shortlist)
