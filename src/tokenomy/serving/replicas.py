"""Data-parallel replicas are independent servers: a request is routed to one of them and never leaves it.

A deployment of dp replicas (each tp·ep·pp chips) serves a load as dp copies of one replica, each with its share:
an open loop's Poisson stream of λ requests/s splits into dp streams of λ/dp (random routing keeps them Poisson); a
closed loop's U clients spread as evenly as whole clients go (U = q·dp + r: r replicas hold q + 1, the rest q), and
with fewer clients than replicas U replicas hold one client each while the rest idle. Latencies (TTFT, TPOT) are
one replica's; throughput is the busy replicas' sum; the idle ones still cost. Pooling the replicas instead (one
scheduler with dp times the budget) would run one prompt's prefill across all of them: an 8,000-token prompt of
Qwen3-32B on 4 x H100 at tp1 dp4 came out at 0.20 s, under the 0.53 s one H100 needs for its FLOPs. Attention-DP
ranks under expert parallelism are not independent (every token's experts run over the whole EP group): they stay
one pooled deployment (scheduler.pooled_limits), a prompt's chunk kept on one rank (scheduler.rank_chunk).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from tokenomy.core.deployment import Deployment


def replica_count(dep: Deployment) -> int:
    """The deployment's independent replicas: its DP degree."""
    return int(dep.layout.dp)


def one_replica(dep: Deployment) -> Deployment:
    """The deployment's replica: its layout at dp = 1 (tp·ep·pp chips)."""
    return dep.with_(layout=replace(dep.layout, dp=1))


def replica_shares(load, replicas: int, closed: bool) -> list:
    """[(load per replica, replicas carrying it)] per point: a closed loop's U clients spread as evenly as whole
    clients go, U = q·dp + r as r replicas with q + 1 and dp − r with q (fewer clients than replicas: U replicas with
    one, the rest idle: 0 of them carry q = 0); an open loop's λ requests/s as λ/dp on every replica."""
    x = np.asarray(load, float)
    if not closed:
        return [(x / replicas, np.full_like(x, float(replicas)))]
    U = np.round(x)
    q, r = np.floor_divide(U, replicas), np.mod(U, replicas)
    return [(q + 1.0, r), (np.maximum(q, 1.0), np.where(q >= 1, replicas - r, 0.0))]


class ReplicatedSimulation:
    """Simulated replicas standing for the deployment's busy ones: ``parts`` = [(one replica's simulation, how many
    replicas run like it)]. Its request rate and goodput are the replicas' sum; its means and percentiles weight each
    part's requests by the requests/s its replicas serve (a replica with 3 clients finishes more requests than one
    with 2)."""

    def __init__(self, parts):
        self.parts = [(sim, float(k)) for sim, k in parts]

    def summary(self, chips: int) -> dict:
        sums = [(sim.summary(chips), k) for sim, k in self.parts]
        rates = [(s["requests_per_s"] or 0.0) * k for s, k in sums]
        total = sum(rates)
        out = dict(sums[0][0])
        samples = {"ttft": [], "tpot": [], "weight": []}
        for (sim, _), rate in zip(self.parts, rates):
            c = sim.counted
            n = max(int(np.sum(c)), 1)
            samples["ttft"].append(sim.ttft_s[c])
            samples["tpot"].append(sim.tpot_s[c])
            samples["weight"].append(np.full(int(np.sum(c)), rate / n))
        w = np.concatenate(samples["weight"])
        for name, key in (("ttft", "ttft_s"), ("tpot", "tpot_s")):
            x = np.concatenate(samples[name])
            out[key] = _weighted_mean(x, w)
            out[f"{key[:-2]}_p50_s"], out[f"{key[:-2]}_p99_s"] = (_weighted_percentile(x, w, q) for q in (50, 99))
        out["e2e_s"] = sum(s["e2e_s"] * r for (s, _), r in zip(sums, rates)) / total if total else sums[0][0]["e2e_s"]
        out["requests_per_s"] = total or None
        out["sim_requests"] = sum(s["sim_requests"] for s, _ in sums)
        out["preemptions"] = sum(s["preemptions"] for s, _ in sums)
        out["max_queue"] = max(s["max_queue"] for s, _ in sums)
        return out

    def goodput(self, ttft_slo, tpot_slo) -> float:
        return sum(sim.goodput(ttft_slo, tpot_slo) * k for sim, k in self.parts)


def _weighted_mean(x, w) -> float:
    ok = np.isfinite(x)
    return float(np.sum(x[ok] * w[ok]) / np.sum(w[ok])) if np.any(ok) else float("nan")


def _weighted_percentile(x, w, q: float) -> float:
    """The q-th percentile of samples x weighted by w (the smallest x whose cumulative weight reaches q%)."""
    ok = np.isfinite(x)
    x, w = x[ok], w[ok]
    if not x.size:
        return float("nan")
    order = np.argsort(x)
    cum = np.cumsum(w[order])
    return float(x[order][np.searchsorted(cum, q / 100.0 * cum[-1])])


def replica_workloads(w, replicas: int) -> list:
    """[(one replica's workload, replicas running it)] (replica_shares; a trace's requests dealt round-robin:
    replica 0's share, every dp-th request at its own arrival time, standing for all dp)."""
    if w.trace is not None:
        t = w.trace
        share = type(t)(t.arrival_s[::replicas], t.isl[::replicas], t.osl[::replicas])
        return [(replace(w, trace=share), replicas)]
    if w.closed:
        shares = replica_shares(w.concurrency, replicas, True)
        return [(replace(w, concurrency=int(c)), float(k)) for c, k in shares if float(k) >= 1]
    return [(replace(w, rate=float(w.rate) / replicas), replicas)]


def simulate_replicas(dep: Deployment, prof, w, n_requests: int):
    """serving.simulator.simulate on one replica at each share of the workload (module docstring), standing for the
    replicas that run it; a deployment of one replica is simulated as it is."""
    from tokenomy.serving.simulator import simulate

    reps = replica_count(dep)
    if reps == 1:
        return simulate(dep, prof, w, n_requests)
    one = one_replica(dep)
    return ReplicatedSimulation([(simulate(one, prof, wi, n_requests), k) for wi, k in replica_workloads(w, reps)])
