"""serve: a workload on a deployment — TTFT, TPOT, throughput and $ per workload point, aggregated serving.

    method "analytic"  serving.steady (vectorised; means of the length distributions)
    method "simulate"  serving.simulator (iteration-level, seeded; percentiles from the requests)
Layout: the degrees given, else the candidate layout that serves the workload best (answers.serve_layout,
objectives.WORKLOAD). Engine profile: catalog/engines/<engine>.toml (default vllm), its token budget and
batch cap overridable. Comma lists of concurrency or rate sweep. SLOs: goodput by plan_serving.meets (the rule plan
uses); when no point meets them, a note names the closest and by how much it misses (an answer, as plan gives).
    protocol           the benchmark tool whose run the figures reproduce (catalog/protocols; default "steady": the
                       steady state users plan with): any other runs serving.protocol_run — the simulator from the
                       first wave of U clients at t = 0 for the tool's prompt count, lengths drawn as the tool draws
                       them, each metric reduced as the tool reduces it (aggregated mode; either method)
    mode "disagg"      a prefill pool and a decode pool (answers/disagg_plans.py: serve_disagg, and plan_disagg's
                       search over pool splits)
The keywords become request objects at once (answers/requests.py: ServeRequest = deployment, workload, engine,
run); ``serve_request`` answers a request, as ``tokenomy serve`` builds it.
"""

from __future__ import annotations

from dataclasses import fields, replace

import numpy as np

from tokenomy.answers import error_bars
from tokenomy.answers.disagg_plans import (DISAGG_COLUMNS, disagg_plan, plan_disagg, pool_sizes,  # noqa: F401
                                           serve_disagg)
from tokenomy.answers.door import door
from tokenomy.answers.energy_cols import power_of, serving_energy
from tokenomy.answers.engines import benchmark_protocol, engine_profile  # noqa: F401  (engine_profile: re-exported)
from tokenomy.answers.requests import (SERVE_KEYWORDS, DeploymentRequest, EngineRequest, RunRequest,
                                       ServeRequest, WorkloadRequest)
from tokenomy.answers.session_request import SESSION_KEYS, SessionRequest
from tokenomy.answers.resolve import deployment, hardware_of, model_of, weight_dtype_of
from tokenomy.answers.result import Later, Result, Rows
from tokenomy.answers.serve_layout import layout_pick
from tokenomy.answers.serve_rows import (dtypes_label, row, serving_kv_dtype, simulations, slo_verdict,  # noqa: F401
                                         within_context)
from tokenomy.answers.variants import annotated
from tokenomy.core.layout import Layout
from tokenomy.serving.steady import bound_name, steady
from tokenomy.units import fmt_seconds

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


def _busy_prefill_notes(s, w: WorkloadRequest) -> tuple[str, ...]:
    """Where the engine spends over BUSY_PREFILL of its time on prefill, the prompts' queue for the token budget is
    beyond what the analytic TTFT is checked for: the simulator measured up to 40% more (open loop); a closed loop's
    own feedback bounds the queue (-11..+11% with output lengths that vary; with fixed lengths the simulator's
    clients phase-lock and rarely collide: up to 45% less). Not where there is no one to queue behind (one running
    request) or the prompts all arrive together (that queue is modelled step by step)."""
    U, lam = w.U, w.lam
    if U is not None and w.arrivals == "together":
        return ()
    load, unit = (lam, " requests/s") if U is None else (U, " users")
    told = "up to 40% more" if U is None else "-11% to +11% with varied output lengths, up to 45% less with fixed ones"
    return tuple(f"{load[i]:g}{unit}: the engine spends {s.prefill_share[i]:.0%} of its time on prefill; above "
                 f"{BUSY_PREFILL:.0%} prompts queue for the token budget beyond what the analytic TTFT is checked for "
                 f"(the simulator measured {told}): try --method simulate"
                 for i in range(len(load)) if s.prefill_share[i] > BUSY_PREFILL and not s.capacity_limited[i]
                 and s.batch[i] > 1.0)


@door(SERVE_KEYWORDS)
def serve(model, hardware, *, concurrency=None, rate=None, isl=1024, osl=1024, **kw) -> Result:
    """The serving answer (module docstring): one row per workload point. The layout keywords are decode's
    (answers.resolve.layout_of). ``pools`` (disagg): prefill_chips, decode_chips and the pools' layout keywords
    (prefill_tp, ..., prefill_kv_batch, decode_tp, ...). ``emit`` (vllm | sglang | trtllm | dynamo): the launch
    commands of the deployment served in ``extra["launch"]`` (answers/launch.py, docs/deploy.md); ``engine`` left out
    is the engine ``emit`` names (vllm without one, or for dynamo). The keywords
    become the request objects at once (answers/requests.py); ``serve_request`` answers them.
    ``workload`` multiturn | agentic (or a serving.sessions MultiTurn/Agentic object): session traffic with KV
    tiers (answers/session_serve.py): concurrency = concurrent sessions, rate = sessions/s; ``turns``,
    ``think_s`` (a list sweeps), ``kv_tiering`` (a catalog/kv_tiering policy; default HBM only), ``dram_bytes``
    (a list sweeps) and ``nvme_bytes`` per node, ``routing`` (compare round-robin, session-sticky, prefix-aware, kv-router)."""
    given = {**SERVE_KEYWORDS, "concurrency": concurrency, "rate": rate, "isl": isl, "osl": osl, **kw}  # as parsed
    sessions = {k: given.pop(k) for k in SESSION_KEYS}
    if sessions["workload"] != "steady" or any(v is not None for k, v in sessions.items() if k != "workload"):
        return annotated(_sessions(model, hardware, {**given, **sessions}), hardware)
    return serve_request(ServeRequest.of(model, hardware, given))


def serve_request(req: ServeRequest) -> Result:
    """The serving answer of a request (``tokenomy serve`` and ``tk.serve`` build it): aggregated or disaggregated,
    with the launch commands of what it served where ``req.emit`` asks, and the hardware's set numbers named."""
    if req.deployment.mode == "disagg":
        res = serve_disagg(req)
    else:  # each candidate's steady state run from here, given or searched: the CLI reaches the engine in 6 calls
        m, hw, dep = _agg_served(req)  # (tests/cli/test_serve_hops.py)
        finite = req.run.method == "analytic" and req.run.protocol == "steady"  # else the run's own rows count them
        pick = layout_pick(dep, req.deployment.chips, req.deployment.layout, req.workload, req.serving_engine,
                           req.run.requests if finite else None)
        for on_layout, prof in pick.pending():  # objectives.WORKLOAD's candidates, stage by stage
            pick.staged.results.append(steady(on_layout, prof, **pick.load))
        res = _serve_agg(req, m, hw, *pick.chosen())
    if req.emit is not None:
        res = _with_launch(res, req)
    return annotated(res, req.deployment.hardware)


def _with_launch(res: Result, req: ServeRequest) -> Result:
    """``res`` with the launch blocks of the deployment it served (answers/launch.py)."""
    from tokenomy.answers.launch import LaunchRequest, with_launch

    d, e = req.deployment, req.serving_engine
    kv = serving_kv_dtype(d.model, e.name, d.weight_dtype, d.kv_dtype)
    return with_launch(res, LaunchRequest(req.emit, e.name, model_of(d.model), weight_dtype_of(d.weight_dtype), kv,
                                          e.max_num_tokens, e.max_batch, (),
                                          (e.batch_wait_iters or 0, e.batch_wait_tokens_ratio or 0.0)))


def _served(req: ServeRequest, layout: Layout):
    """(model, hardware, the request's Deployment on ``layout``) with the engine's KV dtype for the weights."""
    d, e = req.deployment, req.serving_engine
    m, hw = model_of(d.model), hardware_of(d.hardware)
    kv = serving_kv_dtype(m, e.name, d.weight_dtype, d.kv_dtype)
    dep = deployment(m, hw, layout=layout, weight_dtype=d.weight_dtype, kv_dtype=kv, efficiency=d.efficiency,
                     usd_per_chip_hour=d.usd_per_chip_hour, serving_engine=e.name)
    return m, hw, dep


def _agg_served(req: ServeRequest):
    """(model, hardware, the Deployment before its layout is chosen) of aggregated serving, the workload's longest
    sequence checked against the model's context."""
    m, hw, dep = _served(req, req.deployment.layout or Layout())
    within_context(m, *req.workload.longest())
    return m, hw, dep


def _serve_agg(req: ServeRequest, m, hw, dep, prof, rule, s) -> Result:
    """Aggregated serving's answer from its deployment (_agg_served, serve_layout.LayoutPick.chosen) and steady state ``s``: a simulation or a
    benchmark protocol's run per point where ``req.run`` asks."""
    d, w, run = req.deployment, req.workload, req.run
    proto = benchmark_protocol(run.protocol)
    power = power_of(hw, d.usd_per_kwh, d.facility)
    isl_m, osl_m, lay = w.isl_mean, w.osl_mean, dep.layout
    if not np.any(s.fits):
        raise ValueError(f"model: {m.name} does not fit on {dep.chips} x {hw.chip.name} ({lay.label()}) with a KV "
                         f"cache for one {isl_m + osl_m:g}-token sequence under {prof.name}'s memory share")
    sims = _agg_runs(dep, prof, proto, w, run)
    energy = Later(lambda: [serving_energy(power, s, dep.chips, isl_m)])  # its arrays formed with the first row read
    regime, ctx = error_bars.regime_of(dep, prof.name, error_bars.SERVE), isl_m + osl_m / 2
    # each row (its band, goodput and energy too) built when read: a grid of 10^6 points returns with its arrays (Rows)
    rows = Rows(len(w.load), lambda i: error_bars.attach([row(dep, prof, s, i, w, sims[i], energy[0])], regime,
                                                         "running_batch", ctx)[0])
    how = run.method if proto.steady else f"protocol {proto.name}"
    isl_l, osl_l = w.lengths_label()
    title = (f"serve (agg, {how}): {m.name} on {dep.chips} x {hw.chip.name} ({hw.name}); layout {lay.label()} "
             f"({rule}); {prof.label()}; ISL {isl_l} / OSL {osl_l}, cache hit {w.cache_hit:g}; {dtypes_label(dep)}; "
             f"{dep.eff.name} efficiency")
    slo_notes, slo_extra = slo_verdict(rows, *w.slos)

    def notes() -> tuple[str, ...]:  # read with the rows (the CLI and the web print both), not before
        out = tuple(f"{r['concurrency'] or r['rate']}: capacity-limited (demand exceeds B_kv = {r['b_kv']:g}, max "
                    f"batch {prof.max_batch} or the {prof.max_num_tokens}-token budget)"
                    for r in rows if r["capacity_limited"])
        if run.method == "analytic" and proto.steady:
            out += _busy_prefill_notes(s, w)
        if not proto.steady:
            out += (f"protocol {proto.label()}; read from {proto.cite}",)
        return slo_notes + out

    return Result("serve", title, rows, COLUMNS, {"plan": lay.as_dict(), "layout_rule": rule,
                  "engine": prof.name, "dtypes": dtypes_label(dep), **slo_extra}, notes,
                  lambda: _explain(dep, prof, s, w.load, isl_m, osl_m), rows_key="")


def _sessions(model, hardware, kw: dict) -> Result:
    """serve's session workloads (answers/session_serve.py): what does not apply to them is refused by name."""
    from tokenomy.answers.session_serve import session_workload, sessions_answer

    if kw["workload"] == "steady":
        given = next(k for k in SESSION_KEYS if k != "workload" and kw[k] is not None)
        raise ValueError(f"{given}: for a session workload (workload multiturn | agentic)")
    for name, default in (("mode", "agg"), ("protocol", "steady"), ("cache_hit", 0.0), ("isl", 1024), ("osl", 1024),
                          ("isl_dist", None),
                          ("osl_dist", None), ("emit", None), ("ttft_slo", None), ("tpot_slo", None),
                          ("usd_per_kwh", None), ("facility", None)):
        if kw[name] != default:
            raise ValueError(f"{name}: not with workload {kw['workload']!r} (sessions set their own lengths, hits "
                             "and timing)")
    w = session_workload(kw["workload"], kw["turns"], kw["think_s"])
    d = DeploymentRequest.of(model, hardware, kw)
    e = EngineRequest.of({**kw, "engine": kw["engine"] or "vllm"})
    d = replace(d, kv_dtype=serving_kv_dtype(model, e.name, d.weight_dtype, d.kv_dtype))
    q = SessionRequest(w, **{f.name: kw[f.name] for f in fields(SessionRequest) if f.name != "workload"})
    return sessions_answer(d, e, RunRequest.of(kw), q)


def _agg_runs(dep, prof, proto, w: WorkloadRequest, run: RunRequest) -> list:
    """One run per load point where asked: the benchmark protocol's (serving.protocol_run), or the simulator's
    over the dp replicas (serving.replicas); else None each (the steady state alone)."""
    if not proto.steady:
        from tokenomy.serving.protocol_run import run_protocol

        li, lo = (x if x.kind != "fixed" else int(x.a) for x in (w.isl, w.osl))
        return [run_protocol(dep, prof, proto, li, lo, concurrency=float(x) if w.closed else None,
                             rate=None if w.closed else float(x), seed=run.seed, prompts=run.requests)
                for x in w.load]
    if run.method == "simulate":
        from tokenomy.serving.replicas import simulate_replicas

        return simulations(lambda wl, n: simulate_replicas(dep, prof, wl, n), w, run)
    return [None] * len(w.load)


def _explain_hold(dep, prof, s, load) -> tuple[str, ...]:
    """TensorRT-LLM's delayed batching in --explain: T, ρ_w·N_tok and the held steps W at each point (the steps a
    request waits beyond the next receive, serving.batch_wait.held_steps), where the profile sets it."""
    from tokenomy.serving.scheduler import batch_wait_of, poll_steps

    if prof.batch_wait_iters <= 0 and prof.batch_wait_tokens_ratio <= 0:
        return ()
    T, tokens = batch_wait_of(prof, dep.layout)
    if T <= 0:
        return (f"delayed batching (batch_wait_iters {prof.batch_wait_iters}, batch_wait_tokens_ratio "
                f"{prof.batch_wait_tokens_ratio:g}): off here (attention-DP: PyExecutor._schedule waits only without it)",)
    held = ", ".join(f"{x:g}: {float(np.ravel(s.wait_steps)[i]) - poll_steps(prof):.3g}" for i, x in enumerate(load))
    return (f"delayed batching: new prompts are held while others decode until T = {T:g} iterations pass or they "
            f"fill ρ_w·N_tok = {prof.batch_wait_tokens_ratio:g} x {prof.max_num_tokens} = {tokens:g} tokens; held "
            f"steps W (serving.batch_wait.held_steps, added to TTFT at the plain step's time) by point: {held}",)


def _explain(dep, prof, s, load, isl, osl) -> tuple[str, ...]:
    lines = [f"engine profile: {prof.label()}",
             f"all-reduce ({prof.name}): {prof.all_reduce}; timed as the fastest of the one-shot, two-shot and ring "
             f"costs inside the scale-up domain (core.collectives.all_reduce_cost)",
             f"B_kv = KV capacity / (ISL + OSL = {isl + osl:g} tokens, rounded to blocks of {prof.block_size}) = "
             f"{float(np.ravel(s.b_kv)[0]):g} sequences"]
    lines += _explain_hold(dep, prof, s, load)
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
