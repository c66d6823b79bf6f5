"""Published measurements of tiered KV caching and prefix-aware routing (catalog/validation/kv_tiering) predicted by
the session simulator (serving/sim_sessions: the model ``serve --workload`` runs under load) and scored.

Per case: the deployment as the source ran it (model, chips, tp, dtypes, the engine's profile at its version, the
chip's fitted efficiency set), its KV tiers (the policy's tiers from catalog/kv_tiering that the case gives a size:
HBM the engine's pool or the size the source capped it at; DRAM and NVMe the sizes the source configured, read over
the system's host path, catalog/systems [host]), and its traffic (validation/kv_tier_plans). The prediction is the
published metric over the requests the source averaged: TTFT mean or p50, the token hit rate (cached prompt tokens /
prompt tokens), input or output tokens/s of the deployment over the run. Error = predicted / measured - 1. Nothing
is fitted to these cases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from tokenomy.catalog import loader
from tokenomy.core.deployment import Deployment
from tokenomy.core.layout import Layout
from tokenomy.econ.session_tiers import replica_tiers
from tokenomy.serving.kv_cache_tiers import TierStack
from tokenomy.serving.scheduler import kv_tokens, profile_of
from tokenomy.serving.sim_sessions import simulate_sessions
from tokenomy.validation.kv_tier_plans import replays
from tokenomy.validation.load import efficiency_set


@dataclass(frozen=True)
class Scored:
    source: str
    case: object
    predicted: float
    hit_rate: float  # the simulated token hit rate (every metric's row shows it)

    @property
    def error(self) -> float:
        return self.predicted / self.case.value - 1.0


def deployment(case, source) -> tuple[Deployment, object]:
    hw = loader.hardware(case.hardware)
    prof = profile_of(loader.engine_file(source.engine), case.tp, version=source.engine_version)
    model = loader.model(case.model)
    weights = case.weight_dtype or model.quantization.dense
    dep = Deployment(model, hw, Layout(tp=case.tp), weights, case.kv_dtype, prof.on(efficiency_set(hw.chip.name)))
    return dep, prof


def stack(case, dep: Deployment, prof, hbm_tokens: float) -> TierStack:
    """HBM (the pool the case runs on), then the policy's lower tiers at the sizes the source configured (per replica
    in the case, per node for econ.session_tiers: x chips per node / chips), read over the system's host path."""
    from dataclasses import replace

    cap = kv_tokens(dep, prof, 1.0)
    per_chip, slots = float(np.ravel(cap.bytes_per_token)[0]), float(np.ravel(cap.slots)[0])
    policy = None if case.policy in ("hbm", "recompute") else case.policy
    host = dep.hardware.host
    per_node = host.chips_per_node / dep.chips if host is not None else 1.0
    dram = nvme = None
    if policy is not None:  # the sizes the source configured; unstated, a single request's tier test takes the
        # answer's default DRAM share (it only has to hold one prompt) and other cases no such tier
        dram = case.dram_bytes * per_node if case.dram_bytes else (None if case.workload.kind == "single" else 0.0)
        nvme = case.nvme_bytes * per_node if case.nvme_bytes else 0.0
    rt = replica_tiers(dep.hardware, policy, dram, nvme, per_chip, slots, dep.chips, 0.0, 0.0)
    levels = (replace(rt.stack.levels[0], capacity_tokens=hbm_tokens),) + rt.stack.levels[1:]
    return replace(rt.stack, levels=levels)


# kv-cache-tester's ramp (trace_replay_tester.calculate_users_to_add): from --start-users (default 1) it adds users
# each 30 s assessment period while the rolling TTFT average leaves >= 20% headroom under --max-ttft, up to
# --max-users; the load settles at the first count whose TTFT (the tester's) reaches 0.8 x max_ttft. Its steps (+1,
# then 1 + headroom/15 users) are taken as this ladder of about sqrt(2) per step.
USER_LADDER = (1, 2, 3, 4, 6, 8, 11, 16, 22, 32, 45, 64)
RAMP_HEADROOM = 0.2


def _run(case, source):
    """Per replica: (its simulation, its replay); an agentic replay with a TTFT-gated ramp at the users it settles at."""
    w = case.workload
    if w.kind != "agentic-trace" or w.max_ttft_s is None:
        return _run_at(case, source, None)
    runs = None
    for users in [u for u in USER_LADDER if u < w.concurrency] + [int(w.concurrency)]:
        runs = _run_at(case, source, users)
        if _tester_ttft(case, runs) >= (1.0 - RAMP_HEADROOM) * float(w.max_ttft_s):
            break
    return runs


def _tester_ttft(case, runs) -> float:
    """The replay tester's TTFT average over the run: a streamed request's first token, a non-streamed one's whole
    response (kv_tier_plans.Replay.streamed)."""
    vals = []
    for sim, rp in runs:
        m = rp.measured & (sim.sim.arrival_s < float(case.workload.duration_s or np.inf))
        t = sim.sim.ttft_s if rp.streamed is None else np.where(rp.streamed, sim.sim.ttft_s, sim.sim.e2e_s)
        vals.append(t[m & np.isfinite(t)])
    v = np.concatenate(vals)
    return float(np.mean(v)) if len(v) else float("inf")


def _run_at(case, source, users):
    """Per replica at ``users`` (None: the case's own load): its simulation and its replay; the arms of one load
    (a source's TTFT and tokens/s cases) share one run."""
    what = {"id": "", "metric": "ttft_mean_s", "value": 1.0, "published": "", "baseline_policy": None}
    return _simulated(case.model_copy(update=what), source, users)


@lru_cache(maxsize=256)
def _simulated(case, source, users):
    dep, prof = deployment(case, source)
    out = []
    for rp in replays(case, users):
        plan = rp.plan
        blk = int(prof.block_size)
        if rp.hbm_tokens is not None:
            pool = rp.hbm_tokens
        elif case.hbm_kv_tokens is not None:
            pool = float(case.hbm_kv_tokens)
        else:
            pool = float(np.ravel(kv_tokens(dep, prof, float(np.max(plan.isl + plan.osl))).tokens)[0])
        blocks = int(math.ceil(pool / blk)) + 1
        sim = simulate_sessions(dep, prof, plan, stack(case, dep, prof, pool), blocks, rp.concurrency)
        out.append((sim, rp))
    return out


def _metric(case, runs) -> tuple[float, float]:
    """(the case's metric, the token hit rate) over the measured requests of every replica. Tokens/s: a timed
    replay's tokens of the requests finished within it over its duration; otherwise (a benchmark that sends its set
    and waits for it, as SGLang's bench_serving) every measured request's tokens over first send to last finish."""
    w = case.workload
    ttft, isl, hit, t_in, t_out, start, end = [], [], [], 0.0, 0.0, np.inf, 0.0
    timed = w.kind == "agentic-trace" and w.duration_s is not None
    for sim, rp in runs:
        m = rp.measured.copy()
        if timed:
            m &= sim.sim.arrival_s < float(w.duration_s)
        if not np.any(m):  # a replica none of whose measured requests arrived in the run: nothing of it to count
            continue
        done = m & (sim.sim.finish_s <= float(w.duration_s)) if timed else m
        t_in += float(np.sum(sim.isl[done]))
        t_out += float(np.sum(rp.plan.osl[done]))
        start, end = min(start, float(np.min(sim.sim.arrival_s[m]))), max(end, float(np.max(sim.sim.finish_s[m])))
        ttft.append(sim.sim.ttft_s[m])
        isl.append(sim.isl[m])
        hit.append(sim.hit_tokens[m])
    ttft, isl, hit = (np.concatenate(x) for x in (ttft, isl, hit))
    rate = float(np.sum(hit) / np.sum(isl))
    span = float(w.duration_s) if timed else end - start
    tester = any(rp.streamed is not None for _, rp in runs)
    value = {"ttft_mean_s": _tester_ttft(case, runs) if tester else float(np.mean(ttft)), "ttft_p50_s": float(np.median(ttft)), "hit_rate": rate,
             "input_tokens_per_s": t_in / span, "output_tokens_per_s": t_out / span}[case.metric]
    return value, rate


RATIO_OF = {"ttft_mean_ratio": "ttft_mean_s", "input_tokens_per_s_ratio": "input_tokens_per_s"}


def predict(case, source) -> tuple[float, float]:
    """(the case's metric, the token hit rate); a _ratio metric is its arm's metric over the same load's with the
    baseline policy (no lower tiers)."""
    if case.metric not in RATIO_OF:
        return _metric(case, _run(case, source))
    arm = case.model_copy(update={"metric": RATIO_OF[case.metric]})
    ref = arm.model_copy(update={"policy": case.baseline_policy, "dram_bytes": None, "nvme_bytes": None})
    value, rate = _metric(arm, _run(arm, source))
    return value / _metric(ref, _run(ref, source))[0], rate


@lru_cache(maxsize=1)
def scored() -> tuple[Scored, ...]:
    """Every case predicted: one simulation per load and arm (_simulated, cached: a source's cases of one load and
    policy, its TTFT and tokens/s cases, share one run; a ramp's rungs are runs of their own)."""
    out = []
    for f in loader.kv_tier_validation():
        for c in f.case:
            value, rate = predict(c, f.source)
            out.append(Scored(f.source.id, c, value, rate))
    return tuple(out)


UNITS = {"ttft_mean_s": ("TTFT mean", "s"), "ttft_p50_s": ("TTFT p50", "s"), "hit_rate": ("hit rate", ""),
         "input_tokens_per_s": ("input tok/s", ""), "output_tokens_per_s": ("output tok/s", ""),
         "ttft_mean_ratio": ("TTFT mean / baseline's", "x"), "input_tokens_per_s_ratio": ("input tok/s / baseline's", "x")}


def _fmt(metric: str, x: float) -> str:
    if metric == "hit_rate":
        return f"{x * 100:.1f}%"
    if metric.endswith("_ratio"):
        return f"{x:.2f}x"
    unit = UNITS[metric][1]
    return (f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}") + (f" {unit}" if unit else "")


def summary(rows=None) -> list[dict]:
    """Per metric: cases, median |error|, share within 25%, signed median (pred/meas - 1)."""
    rows = scored() if rows is None else rows
    out = []
    for m in UNITS:
        e = np.array([r.error for r in rows if r.case.metric == m])
        if len(e):
            out.append({"metric": m, "n": len(e), "median_abs": float(np.median(np.abs(e))),
                        "within_25": float(np.mean(np.abs(e) <= 0.25)), "median": float(np.median(e))})
    return out


def source_lines_by_metric(rows=None) -> list[str]:
    """Per source and metric: cases, median |error|, signed median."""
    rows = scored() if rows is None else rows
    L = ["| source | metric | cases | median abs error | signed median |", "|---|---|---:|---:|---:|"]
    for src in dict.fromkeys(r.source for r in rows):
        for m in UNITS:
            e = np.array([r.error for r in rows if r.source == src and r.case.metric == m])
            if len(e):
                L.append(f"| `{src}` | {UNITS[m][0]} | {len(e)} | {np.median(np.abs(e)) * 100:.0f}% | "
                         f"{np.median(e) * 100:+.0f}% |")
    return L


def table_lines(rows=None) -> list[str]:
    rows = scored() if rows is None else rows
    L = ["| source | case | policy | routing | metric | measured | predicted | error | simulated hit rate |",
         "|---|---|---|---|---|---:|---:|---:|---:|"]
    for r in rows:
        c = r.case
        routing = "-" if c.routing == "single" else c.routing
        L.append(f"| `{r.source}` | {c.id} | {c.policy} | {routing} | {UNITS[c.metric][0]} | "
                 f"{_fmt(c.metric, c.value)} | {_fmt(c.metric, r.predicted)} | {r.error * 100:+.0f}% | "
                 f"{r.hit_rate * 100:.1f}% |")
    return L


def summary_lines(rows=None) -> list[str]:
    L = ["| metric | cases | median abs error | within 25% | signed median |", "|---|---:|---:|---:|---:|"]
    for s in summary(rows):
        L.append(f"| {UNITS[s['metric']][0]} | {s['n']} | {s['median_abs'] * 100:.0f}% | {s['within_25'] * 100:.0f}% "
                 f"| {s['median'] * 100:+.0f}% |")
    return L


def source_lines() -> list[str]:
    """Every cased source with its client, how its figures are defined and what it published that is not used (the
    sources read with no case are validation/kv_tier_report's)."""
    L = []
    for f in (f for f in loader.kv_tier_validation() if f.case):
        s = f.source
        L.append(f"- `{s.id}` ({s.kind}, {s.engine} {s.engine_version}, {s.as_of}): {s.title}. <{s.url}> "
                 f"Client: {s.tool}. {s.how}")
        L += [f"  - not used: {k['what']}: {k['why']}" for k in f.skipped]
    return L
