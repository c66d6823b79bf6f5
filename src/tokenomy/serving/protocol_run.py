"""A benchmark protocol run: the iteration-level simulator from the first wave, reported as the tool reports it.

    burst     U clients send at t = 0 (Workload arrivals "together"), each its next prompt as its last completes,
              until the protocol's prompt count (serving.protocol.Protocol.prompt_count) has been sent
    offline   every prompt queued at t = 0 (a closed loop of U = the prompt count): the engine admits what its batch
              cap, KV cache and token budget take, the rest wait in its queue
    poisson   Poisson arrivals at λ requests/s for the prompt count (a burst tool given a request rate, as vllm bench
              serve's --request-rate: the same)
The engine is the deployment's on its profile (whole prompts or chunked prefill under the token budget, KV blocks,
batch cap: serving.simulator). Every timed request counts — ramp-up and drain included, no statistics window —
each metric reduced by the tool's rule (Protocol.reduce): TTFT from send to first token (+ the request overhead
outside the engine), TPOT per request (latency − TTFT)/(out − 1) or latency/out, ITL the pooled gaps
Σ(latency − TTFT)/Σ(out − 1), output throughput Σ out / (last response − first send). Warm-up requests run before
the timer on an idle engine, so the timed run starts from an empty batch as simulated. dp replicas are independent
(serving.replicas): one replica runs ceil(U/dp) clients (an open loop λ/dp) and ceil(n/dp) prompts; throughput is
the replicas' sum. Poisson gaps only: a burstiness other than 1 (vllm bench serve's gamma gaps) is not simulated
(every catalog protocol states 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tokenomy.core.deployment import Deployment
from tokenomy.serving.protocol import Protocol
from tokenomy.serving.replicas import one_replica, replica_count
from tokenomy.serving.scheduler import EngineProfile
from tokenomy.serving.workload import Lengths, Workload

MAX_RUN_REQUESTS = 8192  # requests simulated at most (MLPerf's 24,576-sample runs: their first 8,192; the rest of
# such a run is the same steady state, and the simulator's loop costs ~10 us a request-step)


@dataclass(frozen=True)
class ProtocolRun:
    """One protocol run's per-request times (s) and its reduced figures (``summary``)."""

    protocol: Protocol
    ttft_s: np.ndarray  # per timed request, send to first token, request overhead included
    e2e_s: np.ndarray
    osl: np.ndarray
    arrival_s: np.ndarray
    finish_s: np.ndarray
    replicas: int

    @property
    def tpot_s(self) -> np.ndarray:
        """TPOT per request by the tool's definition (NaN where it has none: one output token, "decode")."""
        with np.errstate(invalid="ignore", divide="ignore"):
            if self.protocol.tpot_definition == "e2e":
                return self.e2e_s / self.osl
            return np.where(self.osl > 1, (self.e2e_s - self.ttft_s) / (self.osl - 1), np.nan)

    @property
    def span_s(self) -> float:
        return float(np.max(self.finish_s) - np.min(self.arrival_s))

    def summary(self, chips: int) -> dict:
        p, ttft, tpot = self.protocol, self.ttft_s, self.tpot_s
        span, gaps = self.span_s, float(np.sum(np.maximum(self.osl - 1, 0)))
        out_per_s = float(np.sum(self.osl)) / span * self.replicas if span > 0 else math.nan
        return {"ttft_s": p.reduce(ttft, p.ttft_statistic), "tpot_s": p.reduce(tpot, p.tpot_statistic),
                "e2e_s": float(np.mean(self.e2e_s)), "ttft_p50_s": p.reduce(ttft, "median"),
                "ttft_p99_s": p.reduce(ttft, "p99"), "tpot_p50_s": p.reduce(tpot, "median"),
                "tpot_p99_s": p.reduce(tpot, "p99"),
                "itl_s": float(np.sum(self.e2e_s - self.ttft_s)) / gaps if gaps else math.nan,
                "requests_per_s": len(ttft) / span * self.replicas if span > 0 else None,
                "output_tokens_per_s": out_per_s, "tokens_per_s_per_chip": out_per_s / chips,
                "tokens_per_s_per_user": 1.0 / p.reduce(tpot, p.tpot_statistic),
                "protocol": p.name, "sim_requests": len(ttft) * self.replicas, "duration_s": span}

    def goodput(self, ttft_slo, tpot_slo) -> float:
        from tokenomy.serving.simulator import within_slos

        ok = within_slos(self.ttft_s, self.tpot_s, ttft_slo, tpot_slo)
        return float(np.sum(ok)) / self.span_s * self.replicas if self.span_s > 0 else 0.0


def protocol_workload(p: Protocol, isl: Lengths | int, osl: Lengths | int, concurrency=None, rate=None,
                      seed: int = 0, prompts: int | None = None) -> tuple[Workload, int]:
    """(the simulator's workload, timed prompts) of one replica's share of a protocol run (module docstring);
    integer ``isl``/``osl`` are nominal lengths drawn as the tool draws them."""
    li = p.lengths(isl, output=False) if not isinstance(isl, Lengths) else isl
    lo = p.lengths(osl, output=True) if not isinstance(osl, Lengths) else osl
    n = min(p.prompt_count(concurrency, rate, prompts), MAX_RUN_REQUESTS)
    if p.arrivals == "poisson" or (p.arrivals == "burst" and rate is not None):  # a burst tool's --request-rate
        if rate is None:
            raise ValueError(f"rate: protocol {p.name} issues Poisson arrivals at a target rate; give a rate")
        return Workload(li, lo, rate=float(rate), seed=seed), n
    if rate is not None:
        raise ValueError(f"rate: protocol {p.name} queues every prompt at once; give a concurrency, not a rate")
    U = n if p.arrivals == "offline" and concurrency is None else concurrency
    if U is None:
        raise ValueError(f"concurrency: protocol {p.name} starts every client at once (request rate inf); "
                         "give --concurrency")
    return Workload(li, lo, concurrency=float(min(U, n)), arrivals="together", seed=seed), n


def run_protocol(dep: Deployment, prof: EngineProfile, p: Protocol, isl, osl, *, concurrency=None, rate=None,
                 seed: int = 0, prompts: int | None = None) -> ProtocolRun:
    """The protocol run of the module docstring on ``dep`` under engine profile ``prof``."""
    from tokenomy.serving.simulator import simulate

    reps = replica_count(dep)
    one = one_replica(dep) if reps > 1 else dep
    U = None if concurrency is None else math.ceil(float(concurrency) / reps)
    lam = None if rate is None else float(rate) / reps
    n_all = p.prompt_count(concurrency, rate, prompts)
    w, n = protocol_workload(p, isl, osl, U, lam, seed, math.ceil(n_all / reps))
    sim = simulate(one, prof, w, n)
    req = w.requests(n)
    return ProtocolRun(p, sim.ttft_s, sim.e2e_s, np.maximum(req.osl, 1).astype(float), sim.arrival_s, sim.finish_s,
                       reps)
