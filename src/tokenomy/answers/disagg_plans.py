"""Disaggregated serving (serving.disagg; the pools' layouts answers/pools.py) and its plan over pool splits.

    serve_disagg   a prefill pool and a decode pool of the sizes asked, each on its layout (given, else chosen for
                   its load: objectives.DECODE_POOL / PREFILL_POOL), the steady state (analytic) or
                   serving.sim_disagg (simulate: both pools iteration by iteration, percentiles from the requests)
    disagg_plan    the pool splits P + D <= the chip budget (whole scale-up domains or powers of two), each pool on
                   its best layout, at every load point (each a plan of its own: its decode pool chosen for that
                   load, its prefill pools those that keep up with it): the Pareto front (tokens/s per chip vs per
                   user) and the best under the SLOs (objectives.GOODPUT_PER_USD), or "no plan meets" with the closest
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from tokenomy.answers import error_bars
from tokenomy.answers.energy_cols import disagg_energy, power_of
from tokenomy.answers.objectives import GOODPUT_PER_USD
from tokenomy.answers.pools import decode_side, prefill_side
from tokenomy.answers.requests import PoolRequest, ServeRequest
from tokenomy.answers.resolve import deployment, hardware_of, model_of
from tokenomy.answers.result import Result
from tokenomy.answers.serve_rows import (disagg_rows, dtypes_label, serving_kv_dtype, simulations, slo_verdict,
                                         within_context)
from tokenomy.answers.variants import annotated
from tokenomy.core.layout import Layout
from tokenomy.serving.disagg import DisaggLoad, PoolDoesNotFit, decode_rate, disagg
from tokenomy.units import fmt_bytes, fmt_seconds

DISAGG_COLUMNS = ("plan", "prefill_chips", "decode_chips", "concurrency", "rate", "ttft_s", "tpot_s",
                  "kv_transfer_s", "tokens_per_s_per_chip", "tokens_per_s_per_user", "usd_per_mtok_input",
                  "usd_per_mtok_output", "j_per_output_token", "tokens_per_s_per_mw", "tco_usd_per_mtok_output",
                  "capacity_limited", "goodput_requests_per_s")
PLAN_KEYWORDS = frozenset({"concurrency", "rate", "isl", "osl", "isl_dist", "osl_dist", "cache_hit", "engine",
                           "max_num_tokens", "max_batch", "ttft_slo", "tpot_slo", "weight_dtype", "kv_dtype",
                           "efficiency", "usd_per_chip_hour", "usd_per_kwh", "facility", "prefill_chips",
                           "decode_chips"})


def _base(req: ServeRequest):
    """(model, hardware, the Deployment both pools start from: layout unset, the engine's KV dtype)."""
    d, e = req.deployment, req.serving_engine
    m, hw = model_of(d.model), hardware_of(d.hardware)
    kv = serving_kv_dtype(m, e.name, d.weight_dtype, d.kv_dtype)
    return m, hw, deployment(m, hw, layout=Layout(), weight_dtype=d.weight_dtype, kv_dtype=kv,
                             efficiency=d.efficiency, usd_per_chip_hour=d.usd_per_chip_hour, serving_engine=e.name)


def _split(dep, pre: PoolRequest, dec: PoolRequest, req: ServeRequest, caches: tuple | None = None):
    """Both pools (the decode pool first: its request rate sizes the prefill pool's layout) and their steady state;
    ``caches``: the decode pools' and the prefill tables, shared over a plan's splits."""
    w, e = req.workload, req.serving_engine
    caches = caches or ({}, {})
    dec_dep, prof_d, pool = decode_side(dep, dec, w, e, caches[0])
    x_d = decode_rate(pool, w.osl_mean, w.U, w.lam)
    pre_dep, prof_p, _ = prefill_side(dep, pre, x_d, w, e, caches[1])
    s = disagg(pre_dep, dec_dep, prof_p, prof_d, DisaggLoad(w.isl_mean, w.osl_mean, w.U, w.lam, w.cache_hit),
               decode=pool, prefill=_table_terms(caches[1], pre.chips, pre_dep))
    return pre_dep, prof_p, dec_dep, prof_d, s


def _table_terms(tables: dict, chips: int, pre):
    """The prefill pass terms the pool's table already holds for its chosen layout (None: disagg computes them)."""
    table = tables.get(chips)
    return None if table is None else table.terms.get(pre.layout.label())


def serve_disagg(req: ServeRequest) -> Result:
    """Disaggregated serving of a request (module docstring): one row per workload point."""
    d, w, run = req.deployment, req.workload, req.run
    P, D = d.prefill.chips, d.decode.chips
    if P is None or D is None:
        raise ValueError("prefill_chips, decode_chips: disaggregated serving needs both pool sizes")
    m, hw, dep = _base(req)
    power = power_of(hw, d.usd_per_kwh, d.facility)
    within_context(m, w.isl_mean, w.osl_mean)
    pre, prof_p, dec, prof_d, s = _split(dep, d.prefill, d.decode, req)
    sims = None
    if run.method == "simulate":
        from tokenomy.serving.sim_disagg import simulate_disagg

        sims = simulations(lambda wl, n: simulate_disagg(pre, dec, prof_p, prof_d, wl, n), w, run)
    rows = disagg_rows(pre, dec, prof_d.name, s, w, sims,
                       disagg_energy(power, s, pre.chips, dec.chips, w.isl_mean, w.osl_mean))
    error_bars.attach(rows, error_bars.regime_of(dec, prof_d.name, error_bars.SERVE, "disagg"), "running_batch",
                      w.isl_mean + w.osl_mean / 2)
    isl_l, osl_l = w.lengths_label()
    title = (f"serve (disagg, {run.method}): {m.name} on {P} + {D} x {hw.chip.name} ({hw.name}); prefill "
             f"{pre.layout.label()}, decode {dec.layout.label()}; KV over {rows[0]['kv_link']}; {prof_d.label()}; "
             f"ISL {isl_l} / OSL {osl_l}, cache hit {w.cache_hit:g}; {dtypes_label(dep)}; {dep.eff.name} efficiency")
    notes = tuple(f"{r['concurrency'] or r['rate']}: capacity-limited (prefill pool "
                  f"{r['prefill_capacity_requests_per_s']:.4g} req/s, decode pool "
                  f"{r['decode_capacity_requests_per_s']:.4g} req/s)" for r in rows if r["capacity_limited"])
    slo_notes, slo_extra = slo_verdict(rows, *w.slos)
    return Result("serve", title, tuple(rows), DISAGG_COLUMNS, {"mode": "disagg", "engine": prof_d.name,
                  **slo_extra}, slo_notes + notes, _disagg_explain(pre, dec, s, w.isl_mean, w.osl_mean), rows_key="")


def _disagg_explain(pre, dec, s, isl, osl) -> tuple[str, ...]:
    g = lambda a, i=0: float(np.ravel(a)[i])  # noqa: E731
    return (f"prefill pool {pre.chips} chips ({pre.layout.label()}): a pass of up to {s.prompts_per_pass_max:g} "
            f"prompts of {isl:g} tokens; capacity {s.prefill_capacity:.4g} requests/s",
            f"KV hand-off: kv({isl:g}) = {fmt_bytes(s.kv_bytes)} per request over "
            f"{'scale-out' if s.crosses_domain else 'scale-up'}: alpha + bytes/beta = {fmt_seconds(s.kv_transfer_s)}",
            f"decode pool {dec.chips} chips ({dec.layout.label()}): holds {s.decode_cap:g} sequences; capacity "
            f"{g(s.decode_capacity):.4g} requests/s",
            *(f"point {i}: TTFT = wait {fmt_seconds(g(s.prefill_wait_s, i))} + pass "
              f"{fmt_seconds(g(s.prefill_pass_s, i))} + KV {fmt_seconds(s.kv_transfer_s)} + half a decode step and "
              f"the first, 1.5 x {fmt_seconds(g(s.tpot_s, i))} (+ request overhead, + queue "
              f"{fmt_seconds(g(s.queue_s, i))}) = "
              f"{fmt_seconds(g(s.ttft_s, i))}; TPOT = t(B = {g(s.batch, i):.4g}) = {fmt_seconds(g(s.tpot_s, i))}; "
              f"tokens/s per chip = X·OSL/(P + D) = {g(s.tokens_per_s_per_chip, i):.4g}"
              for i in range(np.size(s.tpot_s))))


def pool_sizes(budget: int, domain: int) -> list[int]:
    """Pool sizes the search tries: powers of two within one scale-up domain, then whole domains, below ``budget``."""
    out = {1 << i for i in range(int(domain).bit_length())} | {k * domain for k in range(1, budget // domain + 1)}
    return sorted(x for x in out if x < budget and (x <= domain or x % domain == 0))


EXTRA_PREFILL_SIZES = 2  # prefill pools tried above the smallest that keeps up (TTFT headroom)


def _splits(sizes, budget, P_fixed, D_fixed):
    """(D, the P sizes beside it) pairs in the budget; a fixed pool size is the only one tried."""
    for D in ([D_fixed] if D_fixed else sizes):
        Ps = [P for P in ([P_fixed] if P_fixed else sizes) if P + D <= budget]
        if Ps:
            yield D, Ps


def _balanced(dep, Ps, x_d, req: ServeRequest, tables: dict, refused: dict) -> list[int]:
    """The prefill sizes that keep up with the decode pool's rate x_d: the smallest whose capacity >= x_d and the
    next EXTRA_PREFILL_SIZES up (or, when none keeps up, the largest that fits); pools that do not fit go in
    ``refused`` ((pool, chips) -> why)."""
    fit = []
    for P in Ps:
        if ("prefill", P) in refused:
            continue
        try:
            _, _, mu = prefill_side(dep, PoolRequest("prefill", P), x_d, req.workload, req.serving_engine, tables)
        except PoolDoesNotFit as e:
            refused[("prefill", P)] = str(e)
            continue
        fit.append((P, mu))
    keep = [i for i, (_, mu) in enumerate(fit) if mu >= x_d]
    if len(Ps) == 1 or not fit:
        return [P for P, _ in fit]
    return [P for P, _ in fit[keep[0]:keep[0] + 1 + EXTRA_PREFILL_SIZES]] if keep else [fit[-1][0]]


def plan_disagg(model, hardware, *, chips, top=None, **keywords) -> Result:
    """The pool-split search from keywords (``disagg_plan``): ``chips`` the budget, ``top`` the rows kept, and
    serve's workload, engine, dtype and price keywords (PLAN_KEYWORDS); ``prefill_chips``/``decode_chips`` fix a
    pool's size."""
    unknown = sorted(set(keywords) - PLAN_KEYWORDS)
    if unknown:
        raise TypeError(f"plan_disagg() got an unexpected keyword {unknown[0]!r}")
    pools = {k: keywords.pop(k) for k in ("prefill_chips", "decode_chips") if k in keywords}
    return disagg_plan(ServeRequest.of(model, hardware, {**keywords, "mode": "disagg", "pools": pools}), chips, top)


def disagg_plan(req: ServeRequest, chips, top=None) -> Result:
    """Search prefill/decode pool splits P + D <= ``chips`` (module docstring; serving.disagg for how the pools are
    sized for each other): rows ranked by objectives.GOODPUT_PER_USD, the front of those meeting the SLOs."""
    from tokenomy.answers import inputs
    from tokenomy.answers.plan_serving import misses_by, rank

    budget = inputs.optional("chips", chips)
    if budget is None:
        raise ValueError("chips: the chip budget to split into a prefill and a decode pool is required")
    P_fix, D_fix = req.deployment.prefill.chips, req.deployment.decode.chips
    if (P_fix or 0) + (D_fix or 0) > budget or (P_fix or D_fix or 0) >= budget:
        raise ValueError(f"prefill_chips: {P_fix or 0} + decode_chips {D_fix or 0} leave no room in the {budget} "
                         "chips available (chips); each pool needs at least one and P + D <= chips")
    top = None if top is None or top == 0 else inputs.optional("top", top)
    m, hw, dep = _base(req)
    w = req.workload
    within_context(m, w.isl_mean, w.osl_mean)
    sizes = pool_sizes(budget, dep.topo.domain_size)
    rows, refused = _plan_rows(dep, req, _splits(sizes, budget, P_fix, D_fix))
    if not rows:  # one line naming the pool and why (the largest pool's refusal when sizes were searched)
        if refused:
            (pool, n), msg = max(refused.items(), key=lambda kv: kv[0][1])
            fixed = {"prefill": P_fix, "decode": D_fix}[pool]
            raise ValueError(f"{pool}_chips: {msg}" if fixed else f"chips: no split of {budget} x {hw.chip.name} "
                             f"fits {m.name}; the largest {pool} pool tried, {n} chips: {msg}")
        raise ValueError(f"chips: no prefill/decode split of {budget} x {hw.chip.name} fits {m.name}")
    table, best, closest, notes = rank(rows, *w.slos, top)
    rule = GOODPUT_PER_USD.rule()
    notes.insert(0, f"{len(rows)} plans over pool sizes {', '.join(map(str, sizes))} (each decode pool with the "
                 f"prefill pools that keep up with it); pools that do not fit: "
                 f"{', '.join(f'{p} {n}' for p, n in sorted(refused)) or 'none'}")
    isl_l, osl_l = w.lengths_label()
    title = (f"plan (disagg): {m.name} on at most {budget} x {hw.chip.name} ({hw.name}); ISL {isl_l} / OSL "
             f"{osl_l}; SLOs TTFT {w.ttft_slo if w.ttft_slo else '-'} s, TPOT {w.tpot_slo if w.tpot_slo else '-'} "
             f"s; {req.serving_engine.name}; {dep.eff.name} efficiency; best {rule}")
    extra = {"mode": "disagg", "model": m.name, "hardware": hw.name, "chips_budget": budget, "rule": rule,
             "best": best, "closest": closest, "misses_by": misses_by(closest, *w.slos), "plans": len(rows),
             "pool_sizes": sizes}
    return annotated(Result("serve", title, tuple(table), ("best",) + DISAGG_COLUMNS + ("goodput_requests_per_usd",),
                            extra, tuple(notes), rows_key=""), req.deployment.hardware)


def _plan_rows(dep, req: ServeRequest, splits) -> tuple[list[dict], dict]:
    """(rows with their goodput, the pools refused (pool, chips) -> why) of every split at every load point."""
    from tokenomy.answers.plan_serving import with_goodput

    d, full = req.deployment, req.workload
    power = power_of(dep.hardware, d.usd_per_kwh, d.facility)
    caches, rows, refused = ({}, {}), [], {}
    splits = list(splits)
    for i in range(len(full.load)):  # each load point is a plan of its own
        one = replace(req, workload=full.at(i))
        w = one.workload
        for D, Ps in splits:
            try:
                _, _, pool = decode_side(dep, PoolRequest("decode", D), w, req.serving_engine, caches[0])
            except PoolDoesNotFit as e:
                refused[("decode", D)] = str(e)
                continue
            x_d = decode_rate(pool, w.osl_mean, w.U, w.lam)
            for P in _balanced(dep, Ps, x_d, one, caches[1], refused):
                try:
                    pre, _, dec, prof_d, s = _split(dep, PoolRequest("prefill", P), PoolRequest("decode", D), one,
                                                    caches)
                except PoolDoesNotFit as e:
                    refused[(e.pool, P if e.pool == "prefill" else D)] = str(e)
                    continue
                energy = disagg_energy(power, s, P, D, w.isl_mean, w.osl_mean)
                rows += [with_goodput(r, dep.price, *w.slos)
                         for r in disagg_rows(pre, dec, prof_d.name, s, w, None, energy)]
    return rows, refused
