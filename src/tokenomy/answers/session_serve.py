"""serve for multi-turn and agentic workloads: hit rate, TTFT and $/Mtok of session traffic with KV tiers.

Reached through ``serve(..., workload="multiturn" | "agentic" | a serving.sessions object)``. Per workload point
(concurrent sessions or sessions/s, x think time, x DRAM bytes per node):
    method "analytic"  serving.session_steady: the Che approximation of LRU per tier inside the steady state
    method "simulate"  serving.sim_sessions: the iteration-level simulator with the tiers' LRUs (percentiles)
Replicas: the deployment's dp replicas each serve their share of the sessions, routed session-sticky (a session
stays on its replica); ``routing`` compares round-robin, session-sticky, prefix-aware (llm-d's scorers) and
kv-router (Dynamo's cost) routing on the cache (serving/routing.py: hit rate and load imbalance each gives; one
replica has nothing to choose, and says so).
$ per million tokens, split (the chips' time split by the steady state's step shares, the storage by the bytes held):
    input-miss  the prefill's share of the chip-seconds over the tokens computed
    input-hit   the tiers' holding $ (HBM priced at the accelerator's rental, DRAM and NVMe at their devices') over
                the tokens served from cache
    output      the decode's share over the tokens generated
The hit rate at which "a hit is 10x cheaper than a miss" holds: hit $ = hold $/s / (hit tokens/s), so
h_10x = hold $/s / (input tokens/s x miss $ / 10). Which tier should hold a 5-minute and a 1-hour cache of one
session's context at this load: econ.kv_tiers.cheapest (hold + retrieve vs recomputing at the miss price).
"""

from __future__ import annotations

import numpy as np

from tokenomy.answers import inputs
from tokenomy.answers.session_request import SessionRequest
from tokenomy.answers.result import Result
from tokenomy.econ.session_tiers import hold_usd_per_s, replica_tiers
from tokenomy.serving.replicas import one_replica, replica_count
from tokenomy.serving.scheduler import kv_tokens, step_time
from tokenomy.serving.session_steady import session_steady
from tokenomy.serving.routing import ROUTERS as ROUTINGS  # any one asks for the comparison of all
from tokenomy.serving.sessions import WORKLOADS, workload_of

COLUMNS = ("concurrency", "rate", "think_s", "dram_bytes", "hit_rate", "ttft_s", "tpot_s", "requests_per_s",
           "tokens_per_s_per_chip", "usd_per_mtok_input_miss", "usd_per_mtok_input_hit", "usd_per_mtok_output",
           "hit_rate_for_10x", "load_wait_s")
HOLDS_S = (300.0, 3600.0)  # the lecture's 5-minute and 1-hour caches


def session_workload(workload, turns=None, think_s=None):
    """The workload request object: one given, or the named kind with ``turns`` (and one ``think_s``) set."""
    if isinstance(workload, WORKLOADS["multiturn"] | WORKLOADS["agentic"]):
        return workload
    one = None if think_s is None or np.ndim(think_s) else think_s
    return workload_of(str(workload), turns=turns, think_s=one)


def serve_sessions(dep, prof, q: SessionRequest, run) -> Result:
    """The rows (module docstring); ``dep`` on its chosen layout, ``prof`` its engine profile, ``run`` the method
    (answers.requests.RunRequest)."""
    w, concurrency, think_s, dram_bytes = q.workload, q.concurrency, q.think_s, q.dram_bytes
    rate, routing = q.rate, q.routing
    reps, dep1 = replica_count(dep), one_replica(dep)
    load = np.atleast_1d(np.asarray(concurrency if concurrency is not None else rate, float))
    thinks = np.atleast_1d(np.asarray(w.think_s if think_s is None else inputs.numbers("think_s", think_s), float))
    drams = [None] if dram_bytes is None else list(np.atleast_1d(dram_bytes))
    cap = kv_tokens(dep1, prof, 8192.0)
    bpt, slots = float(np.ravel(cap.bytes_per_token)[0]), float(np.ravel(cap.slots)[0])
    ctx = float(w.system_prompt_tokens + w.turns * (w.new_input_tokens + w.output_tokens) / 2.0)
    budget = float(prof.max_num_tokens)
    s_pre = float(np.ravel(step_time(dep1, 0.0, ctx, budget, ctx))[0]) / budget
    gpu_usd_s = dep.price / 3600.0
    rows, stacks = [], {}
    for d in drams:
        rt = replica_tiers(dep.hardware, q.kv_tiering, d, q.nvme_bytes, bpt, slots, dep1.chips, s_pre, gpu_usd_s)
        stacks[d] = rt
        lower = np.array([lv.capacity_tokens for lv in rt.stack.levels[1:]], float)
        L, T = np.meshgrid(load, thinks, indexing="ij")
        per = L / reps
        a = session_steady(dep1, prof, w, rt.stack, lower, concurrency=per if concurrency is not None else None,
                           rate=per if concurrency is None else None, think_s=T)
        sims = _simulate(dep1, prof, q, rt, (per, T), a, run) if run.method == "simulate" else None
        for i in np.ndindex(L.shape):
            rows.append(_row(dep, q, rt, a, (i, L[i], T[i], d), reps, None if sims is None else sims[i]))
    extra = {"workload": w.kind, "kv_tiering": stacks[drams[0]].policy,
             "tiers": [lv.tier for lv in stacks[drams[0]].stack.levels],
             "tier_for_hold": _tier_for_hold(dep, stacks[drams[0]], rows[0], w)}
    notes = tuple(f"{r['concurrency'] or r['rate']:g}: no steady state (the sessions saturate the replica or a tier's "
                  "read channel: the queue grows without bound)" for r in rows if r["ttft_s"] is None)
    notes += (f"where a cache should live at this load: 5-minute hold {extra['tier_for_hold']['300']}, 1-hour hold "
             f"{extra['tier_for_hold']['3600']} (econ.kv_tiers: hold + retrieve vs recompute at the miss price)",)
    extra["published_prices"], price_notes = _published_beside(dep, rows[0])
    notes += price_notes
    if routing is not None and reps < 2:
        extra["routing"] = []
        notes += ("routing: one replica (dp 1): every router sends every request to it, nothing to choose; give "
                  "--dp N (N >= 2) to compare them",)
    elif routing is not None:
        from tokenomy.serving.routing import compare_routing

        pool = float(np.ravel(cap.tokens)[0])
        extra["routing"] = compare_routing(w, stacks[drams[0]].stack, (reps, pool), rows[0], run.seed)
        notes += tuple(f"routing {r['routing']}: hit rate {r['hit_rate']:.3f}, load imbalance (max/mean prefill "
                       f"tokens per replica) {r['load_imbalance']:.2f}" for r in extra["routing"])
    return rows, extra, notes


def _simulate(dep1, prof, q: SessionRequest, rt, grid, a, run) -> dict:
    """The session simulator on ONE replica at its share ``L`` of the load (sessions or sessions/s per replica,
    as the analytic rows) and think time ``T`` (``grid`` = (L, T)), per point."""
    from dataclasses import replace

    from tokenomy.serving.sessions import generate, session_start_times
    from tokenomy.serving.sim_sessions import simulate_sessions

    (L, T), w, closed, requests, seed = grid, q.workload, q.closed, run.requests, run.seed
    out, blk = {}, int(prof.block_size)
    blocks = int(float(np.ravel(kv_tokens(dep1, prof, 8192.0).tokens)[0]) // blk)
    for i in np.ndindex(L.shape):
        wi = replace(w, think_s=float(T[i]))
        n = int(requests or max(4 * L[i], 64)) if closed else int(requests or 200)
        per = max(int(round(L[i])), 1)
        start = None if closed else session_start_times(L[i], n, seed)
        plan = generate(wi, n, seed, start)
        cycle = wi.turns * (wi.think_s + float(np.ravel(a.e2e_s)[np.ravel_multi_index(i, L.shape)]))
        sim = simulate_sessions(dep1, prof, plan, rt.stack, blocks, concurrency=per if closed else None,
                                stagger_s=cycle)
        out[i] = (sim, ttft_by_turn(plan, sim))
    return out


def ttft_by_turn(plan, sim) -> list[float]:
    """Mean TTFT of the main agents' k-th turns (k = 0, 1, ...) over the simulation's counted requests."""
    main = (plan.parent[plan.agent] < 0) & sim.sim.counted
    turn, ttft = plan.turn[main], sim.sim.ttft_s[main]
    return [float(np.mean(ttft[turn == k])) for k in range(int(np.max(turn, initial=-1)) + 1) if np.any(turn == k)]


def _row(dep, q: SessionRequest, rt, a, point, reps, sim) -> dict:
    """One point's row: ``point`` = (its index in the analytic grid ``a``, sessions or sessions/s, think time, DRAM
    bytes per node); ``sim`` the simulation's (result, TTFT by turn) or None."""
    (i, load, think, dram), w, closed = point, q.workload, q.closed
    g = lambda x: float(np.asarray(x)[i]) if np.ndim(x) else float(x)  # noqa: E731
    s = a.steady
    flat = int(np.ravel_multi_index(i, np.shape(a.ttft_s))) if np.ndim(a.ttft_s) else 0
    pick = lambda x: float(np.ravel(x)[flat])  # noqa: E731
    hit = g(a.hits.hit_rate)
    X = g(a.requests_per_s) * reps
    held = np.array([g(a.hbm_tokens)] + [lv.capacity_tokens for lv in rt.stack.levels[1:]])
    hold_s = float(hold_usd_per_s(rt, held)) * reps
    usd = _dollars(pick(s.usd_per_mtok_input), pick(s.usd_per_mtok_output), X * a.isl, hit, hold_s)
    row = {"workload": w.kind, "concurrency": float(load) if closed else None, "rate": None if closed else float(load),
           "think_s": float(think), "dram_bytes": None if dram is None else float(dram), "hit_rate": hit,
           **{f"hit_{lv.tier}": float(np.asarray(a.hits.by_tier)[i + (j,)]) for j, lv in enumerate(rt.stack.levels)},
           "ttft_s": g(a.ttft_s), "tpot_s": pick(s.tpot_s), "e2e_s": g(a.e2e_s), "requests_per_s": X,
           "tokens_per_s_per_chip": X * a.osl / dep.chips, **usd, "load_wait_s": g(a.load_s),
           "mean_isl": a.isl, "mean_osl": a.osl, "hbm_cache_tokens": g(a.hbm_tokens), "chips": dep.chips,
           "t_char_s": [float(x) for x in np.asarray(a.hits.t_char_s)[i]], "method": "analytic"}
    for k, v in list(row.items()):
        if isinstance(v, float) and not np.isfinite(v):
            row[k] = None  # no steady state at this point (the replica or a tier's channel saturated)
    if row["ttft_s"] is None:
        row.update(usd_per_mtok_input_hit=None, hit_rate_for_10x=None)
    if sim is not None:
        sim, by_turn = sim
        row["ttft_by_turn"] = by_turn
        c = sim.sim.counted
        row.update({"method": "simulate", "hit_rate": sim.hit_rate, "ttft_s": float(np.mean(sim.sim.ttft_s[c])),
                    "ttft_p50_s": float(np.percentile(sim.sim.ttft_s[c], 50)),
                    "ttft_p99_s": float(np.percentile(sim.sim.ttft_s[c], 99)),
                    "tpot_s": float(np.nanmean(sim.sim.tpot_s[c])), "load_wait_s": float(np.mean(sim.load_wait_s[c])),
                    "analytic_hit_rate": hit, "analytic_ttft_s": g(a.ttft_s),
                    **{f"hit_{k}": v for k, v in sim.hit_by_tier.items()}, "sim_requests": int(np.sum(c))})
        arr = sim.sim.arrival_s[c]
        span = float(np.max(arr) - np.min(arr)) if np.sum(c) > 1 else 0.0
        if span > 0 and X > 0 and row["ttft_s"] is not None:
            # at the simulated throughput (the counted window's arrival rate, all replicas): the analytic state's $
            # per computed input token and per output token x X_analytic / X_simulated (the chips' $ per token at
            # the analytic state's step shares, over fewer or more tokens a second; approximate where the
            # simulated hit rate, hence the prefill's share, is far from the analytic's)
            Xs = float(np.sum(c)) / span * reps
            k = X / Xs
            miss = pick(s.usd_per_mtok_input) / max(1.0 - hit, 1e-9)
            row.update({"requests_per_s": Xs, "tokens_per_s_per_chip": Xs * a.osl / dep.chips,
                        "analytic_requests_per_s": X,
                        **_dollars(k * miss * (1.0 - sim.hit_rate), k * pick(s.usd_per_mtok_output), Xs * a.isl,
                                   sim.hit_rate, hold_s)})
    return row


def _published_beside(dep, row: dict) -> tuple[list[dict], tuple[str, ...]]:
    """Providers' published $/Mtok (catalog/prices: base input = a miss, cache read = a hit, output), the sheet of the
    model served first, and the notes that set the workload's split beside them."""
    from tokenomy.answers.prefix_cache import published_price_rows

    rows = published_price_rows(dep.model.name)
    f = lambda v: "-" if v is None else f"{v:.3g}"  # noqa: E731
    split = lambda r: " / ".join(f(r[k]) for k in ("usd_per_mtok_input_miss", "usd_per_mtok_input_hit",  # noqa: E731
                                                    "usd_per_mtok_output"))
    notes = (f"$/Mtok input miss / input hit / output: this workload {split(row)} (first row); providers' published "
             "API prices (catalog/prices: base input, cached input, output):",)
    notes += tuple(f"  {r['provider']} {r['model']}: {split(r)} ({r['source']}, as of {r['as_of']})" for r in rows)
    return rows, notes


def _dollars(usd_in, usd_out, in_tok_s, hit, hold_s) -> dict:
    """The $/Mtok split (module docstring) from steady's $ per input and output token, the input tokens/s, the hit
    rate and the tiers' holding $/s; the hit rate at which a hit costs a tenth of a miss."""
    miss = usd_in / max(1.0 - hit, 1e-9)
    hit_usd = hold_s / (in_tok_s * hit) * 1e6 if hit > 0 and in_tok_s > 0 else None
    h10 = hold_s / (in_tok_s * miss / 10.0 / 1e6) if miss > 0 and in_tok_s > 0 else None
    return {"usd_per_mtok_input_miss": miss, "usd_per_mtok_input_hit": hit_usd, "usd_per_mtok_output": usd_out,
            "hit_rate_for_10x": None if h10 is None or h10 > 1 else h10}


def _tier_for_hold(dep, rt, row, w) -> dict:
    """The cheapest place for one session's context held 5 minutes and 1 hour, at the miss price (econ.kv_tiers)."""
    from tokenomy.econ.kv_tiers import Tier, cheapest

    tokens = row["mean_isl"]
    prefix_bytes = tokens * rt.bytes_per_token_chip * rt.chips
    tiers = []
    for lv in rt.stack.levels:
        usd_h = rt.usd_per_byte_s.get(lv.tier, 0.0) * 3600.0
        bw = 1e30 if lv.read_s_per_token == 0 else rt.bytes_per_token_chip * rt.chips / lv.read_s_per_token
        cap = lv.capacity_tokens * rt.bytes_per_token_chip * rt.chips if lv.tier != "hbm" else \
            dep.hardware.chip.exposed_hbm_bytes * rt.chips
        tiers.append(Tier(lv.tier, lv.tier, cap, bw, usd_h * cap, lv.latency_s))
    remat = row["usd_per_mtok_input_miss"] * tokens / 1e6
    names, _ = cheapest(prefix_bytes, list(HOLDS_S), tiers, remat)
    return {str(int(h)): n for h, n in zip(HOLDS_S, names)}


def sessions_answer(d, e, run, q: SessionRequest) -> Result:
    """serve's answer for a session workload (``d``, ``e``, ``run``: answers/requests.py's deployment, engine and run
    requests): the layout by serve's rule at the workload's mean turn, then the rows. ``q.trace``: a session trace
    file (serving/session_trace.py) replayed by the simulator at its own timestamps."""
    from tokenomy.answers.resolve import deployment, hardware_of, model_of, within_window
    from tokenomy.answers.requests import WorkloadRequest
    from tokenomy.answers.serve_layout import serve_layout
    from tokenomy.core.layout import Layout
    from tokenomy.serving.turn_types import turn_types

    w, concurrency, rate, routing, trace = q.workload, q.concurrency, q.rate, q.routing, q.trace
    if trace is not None:
        if concurrency is not None or rate is not None:
            raise ValueError("concurrency: not with trace (the trace's timestamps are the load)")
        concurrency = 1.0  # the layout's ranking point; the replay sets the load
    elif (concurrency is None) == (rate is None):
        raise ValueError("concurrency, rate: give one (concurrent sessions, or sessions per second)")
    if routing is not None and routing not in ROUTINGS:
        raise ValueError(f"routing: {routing!r}; allowed: {', '.join(ROUTINGS)}")
    m, hw = model_of(d.model), hardware_of(d.hardware)
    tt = turn_types(w)
    isl_m, osl_m = tt.mean(tt.isl), tt.mean(tt.osl)
    within_window(m, float(np.max(tt.isl + tt.osl)), "turns", "the workload's longest turn (input + output) = ")
    dep = deployment(m, hw, layout=d.layout or Layout(), weight_dtype=d.weight_dtype, kv_dtype=d.kv_dtype,
                     efficiency=d.efficiency, usd_per_chip_hour=d.usd_per_chip_hour, serving_engine=e.name)
    load = np.atleast_1d(np.asarray(concurrency if concurrency is not None else rate, float))
    reuse = float(np.sum(tt.n * tt.reuse) + tt.system_tokens * np.sum(tt.n)) / float(np.sum(tt.n * tt.isl))
    busy = dict(concurrency=load) if concurrency is not None else dict(rate=load * tt.requests_per_session)
    # the layout ranked at the mean turn: the sessions' requests with their ideal reuse as the hit fraction
    ranked = WorkloadRequest.of(dict(**busy, isl=max(int(round(isl_m)), 1), osl=max(int(round(osl_m)), 1),
                                     cache_hit=min(reuse, 0.99), sessions=w))
    lay, rule = serve_layout(dep, d.chips, d.layout, ranked, e)
    dep = dep.with_(layout=lay)
    prof = e.profile(int(lay.tp))
    if trace is not None:
        return _replay(dep, prof, q, rule)
    rows, extra, notes = serve_sessions(dep, prof, q, run)
    title = (f"serve ({w.kind} sessions, {run.method}): {m.name} on {dep.chips} x {hw.chip.name} ({hw.name}); layout "
             f"{lay.label()} ({rule}); {prof.label()}; KV tiers {', '.join(extra['tiers'])} "
             f"({extra['kv_tiering']}); mean turn ISL {isl_m:,.0f} / OSL {osl_m:,.0f}")
    explain = (f"workload: {w}", "hit rates: serving/kv_che.py (Che's characteristic time per tier) inside "
               "serving/session_steady.py; simulate: serving/sim_sessions.py",
               "$ split: input-miss = prefill share of chip time / computed tokens; input-hit = tiers' holding $ / "
               "cached tokens served; output = decode share / output tokens (answers/session_serve.py)")
    return Result("serve", title, tuple(rows), COLUMNS, {"plan": lay.as_dict(), "layout_rule": rule,
                  "engine": prof.name, **extra}, notes, explain, rows_key="")


def _replay(dep, prof, q: SessionRequest, rule) -> Result:
    """A session trace replayed by the simulator on one replica at its own timestamps (every session on it)."""
    from tokenomy.serving.session_trace import read_session_trace
    from tokenomy.serving.sim_sessions import simulate_sessions

    m, hw, trace = dep.model, dep.hardware, q.trace
    plan = read_session_trace(trace)
    dep1 = one_replica(dep)
    cap = kv_tokens(dep1, prof, float(np.mean(plan.isl + plan.osl)))
    bpt, slots = float(np.ravel(cap.bytes_per_token)[0]), float(np.ravel(cap.slots)[0])
    ctx = float(np.mean(plan.isl))
    s_pre = float(np.ravel(step_time(dep1, 0.0, ctx, float(prof.max_num_tokens), ctx))[0]) / prof.max_num_tokens
    rt = replica_tiers(dep.hardware, q.kv_tiering, q.dram_bytes, q.nvme_bytes, bpt, slots, dep1.chips, s_pre,
                       dep.price / 3600.0)
    sim = simulate_sessions(dep1, prof, plan, rt.stack, int(float(np.ravel(cap.tokens)[0]) // prof.block_size))
    row = {"workload": "trace", **sim.summary(dep1.chips), **{f"hit_{k}": v for k, v in sim.hit_by_tier.items()},
           "mean_isl": float(np.mean(plan.isl)), "mean_osl": float(np.mean(plan.osl)), "method": "simulate"}
    title = (f"serve (session trace {trace}, simulate): {m.name} on {dep1.chips} x {hw.chip.name} (one replica of "
             f"{hw.name}); layout {dep1.layout.label()} ({rule}); {prof.label()}; KV tiers "
             f"{', '.join(rt.stack.names())} ({rt.policy}); {len(plan):,} requests, {len(plan.parent):,} agents")
    cols = ("ttft_s", "ttft_p50_s", "ttft_p99_s", "tpot_s", "hit_rate", "load_wait_s", "requests_per_s")
    return Result("serve", title, (row,), cols, {"plan": dep1.layout.as_dict(), "layout_rule": rule,
                  "engine": prof.name, "kv_tiering": rt.policy}, (), (), rows_key="")
