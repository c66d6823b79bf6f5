"""serve: a workload on a deployment — TTFT, TPOT, throughput and $ per workload point, aggregated serving.

    method "analytic"  serving.steady (vectorised; means of the length distributions)
    method "simulate"  serving.simulator (iteration-level, seeded; percentiles from the requests)
Layout: the degrees given, else the best valid layout over the chips for the running batch at ISL + OSL/2
(parallel.search.best_layout). Engine profile: catalog/engines/<engine>.toml (default vllm), its token budget and
batch cap overridable. Comma lists of concurrency or rate sweep. Disaggregated serving is not yet modelled.
"""

from __future__ import annotations

import numpy as np

from tokenomy.answers.passes import choose_layout
from tokenomy.answers.resolve import deployment, hardware_of, layout_of, model_of, positive_int
from tokenomy.answers.result import Result
from tokenomy.catalog import loader
from tokenomy.serving.scheduler import EngineProfile
from tokenomy.serving.steady import bound_name, steady
from tokenomy.serving.workload import Lengths, Workload, read_trace
from tokenomy.units import fmt_seconds

COLUMNS = ("concurrency", "rate", "ttft_s", "tpot_s", "e2e_s", "requests_per_s", "tokens_per_s_per_chip",
           "tokens_per_s_per_user", "usd_per_mtok_input", "usd_per_mtok_output", "kv_occupancy", "capacity_limited",
           "bound", "goodput_requests_per_s")
ENGINES = ("vllm", "sglang", "trtllm")


def engine_profile(name: str, tp: int = 1, max_num_tokens=None, max_batch=None) -> EngineProfile:
    """The catalog's profile for ``name`` (the HBM share for ``tp`` where the engine sets it by TP degree)."""
    if name not in ENGINES:
        raise ValueError(f"engine: {name!r}; allowed: {', '.join(ENGINES)}")
    f = loader.engine_file(name)
    kv, sch = f.kv_cache, f.scheduler
    frac = kv.hbm_fraction
    for k in sorted(kv.by_tp, key=int):
        if tp >= int(k):
            frac = kv.by_tp[k]
    return EngineProfile(f.name, f.version, sch.chunked_prefill, positive_int("max_num_tokens", max_num_tokens)
                         or sch.max_num_tokens, positive_int("max_batch", max_batch) or sch.max_batch,
                         kv.block_size, frac, kv.fraction_of, tuple(f.cuda_graphs.batch_sizes),
                         f.step_overhead_s or 0.0)


def _points(name, values):
    if values is None:
        return None
    a = np.atleast_1d(np.asarray(values, dtype=float)).ravel()
    if a.size == 0 or not np.all(np.isfinite(a)) or np.any(a <= 0):
        raise ValueError(f"{name}: must be > 0, got {values!r}")
    return a


def _lengths(field, fixed, dist):
    if dist is not None:
        return dist if isinstance(dist, Lengths) else Lengths.parse(field + "_dist", dist)
    v = positive_int(field, fixed)
    if v is None:
        raise ValueError(f"{field}: must be a positive integer")
    return Lengths("fixed", float(v))


def serve(model, hardware, *, concurrency=None, rate=None, isl=1024, osl=1024, isl_dist=None, osl_dist=None,
          trace=None, cache_hit=0.0, engine="vllm", max_num_tokens=None, max_batch=None, ttft_slo=None,
          tpot_slo=None, method="analytic", arrivals="staggered", requests=None, seed=0, chips=None, tp=None,
          ep=None, pp=None, dp=None, redundant_experts=None, weight_dtype=None, kv_dtype="bf16",
          efficiency="calibrated", usd_per_chip_hour=None, mode="agg") -> Result:
    """The serving answer (module docstring): one row per workload point."""
    if mode == "disagg":
        raise ValueError("mode: disagg is not yet modelled; use agg")
    if mode != "agg":
        raise ValueError(f"mode: {mode!r}; allowed: agg (disagg: not yet)")
    if method not in ("analytic", "simulate"):
        raise ValueError(f"method: {method!r}; allowed: analytic, simulate")
    m, hw = model_of(model), hardware_of(hardware)
    tr = read_trace(trace) if trace is not None and not hasattr(trace, "isl") else trace
    C, R = _points("concurrency", concurrency), _points("rate", rate)
    if tr is None and (C is None) == (R is None):
        raise ValueError("concurrency, rate: give one (closed loop C users, or open loop R requests/s)")
    if tr is not None:
        R = np.array([len(tr) / max(float(tr.arrival_s[-1] - tr.arrival_s[0]), 1e-9)])
        C = None
    li, lo = _lengths("isl", isl, isl_dist), _lengths("osl", osl, osl_dist)
    isl_m = float(np.mean(tr.isl)) if tr is not None else li.mean
    osl_m = float(np.mean(tr.osl)) if tr is not None else lo.mean
    for name, v in (("ttft_slo", ttft_slo), ("tpot_slo", tpot_slo)):
        if v is not None and not float(v) > 0:
            raise ValueError(f"{name}: must be > 0 seconds, got {v!r}")
    dep = deployment(m, hw, layout=layout_of(tp, ep, pp, dp, redundant_experts) or
                     __import__("tokenomy.core.layout", fromlist=["Layout"]).Layout(), weight_dtype=weight_dtype,
                     kv_dtype=kv_dtype, efficiency=efficiency, usd_per_chip_hour=usd_per_chip_hour)
    degrees = layout_of(tp, ep, pp, dp, redundant_experts)
    B0 = float(min(np.max(C) if C is not None else 64.0, max_batch or 256))
    lay, rule = choose_layout(dep, positive_int("chips", chips), degrees, np.array([[B0]]),
                              np.array([[isl_m + osl_m / 2.0]]), np.ones((1, 1)))
    dep = dep.with_(layout=lay)
    prof = engine_profile(engine, int(lay.tp), max_num_tokens, max_batch)
    s = steady(dep, prof, isl=isl_m, osl=osl_m, concurrency=C, rate=R, cache_hit=float(cache_hit),
               arrivals=arrivals)
    if not np.any(s.fits):
        raise ValueError(f"model: {m.name} does not fit on {dep.chips} x {hw.chip.name} ({lay.label()}) with a KV "
                         f"cache for one {isl_m + osl_m:g}-token sequence under {prof.name}'s memory share")
    load = C if C is not None else R
    sims = [None] * len(load)
    if method == "simulate":
        from tokenomy.serving.simulator import simulate

        n_req = positive_int("requests", requests) or 2000
        for i, x in enumerate(load):
            w = Workload(li, lo, concurrency=x if C is not None else None, rate=x if C is None else None,
                         cache_hit=float(cache_hit), arrivals=arrivals, trace=tr, seed=seed)
            sims[i] = simulate(dep, prof, w, n_req)
    rows = [_row(dep, prof, s, i, C, R, sims[i], ttft_slo, tpot_slo) for i in range(len(load))]
    _check_slos(rows, ttft_slo, tpot_slo, "concurrency" if C is not None else "rate")
    title = (f"serve (agg, {method}): {m.name} on {dep.chips} x {hw.chip.name} ({hw.name}); layout {lay.label()} "
             f"({rule}); {prof.label()}; ISL {li.label() if tr is None else 'trace'} / OSL "
             f"{lo.label() if tr is None else 'trace'}, cache hit {float(cache_hit):g}; {dep.eff.name} efficiency")
    notes = tuple(f"{r['concurrency'] or r['rate']}: capacity-limited (demand exceeds B_kv = {r['b_kv']:g}, max batch "
                  f"{prof.max_batch} or the {prof.max_num_tokens}-token budget)" for r in rows if r["capacity_limited"])
    return Result("serve", title, tuple(rows), COLUMNS, {"plan": lay.as_dict(), "layout_rule": rule,
                  "engine": prof.name}, notes, _explain(dep, prof, s, load, isl_m, osl_m), rows_key="")


def _f(x):
    x = float(x)
    return None if x != x else x


def _row(dep, prof, s, i, C, R, sim, ttft_slo, tpot_slo) -> dict:
    g = lambda a: _f(np.ravel(a)[i])  # noqa: E731
    row = {"plan": dep.layout.label(), "mode": "agg", "engine": prof.name,
           "concurrency": None if C is None else float(C[i]), "rate": None if R is None else float(R[i]),
           "ttft_s": g(s.ttft_s), "tpot_s": g(s.tpot_s), "e2e_s": g(s.e2e_s), "ttft_p50_s": g(s.ttft_p50_s),
           "ttft_p99_s": g(s.ttft_p99_s), "tpot_p50_s": g(s.tpot_s), "tpot_p99_s": g(s.tpot_s),
           "requests_per_s": g(s.requests_per_s), "tokens_per_s_per_chip": _div(g(s.output_tokens_per_s), dep.chips),
           "tokens_per_s_per_user": _div(1.0, g(s.tpot_s)), "usd_per_mtok_input": g(s.usd_per_mtok_input),
           "usd_per_mtok_output": g(s.usd_per_mtok_output), "kv_occupancy": g(s.kv_occupancy),
           "capacity_limited": bool(np.ravel(s.capacity_limited)[i]), "bound": bound_name(np.ravel(s.bound)[i]),
           "running_batch": g(s.batch), "b_kv": g(s.b_kv), "queue_s": g(s.queue_s), "chips": dep.chips}
    if sim is not None:
        row.update(sim.summary(dep.chips))
    ok = ((ttft_slo is None or (row["ttft_s"] or np.inf) <= ttft_slo)
          and (tpot_slo is None or (row["tpot_s"] or np.inf) <= tpot_slo))
    row["goodput_requests_per_s"] = (row.get("goodput_requests_per_s_sim") if sim is not None and
                                     (ttft_slo or tpot_slo) else (row["requests_per_s"] if ok else 0.0))
    if sim is not None and (ttft_slo or tpot_slo):
        row["goodput_requests_per_s"] = sim.goodput(ttft_slo, tpot_slo)
    return row


def _div(a, b):
    return None if a is None or b in (None, 0) else a / b


def _check_slos(rows, ttft_slo, tpot_slo, key):
    if ttft_slo is None and tpot_slo is None:
        return
    if any(r["goodput_requests_per_s"] for r in rows):
        return

    def miss(r):
        m = [(r["ttft_s"] or np.inf) / ttft_slo if ttft_slo else 0.0, (r["tpot_s"] or np.inf) / tpot_slo
             if tpot_slo else 0.0]
        return max(m)

    best = min(rows, key=miss)
    raise ValueError(f"ttft_slo, tpot_slo: no workload point meets them; closest is {key} {best[key]:g} with TTFT "
                     f"{fmt_seconds(best['ttft_s'] or np.inf)}, TPOT {fmt_seconds(best['tpot_s'] or np.inf)} "
                     f"({(miss(best) - 1) * 100:.0f}% over)")


def _explain(dep, prof, s, load, isl, osl) -> tuple[str, ...]:
    lines = [f"engine profile: {prof.label()}",
             f"B_kv = KV capacity / (ISL + OSL = {isl + osl:g} tokens, rounded to blocks of {prof.block_size}) = "
             f"{float(np.ravel(s.b_kv)[0]):g} sequences"]
    for i, x in enumerate(load):
        g = lambda a: float(np.ravel(a)[i])  # noqa: E731
        lines += [f"point {x:g}: B = min(load, B_kv, max_batch {prof.max_batch}) = {g(s.batch):g}; a mean step runs "
                  f"n = {g(s.decodes):.4g} decodes at context {isl + osl / 2:g} + P = {g(s.prefill_per_step):.4g} "
                  f"prefill tokens",
                  f"  TPOT = t(n, P) = {fmt_seconds(g(s.tpot_s))} (engine; bound {bound_name(np.ravel(s.bound)[i])})",
                  f"  TTFT = queue {fmt_seconds(g(s.queue_s))} + {g(s.chunks):g} chunk step(s) x "
                  f"{fmt_seconds(g(s.chunk_step_s))} (+ the wait for the next step, open loop) = "
                  f"{fmt_seconds(g(s.ttft_s))}",
                  f"  requests/s = B / lifetime = {g(s.requests_per_s):.4g}; prefill share of step time "
                  f"{g(s.prefill_share):.3f} -> ${g(s.usd_per_mtok_input):.4g}/Mtok in, "
                  f"${g(s.usd_per_mtok_output):.4g}/Mtok out"]
    return tuple(lines)
