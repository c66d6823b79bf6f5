"""Data-parallel replicas are independent servers: a request is routed to one of them and never leaves it.

A deployment of dp replicas (each tp·ep·pp chips) serves a load as dp copies of one replica, each with its share:
an open loop's Poisson stream of R requests/s splits into dp streams of R/dp (random routing keeps them Poisson); a
closed loop's C clients spread evenly, C/dp per replica, and with fewer clients than replicas C replicas hold one
client each while the rest idle. Latencies (TTFT, TPOT) are one replica's; throughput is the busy replicas' sum;
the idle ones still cost. Pooling the replicas instead (one scheduler with dp times the budget) would run one
prompt's prefill across all of them: an 8,000-token prompt of Qwen3-32B on 4 x H100 at tp1 dp4 came out at 0.20 s,
under the 0.53 s one H100 needs for its FLOPs. Attention-DP ranks under expert parallelism are not independent
(every token's experts run over the whole EP group): they stay one pooled deployment (scheduler.pooled_limits).
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


def split_load(load, replicas: int, closed: bool):
    """(load per busy replica, busy replicas) of the module docstring: C/busy clients on busy = min(C, dp)
    replicas, or R/dp requests/s on all dp."""
    x = np.asarray(load, float)
    busy = np.minimum(x, float(replicas)) if closed else np.full_like(x, float(replicas))
    return x / busy, busy


class ReplicatedSimulation:
    """One replica's simulation standing for ``busy`` of them: its per-request statistics as they are, its request
    rate and goodput times ``busy`` (every other attribute is the replica's)."""

    def __init__(self, sim, busy: float):
        self.sim, self.busy = sim, float(busy)

    def __getattr__(self, name):
        return getattr(self.sim, name)

    def summary(self, chips: int) -> dict:
        out = self.sim.summary(chips)
        if out.get("requests_per_s") is not None:
            out["requests_per_s"] *= self.busy
        return out

    def goodput(self, ttft_slo, tpot_slo) -> float:
        return self.sim.goodput(ttft_slo, tpot_slo) * self.busy


def replica_workload(w, replicas: int):
    """(one replica's workload, busy replicas): the closed loop's clients spread evenly (C/busy rounded to whole
    clients, at least one), the open loop's rate split dp ways, a trace's requests dealt round-robin (replica 0's
    share: every dp-th request, at its own arrival time)."""
    if w.trace is not None:
        t = w.trace
        share = type(t)(t.arrival_s[::replicas], t.isl[::replicas], t.osl[::replicas])
        return replace(w, trace=share), float(replicas)
    if w.closed:
        busy = min(float(w.concurrency), float(replicas))
        return replace(w, concurrency=max(round(float(w.concurrency) / busy), 1)), busy
    return replace(w, rate=float(w.rate) / replicas), float(replicas)


def simulate_replicas(dep: Deployment, prof, w, n_requests: int):
    """serving.simulator.simulate on one replica at its share of the workload (module docstring), standing for the
    busy replicas; a deployment of one replica is simulated as it is."""
    from tokenomy.serving.simulator import simulate

    reps = replica_count(dep)
    if reps == 1:
        return simulate(dep, prof, w, n_requests)
    w1, busy = replica_workload(w, reps)
    return ReplicatedSimulation(simulate(one_replica(dep), prof, w1, n_requests), busy)
