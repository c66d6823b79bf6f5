"""serve: a workload on a deployment — TTFT, TPOT, throughput and $ per workload point, aggregated serving.

    method "analytic"  serving.steady (vectorised; means of the length distributions)
    method "simulate"  serving.simulator (iteration-level, seeded; percentiles from the requests)
Layout: the degrees given, else the candidate layout that serves the workload best (answers.serve_layout,
objectives.WORKLOAD). Engine profile: catalog/engines/<engine>.toml (default vllm), its token budget and
batch cap overridable. Comma lists of concurrency or rate sweep. SLOs: goodput by plan_serving.meets (the rule plan
uses); when no point meets them, a note names the closest and by how much it misses (an answer, as plan gives).
    protocol           the benchmark tool whose run the figures reproduce (catalog/protocols; default "steady": the
                       steady state users plan with): any other runs serving.protocol_run — the simulator from the
                       first wave of C clients at t = 0 for the tool's prompt count, lengths drawn as the tool draws
                       them, each metric reduced as the tool reduces it (aggregated mode; either method)
    mode "disagg"      serving.disagg (analytic) or serving.sim_disagg (simulate: both pools iteration by iteration,
                       percentiles from the requests): a prefill pool of ``prefill_chips`` and a decode pool of
                       ``decode_chips``, each with its own layout (``prefill_tp``... / ``decode_tp``...; default: the
                       best valid layout of the pool for its own pass — prefill: the prompt pass at ISL under the
                       token budget, for the decode pool's rate; decode: objectives.DECODE_POOL, those
                       holding the load first, then the lowest TPOT, then the most requests/s — serving.disagg)
    plan_disagg        the pool splits P + D <= the chip budget (whole scale-up domains or powers of two), each pool
                       on its best layout, at every load point: the Pareto front (tokens/s per chip vs per user) and
                       the best plan under the SLOs (objectives.GOODPUT_PER_USD: most goodput per dollar), or "no plan meets" with the closest
"""

from __future__ import annotations

import numpy as np

from tokenomy.answers import error_bars
from tokenomy.answers import inputs
from tokenomy.answers.door import door
from tokenomy.answers.resolve import (deployment, hardware_of, layout_of, model_of, weight_dtype_of,
                                     within_window)
from tokenomy.answers.result import Result
from tokenomy.core.layout import Layout
from tokenomy.answers.engines import benchmark_protocol, engine_profile
from tokenomy.answers.launch import emits
from tokenomy.answers.pools import decode_side, prefill_side
from tokenomy.answers.serve_layout import ranking_batch, serve_layout
from tokenomy.answers.energy_cols import SIM_SCALED, disagg_energy, power_of, serving_energy
from tokenomy.serving.simulator import BYTES_PER_REQUEST
from tokenomy.answers.variants import reports_hardware
from tokenomy.serving.steady import bound_name, steady
from tokenomy.serving.workload import Lengths, Workload, read_trace
from tokenomy.units import DTYPE_BYTES, fmt_bytes, fmt_seconds

COLUMNS = ("concurrency", "rate", "ttft_s", "tpot_s", "e2e_s", "requests_per_s", "tokens_per_s_per_chip",
           "tokens_per_s_per_user", "usd_per_mtok_input", "usd_per_mtok_output", "j_per_output_token",
           "tokens_per_s_per_mw", "tco_usd_per_mtok_output", "kv_occupancy", "capacity_limited", "bound",
           "goodput_requests_per_s")
# the prefill share of engine time above which the analytic TTFT understates (or, in a closed loop, misjudges) the
# prompts' queue for the token budget: open loop, the simulator measured +10% at 0.47-0.49 and +17-40% at 0.69-0.74
# (Llama-3.1-70B, 8 x H100, vLLM profile, 2k-6k-token prompts), within 5% below; closed loop -11..+11% at 0.53-0.85
# with output lengths ±10% (70B vLLM, 8B SGLang, Qwen3-30B-A3B trtllm; 3k-4k-token prompts, short outputs) and up
# to 45% under the analytic TTFT with fixed lengths, whose evenly started clients phase-lock (serving/steady.py,
# tests/serving/test_open_loop_prefill.py, test_serve_steady_and_sim.py)
BUSY_PREFILL = 0.45


def _busy_prefill_notes(s, C, R, arrivals) -> tuple[str, ...]:
    """Where the engine spends over BUSY_PREFILL of its time on prefill, the prompts' queue for the token budget is
    beyond what the analytic TTFT is checked for: the simulator measured up to 40% more (open loop); a closed loop's
    own feedback bounds the queue (-11..+11% with output lengths that vary; with fixed lengths the simulator's
    clients phase-lock and rarely collide: up to 45% less). Not where there is no one to queue behind (one running
    request) or the prompts all arrive together (that queue is modelled step by step)."""
    if C is not None and arrivals == "together":
        return ()
    load, unit = (R, " requests/s") if C is None else (C, " users")
    told = "up to 40% more" if C is None else "-11% to +11% with varied output lengths, up to 45% less with fixed ones"
    return tuple(f"{load[i]:g}{unit}: the engine spends {s.prefill_share[i]:.0%} of its time on prefill; above "
                 f"{BUSY_PREFILL:.0%} prompts queue for the token budget beyond what the analytic TTFT is checked for "
                 f"(the simulator measured {told}): try --method simulate"
                 for i in range(len(load)) if s.prefill_share[i] > BUSY_PREFILL and not s.capacity_limited[i]
                 and s.batch[i] > 1.0)


def serving_kv_dtype(model, engine: str, weight_dtype=None, kv_dtype=None) -> str:
    """The KV-cache dtype of a served deployment: ``kv_dtype`` where given, else the engine's default for the
    checkpoint's weight dtype (catalog/engines/<engine>.toml [kv_dtype]: vLLM and SGLang keep the model's bf16,
    TensorRT-LLM follows an FP8/NVFP4 checkpoint's FP8 cache); "auto" asks for that default by name."""
    if kv_dtype is not None and kv_dtype != "auto":
        if kv_dtype not in DTYPE_BYTES:
            raise ValueError(f"kv_dtype: {kv_dtype!r} is not a dtype; allowed: auto (the engine's), "
                             f"{', '.join(DTYPE_BYTES)}")
        return kv_dtype
    weights = weight_dtype_of(weight_dtype) or model_of(model).quantization.dense
    return engine_profile(engine).kv_dtype_for(weights)


def _points(name, values):
    return None if values is None else np.asarray(inputs.numbers(name, values), dtype=float)


def _lengths(field, fixed, dist):
    if dist is not None:
        return dist if isinstance(dist, Lengths) else Lengths.parse(field + "_dist", dist)
    v = inputs.optional(field, fixed)
    if v is None:
        raise ValueError(f"{field}: must be a positive integer")
    return Lengths("fixed", float(v))


def check_hit_and_arrivals(cache_hit, arrivals) -> None:
    """The workload's prefix-cache hit fraction in [0, 1) (a request computes at least one token) and its closed-loop
    arrival pattern, checked where every method and mode starts."""
    if not 0.0 <= float(cache_hit) < 1.0:  # NaN fails too
        raise ValueError(f"cache_hit: must be in [0, 1), got {cache_hit!r}")
    if arrivals not in ("together", "staggered"):
        raise ValueError(f"arrivals: {arrivals!r}; allowed: together, staggered")


@door()
@reports_hardware
@emits
def serve(model, hardware, *, concurrency=None, rate=None, isl=1024, osl=1024, isl_dist=None, osl_dist=None,
          trace=None, cache_hit=0.0, engine="vllm", max_num_tokens=None, max_batch=None, ttft_slo=None,
          tpot_slo=None, method="analytic", arrivals="staggered", requests=None, seed=0, chips=None, tp=None,
          ep=None, pp=None, dp=None, redundant_experts=None, attn_dp=None, kv_batch=None, weight_dtype=None,
          kv_dtype=None, efficiency="calibrated", usd_per_chip_hour=None, mode="agg", pools=None,
          usd_per_kwh=None, facility=None, emit=None, protocol="steady") -> Result:
    """The serving answer (module docstring): one row per workload point. The layout keywords are decode's
    (answers.resolve.layout_of). ``pools`` (disagg): prefill_chips, decode_chips and the pools' layout keywords
    (prefill_tp, ..., prefill_kv_batch, decode_tp, ...). ``emit`` (vllm | sglang | trtllm | dynamo): the launch
    commands of the deployment served in ``extra["launch"]`` (answers/launch.py, docs/deploy.md)."""
    if mode not in ("agg", "disagg"):
        raise ValueError(f"mode: {mode!r}; allowed: agg, disagg")
    if method not in ("analytic", "simulate"):
        raise ValueError(f"method: {method!r}; allowed: analytic, simulate")
    check_hit_and_arrivals(cache_hit, arrivals)
    proto = benchmark_protocol(protocol)
    if not proto.steady and (mode == "disagg" or trace is not None):
        raise ValueError(f"protocol: {protocol!r} runs on aggregated serving without a trace; give protocol=steady "
                         "with mode=disagg or a trace")
    kv_dtype = serving_kv_dtype(model, engine, weight_dtype, kv_dtype)
    _one_mode(mode, pools, dict(chips=chips, tp=tp, ep=ep, pp=pp, dp=dp, redundant_experts=redundant_experts,
                                attn_dp=attn_dp, kv_batch=kv_batch))
    if mode == "disagg":
        sim = dict(method=method, trace=trace, arrivals=arrivals, requests=requests, seed=seed)
        return serve_disagg(model, hardware, concurrency=concurrency, rate=rate, isl=isl, osl=osl, isl_dist=isl_dist,
                            osl_dist=osl_dist, cache_hit=cache_hit, engine=engine, max_num_tokens=max_num_tokens,
                            max_batch=max_batch, ttft_slo=ttft_slo, tpot_slo=tpot_slo, weight_dtype=weight_dtype,
                            kv_dtype=kv_dtype, efficiency=efficiency, usd_per_chip_hour=usd_per_chip_hour,
                            sim=sim, energy=dict(usd_per_kwh=usd_per_kwh, facility=facility), **(pools or {}))
    m, hw = model_of(model), hardware_of(hardware)
    power = power_of(hw, usd_per_kwh, facility)
    C, R, li, lo, tr = _load(concurrency, rate, isl, osl, isl_dist, osl_dist, ttft_slo, tpot_slo, trace)
    isl_m = float(np.mean(tr.isl)) if tr is not None else li.mean
    osl_m = float(np.mean(tr.osl)) if tr is not None else lo.mean
    within_context(m, *((float(np.max(tr.isl)), float(np.max(tr.osl))) if tr is not None else
                        (_longest(li), _longest(lo))))
    degrees = layout_of(tp, ep, pp, dp, redundant_experts, attn_dp, kv_batch)
    dep = deployment(m, hw, layout=degrees or Layout(), weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                     efficiency=efficiency, usd_per_chip_hour=usd_per_chip_hour, engine=engine)
    B0 = ranking_batch(C, max_batch or engine_profile(engine).max_batch)
    lay, rule = serve_layout(dep, inputs.optional("chips", chips), degrees, B0, isl_m, osl_m, engine, max_num_tokens,
                             max_batch, workload=dict(concurrency=C, rate=R, cache_hit=float(cache_hit),
                                                      arrivals=arrivals), slos=(ttft_slo, tpot_slo))
    dep = dep.with_(layout=lay)
    prof = engine_profile(engine, int(lay.tp), max_num_tokens, max_batch)
    s = steady(dep, prof, isl=isl_m, osl=osl_m, concurrency=C, rate=R, cache_hit=float(cache_hit),
               arrivals=arrivals)
    if not np.any(s.fits):
        raise ValueError(f"model: {m.name} does not fit on {dep.chips} x {hw.chip.name} ({lay.label()}) with a KV "
                         f"cache for one {isl_m + osl_m:g}-token sequence under {prof.name}'s memory share")
    load = C if C is not None else R
    sims = [None] * len(load)
    if not proto.steady:
        from tokenomy.serving.protocol_run import run_protocol

        sims = [run_protocol(dep, prof, proto, li if li.kind != "fixed" else int(li.a),
                             lo if lo.kind != "fixed" else int(lo.a), concurrency=None if C is None else float(x),
                             rate=None if C is not None else float(x), seed=seed,
                             prompts=inputs.optional("requests", requests)) for x in load]
    elif method == "simulate":
        from tokenomy.serving.replicas import simulate_replicas

        sims = _simulations(lambda w, n: simulate_replicas(dep, prof, w, n), C, R, li, lo, tr, cache_hit, arrivals,
                            requests, seed)
    energy = serving_energy(power, s, dep.chips, isl_m)
    rows = [_row(dep, prof, s, i, C, R, sims[i], ttft_slo, tpot_slo, energy) for i in range(len(load))]
    error_bars.attach(rows, error_bars.regime_of(dep, prof.name, error_bars.SERVE), "running_batch", isl_m + osl_m / 2)
    how = method if proto.steady else f"protocol {proto.name}"
    title = (f"serve (agg, {how}): {m.name} on {dep.chips} x {hw.chip.name} ({hw.name}); layout {lay.label()} "
             f"({rule}); {prof.label()}; ISL {li.label() if tr is None else 'trace'} / OSL "
             f"{lo.label() if tr is None else 'trace'}, cache hit {float(cache_hit):g}; {_dtypes(dep)}; "
             f"{dep.eff.name} efficiency")
    notes = tuple(f"{r['concurrency'] or r['rate']}: capacity-limited (demand exceeds B_kv = {r['b_kv']:g}, max batch "
                  f"{prof.max_batch} or the {prof.max_num_tokens}-token budget)" for r in rows if r["capacity_limited"])
    if method == "analytic" and proto.steady:
        notes += _busy_prefill_notes(s, C, R, arrivals)
    if not proto.steady:
        notes += (f"protocol {proto.label()}; read from {proto.cite}",)
    slo_notes, slo_extra = _slo_verdict(rows, ttft_slo, tpot_slo)
    return Result("serve", title, tuple(rows), COLUMNS, {"plan": lay.as_dict(), "layout_rule": rule,
                  "engine": prof.name, "dtypes": _dtypes(dep), **slo_extra}, slo_notes + notes,
                  _explain(dep, prof, s, load, isl_m, osl_m),
                  rows_key="")


def _one_mode(mode: str, pools: dict | None, agg_layout: dict) -> None:
    """Each mode's layout keywords only: the pools' with disagg, the aggregated chips and degrees with agg (the
    other's would be silently unused)."""
    given = [k for k, v in (pools or {}).items() if v is not None]
    if mode == "agg" and given:
        raise ValueError(f"{given[0]}: a disaggregated pool's; only with mode disagg")
    used = [k for k, v in agg_layout.items() if v is not None]
    if mode == "disagg" and used:
        raise ValueError(f"{used[0]}: the aggregated layout's; with mode disagg give each pool's (prefill_chips, "
                         f"prefill_{used[0]}, decode_chips, decode_{used[0]}, ...)")


def _longest(lengths) -> float:
    """The longest length a distribution draws (fixed: N, uniform: b; lognormal, unbounded: its mean)."""
    return float({"fixed": lengths.a, "uniform": lengths.b}.get(lengths.kind, lengths.mean))


def within_context(m, isl: float, osl: float) -> None:
    """ISL + OSL inside the model's context window: the rule decode and prefill apply to their context."""
    within_window(m, isl + osl, "isl", "ISL + OSL = ")


def _dtypes(dep) -> str:
    return f"weights {dep.weight_dtype or dep.model.quantization.dense}, KV {dep.kv_dtype}"


def _simulations(run, C, R, li, lo, tr, cache_hit, arrivals, requests, seed) -> list:
    """One simulation per load point, ``run(workload, n_requests)`` (the aggregated or the disaggregated
    simulator): ``requests`` requests (default 2000; a trace: its own), seeded."""
    n_req = inputs.optional("requests", requests) or 2000
    inputs.within_memory("requests", n_req, BYTES_PER_REQUEST, "simulated requests")
    return [run(Workload(li, lo, concurrency=x if C is not None else None, rate=x if C is None else None,
                         cache_hit=float(cache_hit), arrivals=arrivals, trace=tr, seed=seed), n_req)
            for x in (C if C is not None else R)]


def _f(x):
    x = float(x)
    return None if x != x else x


def _row(dep, prof, s, i, C, R, sim, ttft_slo, tpot_slo, energy=None) -> dict:
    """One workload point's row; ``energy``: serving_energy's arrays (answers/energy_cols.py) for its columns."""
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
    row["interactivity"] = row["tokens_per_s_per_user"]  # InferenceX's name: 1/TPOT, tok/s/user
    row.update({k: g(v) for k, v in (energy or {}).items()})
    return _with_sim(row, sim, dep.chips, ttft_slo, tpot_slo)


def _with_sim(row: dict, sim, chips: int, ttft_slo, tpot_slo) -> dict:
    """The row with the simulation's statistics (means and percentiles from its requests) and its goodput by
    plan_serving.goodput_requests_per_s, the rule plan uses too."""
    from tokenomy.answers.plan_serving import goodput_requests_per_s

    if sim is not None:
        analytic = row.get("requests_per_s")
        summary = sim.summary(chips)
        row.update(summary)
        # the simulated request rate carries the tokens per chip and the $ per token with it (same lengths), where
        # the run does not count them itself (a protocol run: its tool's output tokens over its span)
        simulated = row.get("requests_per_s")
        if analytic and simulated:
            k = simulated / analytic
            for key, power in (("tokens_per_s_per_chip", 1), ("usd_per_mtok_input", -1), ("usd_per_mtok_output", -1),
                               *SIM_SCALED.items()):
                if row.get(key) is not None and key not in summary:
                    row[key] *= k ** power
    row["goodput_requests_per_s"] = goodput_requests_per_s(row, ttft_slo, tpot_slo, sim)
    return row


def _div(a, b):
    return None if a is None or b in (None, 0) else a / b


def _slo_verdict(rows, ttft_slo, tpot_slo) -> tuple[tuple[str, ...], dict]:
    """(notes, payload fields) on the SLOs, as plan answers them: when no workload point meets them, a note naming
    the closest point and by how much it misses each SLO (an answer, not an error), and ``closest``/``misses_by``."""
    from tokenomy.answers.plan_serving import closest, misses_by, no_plan_meets

    if (ttft_slo is None and tpot_slo is None) or any(r["goodput_requests_per_s"] for r in rows):
        return (), {}
    near = closest(rows, ttft_slo, tpot_slo)
    return ((no_plan_meets(near, ttft_slo, tpot_slo, "workload point"),),
            {"closest": near, "misses_by": misses_by(near, ttft_slo, tpot_slo)})


def _explain(dep, prof, s, load, isl, osl) -> tuple[str, ...]:
    lines = [f"engine profile: {prof.label()}",
             f"all-reduce ({prof.name}): {prof.all_reduce}; timed as the fastest of the one-shot, two-shot and ring "
             f"costs inside the scale-up domain (core.collectives.all_reduce_cost)",
             f"B_kv = KV capacity / (ISL + OSL = {isl + osl:g} tokens, rounded to blocks of {prof.block_size}) = "
             f"{float(np.ravel(s.b_kv)[0]):g} sequences"]
    if int(dep.layout.dp) > 1:
        lines.append(f"dp = {int(dep.layout.dp)} replicas, each a server of its own (serving/replicas.py): the step "
                     "times, TPOT and TTFT below are one replica's at its share of the load; B, n, P, B_kv and "
                     "requests/s are summed over the replicas")
    for i, x in enumerate(load):
        g = lambda a: float(np.ravel(a)[i])  # noqa: E731
        lines += [f"point {x:g}: B = min(load, B_kv, max_batch {prof.max_batch} per scheduler, B_N the most the "
                  f"{prof.max_num_tokens}-token budget sustains) = {g(s.batch):g}; a mean step runs "
                  f"n = {g(s.decodes):.4g} decodes at context {isl + osl / 2:g} + P = {g(s.prefill_per_step):.4g} "
                  f"prefill tokens",
                  f"  TPOT = f·t(n, P/f) + (1 - f)·t(n, 0), f the share of steps carrying a prefill chunk = "
                  f"{fmt_seconds(g(s.tpot_s))} (engine; bound {bound_name(np.ravel(s.bound)[i])})",
                  f"  TTFT = queue {fmt_seconds(g(s.queue_s))} + {g(s.chunks):g} chunk step(s), the last "
                  f"{fmt_seconds(g(s.chunk_step_s))} (open loop: + the rest of a size-biased step, spills past the room "
                  f"and the queue behind full-room chunks; + request overhead) = "
                  f"{fmt_seconds(g(s.ttft_s))}",
                  f"  requests/s = B / lifetime = {g(s.requests_per_s):.4g}; prefill share of step time "
                  f"{g(s.prefill_share):.3f} -> ${g(s.usd_per_mtok_input):.4g}/Mtok in, "
                  f"${g(s.usd_per_mtok_output):.4g}/Mtok out"]
    return tuple(lines)


# ---- disaggregated serving -------------------------------------------------------------------------------------

DISAGG_COLUMNS = ("plan", "prefill_chips", "decode_chips", "concurrency", "rate", "ttft_s", "tpot_s",
                  "kv_transfer_s", "tokens_per_s_per_chip", "tokens_per_s_per_user", "usd_per_mtok_input",
                  "usd_per_mtok_output", "j_per_output_token", "tokens_per_s_per_mw", "tco_usd_per_mtok_output",
                  "capacity_limited", "goodput_requests_per_s")
POOL_DEGREES = ("tp", "ep", "pp", "dp", "redundant_experts", "attn_dp", "kv_batch")  # layout_of's, in its order


def _workload(concurrency, rate, isl, osl, isl_dist, osl_dist, ttft_slo, tpot_slo):
    """(C, R, ISL lengths, OSL lengths), each checked."""
    return _load(concurrency, rate, isl, osl, isl_dist, osl_dist, ttft_slo, tpot_slo, None)[:4]


def _load(concurrency, rate, isl, osl, isl_dist, osl_dist, ttft_slo, tpot_slo, trace):
    """(C, R, ISL lengths, OSL lengths, trace), each checked; a trace (a path or Requests) replaces the load points
    by its mean request rate (R), as the analytic models read it."""
    tr = read_trace(trace) if trace is not None and not hasattr(trace, "isl") else trace
    C, R = _points("concurrency", concurrency), _points("rate", rate)
    given = [n for n, v in (("concurrency", C), ("rate", R)) if v is not None]
    if tr is not None and given:
        raise ValueError(f"{given[0]}: not with trace (the trace's arrivals are the load); give one")
    if tr is None and (C is None) == (R is None):
        raise ValueError("concurrency, rate: give one (closed loop C users, or open loop R requests/s)")
    if tr is not None:
        R = np.array([len(tr) / max(float(tr.arrival_s[-1] - tr.arrival_s[0]), 1e-9)])
        C = None
    for name, v in (("ttft_slo", ttft_slo), ("tpot_slo", tpot_slo)):
        if v is not None and not float(v) > 0:
            raise ValueError(f"{name}: must be > 0 seconds, got {v!r}")
    return C, R, _lengths("isl", isl, isl_dist), _lengths("osl", osl, osl_dist), tr


def _disagg_rows(pre, dec, engine, s, C, R, ttft_slo, tpot_slo, sims=None, energy=None) -> list[dict]:
    """One row per workload point; ``energy``: energy_cols.disagg_energy's arrays (each pool's watts: the decode
    pool's per output token, the prefill pool's per input token) for its columns."""
    energy = energy or {}
    rows = []
    for i in range(len(C if C is not None else R)):
        g = lambda a: _f(np.ravel(np.broadcast_to(a, np.shape(s.tpot_s)))[i])  # noqa: E731
        row = {"plan": f"prefill {pre.layout.label()} | decode {dec.layout.label()}", "mode": "disagg",
               "engine": engine, "prefill_chips": pre.chips, "decode_chips": dec.chips, "chips": s.chips,
               "prefill_plan": pre.layout.as_dict(), "decode_plan": dec.layout.as_dict(),
               "concurrency": None if C is None else float(C[i]), "rate": None if R is None else float(R[i]),
               "ttft_s": g(s.ttft_s), "tpot_s": g(s.tpot_s), "e2e_s": g(s.e2e_s), "ttft_p50_s": g(s.ttft_s),
               "ttft_p99_s": g(s.ttft_s), "tpot_p50_s": g(s.tpot_s), "tpot_p99_s": g(s.tpot_s),
               "prefill_wait_s": g(s.prefill_wait_s), "prefill_pass_s": g(s.prefill_pass_s),
               "prompts_per_pass": g(s.prompts_per_pass), "kv_bytes": s.kv_bytes, "kv_transfer_s": s.kv_transfer_s,
               "kv_link": "scale-out" if s.crosses_domain else "scale-up", "queue_s": g(s.queue_s),
               "requests_per_s": g(s.requests_per_s), "tokens_per_s_per_chip": g(s.tokens_per_s_per_chip),
               "tokens_per_s_per_user": _div(1.0, g(s.tpot_s)), "usd_per_mtok_input": g(s.usd_per_mtok_input),
               "usd_per_mtok_output": g(s.usd_per_mtok_output), "kv_occupancy": g(s.kv_occupancy),
               "running_batch": g(s.batch), "decode_cap": s.decode_cap,
               "prefill_capacity_requests_per_s": s.prefill_capacity,
               "decode_capacity_requests_per_s": g(s.decode_capacity),
               "prefill_utilisation": _div(g(s.requests_per_s), s.prefill_capacity),
               "decode_utilisation": _div(g(s.requests_per_s), g(s.decode_capacity)),
               "capacity_limited": bool(np.ravel(s.capacity_limited)[i]), "bound": bound_name(np.ravel(s.bound)[i])}
        row["interactivity"] = row["tokens_per_s_per_user"]
        row.update({k: g(v) for k, v in energy.items()})
        rows.append(_with_sim(row, sims[i] if sims else None, s.chips, ttft_slo, tpot_slo))
    return rows


def _degrees_of(pools: dict, name: str):
    return layout_of(*(pools.get(f"{name}_{k}") for k in POOL_DEGREES))


def _split(dep, P, D, pre_deg, dec_deg, C, R, isl, osl, cache_hit, engine, max_num_tokens, max_batch, dec_cache,
           tables, crosses_domain=None):
    """Both pools (the decode pool first: its request rate sizes the prefill pool's layout) and their steady state."""
    from tokenomy.serving.disagg import decode_rate, disagg

    dec, prof_d, pool = decode_side(dep, D, dec_deg, C, R, isl, osl, engine, max_num_tokens, max_batch, dec_cache)
    x_d = decode_rate(pool, osl, C, R)
    pre, prof_p, _ = prefill_side(dep, P, pre_deg, x_d, isl, cache_hit, engine, max_num_tokens, max_batch, tables)
    s = disagg(pre, dec, prof_p, prof_d, isl=isl, osl=osl, concurrency=C, rate=R, cache_hit=cache_hit,
               crosses_domain=crosses_domain, decode=pool)
    return pre, prof_p, dec, prof_d, s


def serve_disagg(model, hardware, *, prefill_chips=None, decode_chips=None, concurrency=None, rate=None, isl=1024,
                 osl=1024, isl_dist=None, osl_dist=None, cache_hit=0.0, engine="vllm", max_num_tokens=None,
                 max_batch=None, ttft_slo=None, tpot_slo=None, weight_dtype=None, kv_dtype=None,
                 efficiency="calibrated", usd_per_chip_hour=None, crosses_domain=None, sim=None, energy=None,
                 **pool_degrees) -> Result:
    """Disaggregated serving (module docstring): one row per workload point. ``sim``: method ("analytic" |
    "simulate": serving.sim_disagg per point, percentiles from its requests), trace, arrivals, requests, seed;
    ``energy``: usd_per_kwh, facility (energy_cols.power_of)."""
    bad = set(pool_degrees) - {f"{p}_{k}" for p in ("prefill", "decode") for k in POOL_DEGREES}
    if bad:
        raise ValueError(f"pools: unknown {', '.join(sorted(bad))}; allowed: prefill_/decode_ + "
                         f"{', '.join(POOL_DEGREES)}")
    P, D = inputs.optional("prefill_chips", prefill_chips), inputs.optional("decode_chips", decode_chips)
    if P is None or D is None:
        raise ValueError("prefill_chips, decode_chips: disaggregated serving needs both pool sizes")
    sim = {"method": "analytic", **(sim or {})}
    C, R, li, lo, tr = _load(concurrency, rate, isl, osl, isl_dist, osl_dist, ttft_slo, tpot_slo, sim.get("trace"))
    isl_m, osl_m = (float(np.mean(tr.isl)), float(np.mean(tr.osl))) if tr is not None else (li.mean, lo.mean)
    m, hw = model_of(model), hardware_of(hardware)
    power = power_of(hw, **(energy or {}))
    within_context(m, isl_m, osl_m)
    kv_dtype = serving_kv_dtype(m, engine, weight_dtype, kv_dtype)
    dep = deployment(m, hw, layout=Layout(), weight_dtype=weight_dtype, kv_dtype=kv_dtype, efficiency=efficiency,
                     usd_per_chip_hour=usd_per_chip_hour, engine=engine)
    pre_deg, dec_deg = _degrees_of(pool_degrees, "prefill"), _degrees_of(pool_degrees, "decode")
    pre, prof_p, dec, prof_d, s = _split(dep, P, D, pre_deg, dec_deg, C, R, isl_m, osl_m, float(cache_hit),
                                         engine, max_num_tokens, max_batch, {}, {}, crosses_domain)
    sims = None
    if sim["method"] == "simulate":
        from tokenomy.serving.sim_disagg import simulate_disagg

        sims = _simulations(lambda w, n: simulate_disagg(pre, dec, prof_p, prof_d, w, n,
                                                         crosses_domain=crosses_domain),
                            C, R, li, lo, tr, cache_hit, sim.get("arrivals", "staggered"), sim.get("requests"),
                            sim.get("seed", 0))
    rows = _disagg_rows(pre, dec, prof_d.name, s, C, R, ttft_slo, tpot_slo, sims,
                        disagg_energy(power, s, pre.chips, dec.chips, isl_m, osl_m))
    error_bars.attach(rows, error_bars.regime_of(dec, prof_d.name, error_bars.SERVE, "disagg"), "running_batch",
                      isl_m + osl_m / 2)
    title = (f"serve (disagg, {sim['method']}): {m.name} on {P} + {D} x {hw.chip.name} ({hw.name}); prefill "
             f"{pre.layout.label()}, decode {dec.layout.label()}; KV over {rows[0]['kv_link']}; {prof_d.label()}; "
             f"ISL {li.label() if tr is None else 'trace'} / OSL {lo.label() if tr is None else 'trace'}, cache hit "
             f"{float(cache_hit):g}; {_dtypes(dep)}; {dep.eff.name} efficiency")
    notes = tuple(f"{r['concurrency'] or r['rate']}: capacity-limited (prefill pool "
                  f"{r['prefill_capacity_requests_per_s']:.4g} req/s, decode pool "
                  f"{r['decode_capacity_requests_per_s']:.4g} req/s)" for r in rows if r["capacity_limited"])
    slo_notes, slo_extra = _slo_verdict(rows, ttft_slo, tpot_slo)
    return Result("serve", title, tuple(rows), DISAGG_COLUMNS, {"mode": "disagg", "engine": prof_d.name,
                  **slo_extra}, slo_notes + notes, _disagg_explain(pre, dec, s, isl_m, osl_m), rows_key="")


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


def _balanced(dep, Ps, x_d, isl, cache_hit, engine, max_num_tokens, max_batch, tables, bad, why):
    """The prefill sizes that keep up with the decode pool's rate x_d: the smallest whose capacity >= x_d and the
    next EXTRA_PREFILL_SIZES up (or, when none keeps up, the largest that fits); pools that do not fit go in ``bad``."""
    from tokenomy.serving.disagg import PoolDoesNotFit

    fit = []
    for P in Ps:
        if ("prefill", P) in bad:
            continue
        try:
            _, _, mu = prefill_side(dep, P, None, x_d, isl, cache_hit, engine, max_num_tokens, max_batch, tables)
        except PoolDoesNotFit as e:
            bad.add(("prefill", P))
            why[("prefill", P)] = str(e)
            continue
        fit.append((P, mu))
    keep = [i for i, (_, mu) in enumerate(fit) if mu >= x_d]
    if len(Ps) == 1 or not fit:
        return [P for P, _ in fit]
    return [P for P, _ in fit[keep[0]:keep[0] + 1 + EXTRA_PREFILL_SIZES]] if keep else [fit[-1][0]]


@reports_hardware
def plan_disagg(model, hardware, *, chips, concurrency=None, rate=None, isl=1024, osl=1024, isl_dist=None,
                osl_dist=None, cache_hit=0.0, engine="vllm", max_num_tokens=None, max_batch=None, ttft_slo=None,
                tpot_slo=None, weight_dtype=None, kv_dtype=None, efficiency="calibrated",
                usd_per_chip_hour=None, top=None, prefill_chips=None, decode_chips=None) -> Result:
    """Search prefill/decode pool splits P + D <= ``chips`` (module docstring; serving.disagg for how the pools are
    sized for each other): rows ranked by objectives.GOODPUT_PER_USD, the front of those meeting the SLOs."""
    from tokenomy.answers.objectives import GOODPUT_PER_USD
    from tokenomy.answers.plan_serving import misses_by, rank, with_goodput
    from tokenomy.serving.disagg import PoolDoesNotFit, decode_rate, disagg

    budget = inputs.optional("chips", chips)
    if budget is None:
        raise ValueError("chips: the chip budget to split into a prefill and a decode pool is required")
    P_fix, D_fix = inputs.optional("prefill_chips", prefill_chips), inputs.optional("decode_chips", decode_chips)
    if (P_fix or 0) + (D_fix or 0) > budget or (P_fix or D_fix or 0) >= budget:
        raise ValueError(f"prefill_chips: {P_fix or 0} + decode_chips {D_fix or 0} leave no room in the {budget} "
                         "chips available (chips); each pool needs at least one and P + D <= chips")
    top = None if top is None or top == 0 else inputs.optional("top", top)
    C, R, li, lo = _workload(concurrency, rate, isl, osl, isl_dist, osl_dist, ttft_slo, tpot_slo)
    m, hw = model_of(model), hardware_of(hardware)
    kv_dtype = serving_kv_dtype(m, engine, weight_dtype, kv_dtype)
    dep = deployment(m, hw, layout=Layout(), weight_dtype=weight_dtype, kv_dtype=kv_dtype, efficiency=efficiency,
                     usd_per_chip_hour=usd_per_chip_hour, engine=engine)
    isl_m, osl_m, hit = li.mean, lo.mean, float(cache_hit)
    within_context(m, isl_m, osl_m)
    power = power_of(hw)
    sizes = pool_sizes(budget, dep.topo.domain_size)
    dec_cache, tables, rows, bad, why = {}, {}, [], set(), {}
    # each load point is a plan of its own: its decode pool chosen for that load, its prefill pool for that rate
    points = [(None if C is None else C[i:i + 1], None if R is None else R[i:i + 1])
              for i in range(np.size(C if C is not None else R))]
    for C, R in points:
        for D, Ps in _splits(sizes, budget, P_fix, D_fix):
            try:
                dec, prof_d, pool = decode_side(dep, D, None, C, R, isl_m, osl_m, engine, max_num_tokens,
                                                 max_batch, dec_cache)
            except PoolDoesNotFit as e:
                bad.add(("decode", D))
                why[("decode", D)] = str(e)
                continue
            x_d = decode_rate(pool, osl_m, C, R)
            for P in _balanced(dep, Ps, x_d, isl_m, hit, engine, max_num_tokens, max_batch, tables, bad, why):
                try:
                    pre, prof_p, _ = prefill_side(dep, P, None, x_d, isl_m, hit, engine, max_num_tokens, max_batch,
                                                   tables)
                    s = disagg(pre, dec, prof_p, prof_d, isl=isl_m, osl=osl_m, concurrency=C, rate=R, cache_hit=hit,
                               decode=pool, prefill=tables[P].terms.get(pre.layout.label()))
                except PoolDoesNotFit as e:
                    bad.add((e.pool, P if e.pool == "prefill" else D))
                    why[(e.pool, P if e.pool == "prefill" else D)] = str(e)
                    continue
                rows += [with_goodput(r, dep.price, ttft_slo, tpot_slo)
                         for r in _disagg_rows(pre, dec, prof_d.name, s, C, R, ttft_slo, tpot_slo, None,
                                               disagg_energy(power, s, P, D, isl_m, osl_m))]
    if not rows:  # one line naming the pool and why (the largest pool's refusal when sizes were searched)
        if why:
            (pool, n), msg = max(why.items(), key=lambda kv: kv[0][1])
            fixed = {"prefill": P_fix, "decode": D_fix}[pool]
            raise ValueError(f"{pool}_chips: {msg}" if fixed else f"chips: no split of {budget} x {hw.chip.name} "
                             f"fits {m.name}; the largest {pool} pool tried, {n} chips: {msg}")
        raise ValueError(f"chips: no prefill/decode split of {budget} x {hw.chip.name} fits {m.name}")
    table, best, closest, notes = rank(rows, ttft_slo, tpot_slo, top)
    rule = GOODPUT_PER_USD.rule()
    notes.insert(0, f"{len(rows)} plans over pool sizes {', '.join(map(str, sizes))} (each decode pool with the "
                 f"prefill pools that keep up with it); pools that do not fit: "
                 f"{', '.join(f'{p} {n}' for p, n in sorted(bad)) or 'none'}")
    title = (f"plan (disagg): {m.name} on at most {budget} x {hw.chip.name} ({hw.name}); ISL {li.label()} / OSL "
             f"{lo.label()}; SLOs TTFT {ttft_slo if ttft_slo else '-'} s, TPOT {tpot_slo if tpot_slo else '-'} s; "
             f"{engine}; {dep.eff.name} efficiency; best {rule}")
    extra = {"mode": "disagg", "model": m.name, "hardware": hw.name, "chips_budget": budget, "rule": rule,
             "best": best, "closest": closest, "misses_by": misses_by(closest, ttft_slo, tpot_slo),
             "plans": len(rows), "pool_sizes": sizes}
    return Result("serve", title, tuple(table), ("best",) + DISAGG_COLUMNS + ("goodput_requests_per_usd",), extra,
                  tuple(notes), rows_key="")
