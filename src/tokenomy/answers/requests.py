"""Request objects: what a serving question asks, as small frozen types the doors build and the answers take.

    WorkloadRequest    the load points (closed loop U users or open loop λ requests/s, or a trace's mean rate),
                       ISL and OSL lengths, prefix-cache hit, arrivals, SLOs
    EngineRequest      the serving engine's profile by name and its two knobs (token budget, batch cap)
    RunRequest         how the figures are produced: analytic | simulate, the benchmark protocol, requests, seed
    DeploymentRequest  what is served (answers/deployment_request.py): model, hardware, chips, layout, dtypes,
                       efficiency set, prices, and for disaggregated serving its two pools (PoolRequest)
    ServeRequest       the four together, and the engine whose launch commands to write
    SessionRequest     serve's session workloads (answers/session_request.py, with SESSION_KEYS)
    SERVE_KEYWORDS     serve's keywords with their defaults; SERVE_KEYS, what ServeRequest.of reads, derived from it
Each is built from a door's keywords by ``of(values)`` (every value through answers/inputs' grammar and bounds: the
CLI, the web and ``tk.*`` accept and refuse the same strings), checks itself there (a ValueError naming the public
keyword), and prints a one-line summary (``str``). ``tk.serve`` builds them from its keywords; ``tokenomy serve``
from its options; the answers below the door take them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

import numpy as np

from tokenomy.answers import inputs
from tokenomy.answers.deployment_request import DeploymentRequest, PoolRequest  # noqa: F401  (one import place)
from tokenomy.answers.session_request import SESSION_KEYS
from tokenomy.serving.workload import Lengths, read_trace
from tokenomy.units import fmt_seconds

ARRIVALS = ("together", "staggered")
METHODS = ("analytic", "simulate")


class Points(tuple):
    """A request's load points: a tuple of floats (hashed, compared and printed as the tuple) that carries its float
    array, formed once: a door's grid of 10^5 points is not converted back to an array at every read (benchmarks/
    serve.py: tk.serve's points per CPU-second)."""

    array: np.ndarray

    def __new__(cls, values) -> "Points":
        arr = np.array(values, dtype=float)  # a copy of its own, read-only: the tuple and the array stay equal
        arr.flags.writeable = False
        self = super().__new__(cls, arr.tolist())
        self.array = arr
        return self

    def __reduce__(self):
        return Points, (tuple(self),)


def _points(name: str, values) -> Points | None:
    return None if values is None else Points(inputs.number_array(name, values))


def _array(points) -> np.ndarray | None:
    """The load points as floats: a Points' own array (read-only), else a tuple converted."""
    if points is None:
        return None
    return points.array if isinstance(points, Points) else np.asarray(points, float)


def _lengths(field: str, fixed, dist) -> Lengths:
    if dist is not None:
        return dist if isinstance(dist, Lengths) else Lengths.parse(field + "_dist", dist)
    v = inputs.optional(field, fixed)
    if v is None:
        raise ValueError(f"{field}: must be a positive integer")
    return Lengths("fixed", float(v))


@dataclass(frozen=True)
class WorkloadRequest:
    """Who sends what: one of ``concurrency`` (closed loop, users) and ``rate`` (open loop, requests/s) — a trace's
    arrivals replace both by its mean rate —, the lengths, the prefix-cache hit fraction, the closed loop's arrivals
    and the SLOs (None: none). ``sessions``: a multi-turn or agentic session workload (serving's frozen types), when
    the load is sessions rather than independent requests."""

    concurrency: tuple | None = None
    rate: tuple | None = None
    isl: Lengths = Lengths("fixed", 1024.0)
    osl: Lengths = Lengths("fixed", 1024.0)
    trace: Any = None  # serving.workload.Requests
    cache_hit: float = 0.0
    arrivals: str = "staggered"
    ttft_slo: float | None = None
    tpot_slo: float | None = None
    sessions: Any = None

    @classmethod
    def of(cls, values: Mapping) -> "WorkloadRequest":
        """From a door's keywords (concurrency, rate, isl, osl, isl_dist, osl_dist, trace, cache_hit, arrivals,
        ttft_slo, tpot_slo, sessions; absent ones take their defaults), each checked."""
        v = dict(values)
        hit, arrivals = inputs.number("cache_hit", v.get("cache_hit", 0.0)), v.get("arrivals", "staggered")
        if arrivals not in ARRIVALS:
            raise ValueError(f"arrivals: {arrivals!r}; allowed: {', '.join(ARRIVALS)}")
        trace = v.get("trace")
        tr = read_trace(trace) if trace is not None and not hasattr(trace, "isl") else trace
        U, lam = _points("concurrency", v.get("concurrency")), _points("rate", v.get("rate"))
        given = [n for n, x in (("concurrency", U), ("rate", lam)) if x is not None]
        if tr is not None and given:
            raise ValueError(f"{given[0]}: not with trace (the trace's arrivals are the load); give one")
        if tr is None and (U is None) == (lam is None):
            raise ValueError("concurrency, rate: give one (users of a closed loop, or requests/s of an open loop)")
        if tr is not None:
            lam = (len(tr) / max(float(tr.arrival_s[-1] - tr.arrival_s[0]), 1e-9),)
        slos = {name: inputs.optional(name, v.get(name)) for name in ("ttft_slo", "tpot_slo")}
        return cls(U, lam, _lengths("isl", v.get("isl", 1024), v.get("isl_dist")),
                   _lengths("osl", v.get("osl", 1024), v.get("osl_dist")), tr, float(hit), arrivals,
                   sessions=v.get("sessions"), **slos)

    @property
    def U(self) -> np.ndarray | None:
        """The closed loop's users per point (None: open loop)."""
        return _array(self.concurrency)

    @property
    def lam(self) -> np.ndarray | None:
        """The open loop's requests/s per point (None: closed loop)."""
        return _array(self.rate)

    @property
    def load(self) -> np.ndarray:
        return _array(self.concurrency if self.concurrency is not None else self.rate)

    @property
    def closed(self) -> bool:
        return self.concurrency is not None

    @property
    def slos(self) -> tuple:
        return self.ttft_slo, self.tpot_slo

    @property
    def isl_mean(self) -> float:
        return float(np.mean(self.trace.isl)) if self.trace is not None else self.isl.mean

    @property
    def osl_mean(self) -> float:
        return float(np.mean(self.trace.osl)) if self.trace is not None else self.osl.mean

    def longest(self) -> tuple[float, float]:
        """The longest ISL and OSL a request has (fixed: N, uniform: b; lognormal, unbounded: its mean)."""
        if self.trace is not None:
            return float(np.max(self.trace.isl)), float(np.max(self.trace.osl))
        top = lambda x: float({"fixed": x.a, "uniform": x.b}.get(x.kind, x.mean))  # noqa: E731
        return top(self.isl), top(self.osl)

    def at(self, i: int) -> "WorkloadRequest":
        """The workload at its i-th load point alone."""
        pick = lambda x: None if x is None else Points((x[i],))  # noqa: E731
        return replace(self, concurrency=pick(self.concurrency), rate=pick(self.rate))

    def lengths_label(self) -> tuple[str, str]:
        return ("trace", "trace") if self.trace is not None else (self.isl.label(), self.osl.label())

    def __str__(self) -> str:
        pts = lambda xs: ", ".join(f"{x:g}" for x in xs)  # noqa: E731
        load = (f"trace of {len(self.trace)} requests ({self.rate[0]:.4g}/s)" if self.trace is not None else
                f"closed loop {pts(self.concurrency)} users ({self.arrivals})" if self.closed else
                f"open loop {pts(self.rate)} requests/s")
        isl, osl = self.lengths_label()
        slo = [f"{k} {fmt_seconds(v)}" for k, v in (("TTFT", self.ttft_slo), ("TPOT", self.tpot_slo)) if v]
        kind = f"{self.sessions.kind} sessions, " if self.sessions is not None else ""
        return (f"{kind}{load}; ISL {isl} / OSL {osl}; cache hit {self.cache_hit:g}"
                + (f"; SLOs {', '.join(slo)}" if slo else ""))


@dataclass(frozen=True)
class EngineRequest:
    """The serving engine's profile (catalog/engines/<name>.toml) and its knobs: the token budget per step
    (``max_num_tokens``), the batch cap (``max_batch``) and TensorRT-LLM's delayed batching (``batch_wait_iters``,
    ``batch_wait_tokens_ratio``: answers.engines.delayed_batching); None: the profile's."""

    name: str = "vllm"
    max_num_tokens: int | None = None
    max_batch: int | None = None
    batch_wait_iters: int | None = None
    batch_wait_tokens_ratio: float | None = None

    @classmethod
    def of(cls, values: Mapping) -> "EngineRequest":
        """From a door's keywords (engine, max_num_tokens, max_batch, batch_wait_*); the profile is looked up to
        check them."""
        opt = lambda k: inputs.optional(k, values.get(k))  # noqa: E731
        req = cls(values.get("engine") or "vllm", opt("max_num_tokens"), opt("max_batch"), opt("batch_wait_iters"),
                  opt("batch_wait_tokens_ratio"))
        req.profile()
        return req

    def profile(self, tp: int = 1):
        """serving.scheduler.EngineProfile at tensor-parallel degree ``tp`` (answers.engines.engine_profile)."""
        from tokenomy.answers.engines import delayed_batching, engine_profile

        return delayed_batching(engine_profile(self.name, int(tp), self.max_num_tokens, self.max_batch),
                                self.batch_wait_iters, self.batch_wait_tokens_ratio)

    def __str__(self) -> str:
        knobs = [f"{k} {v}" for k, v in (("max_num_tokens", self.max_num_tokens), ("max_batch", self.max_batch),
                                         ("batch_wait_iters", self.batch_wait_iters),
                                         ("batch_wait_tokens_ratio", self.batch_wait_tokens_ratio))
                 if v is not None]
        return self.name + (f" ({', '.join(knobs)})" if knobs else "")


@dataclass(frozen=True)
class RunRequest:
    """How the figures are produced: ``method`` analytic (serving.steady) or simulate (the iteration-level
    simulator, ``requests`` requests seeded by ``seed``); ``protocol`` the benchmark tool whose run to reproduce
    (catalog/protocols; "steady": the steady state)."""

    method: str = "analytic"
    protocol: str = "steady"
    requests: int | None = None
    seed: int = 0

    @classmethod
    def of(cls, values: Mapping) -> "RunRequest":
        method = values.get("method", "analytic")
        if method not in METHODS:
            raise ValueError(f"method: {method!r}; allowed: {', '.join(METHODS)}")
        return cls(method, values.get("protocol", "steady") or "steady",
                   inputs.optional("requests", values.get("requests")), int(values.get("seed") or 0))

    def __str__(self) -> str:
        how = self.method if self.protocol == "steady" else f"protocol {self.protocol}"
        return how + (f", {self.requests} requests" if self.requests else "") + (
            f", seed {self.seed}" if self.method == "simulate" or self.protocol != "steady" else "")


@dataclass(frozen=True)
class ServeRequest:
    """A serving question: what is served (``deployment``), the load (``workload``), the serving engine and how
    the figures are produced (``run``); ``emit`` the engine whose launch commands to write (None: none)."""

    deployment: DeploymentRequest
    workload: WorkloadRequest
    serving_engine: EngineRequest
    run: RunRequest = RunRequest()
    emit: str | None = None

    @classmethod
    def of(cls, model, hardware, values: Mapping) -> "ServeRequest":
        """From ``tk.serve``'s keywords (or the CLI's options), checked in the order a user reads them: the mode
        and its layout keywords, the method, the workload, the engine, the protocol, the launch commands."""
        from tokenomy.answers.engines import benchmark_protocol
        from tokenomy.answers.launch import ENGINES, check_emit

        v = dict(values)
        unknown = sorted(set(v) - SERVE_KEYS)
        if unknown:  # a key no request object reads would be dropped silently (a session key: tk.serve takes it)
            raise ValueError(f"{unknown[0]}: not a key of a serve request; allowed: {', '.join(sorted(SERVE_KEYS))}"
                             + (" (session workloads: tk.serve(workload=...))" if unknown[0] in SESSION_KEYS else ""))
        emit = v.get("emit")
        if v.get("engine") is None:  # left out: the engine emit names (vllm for dynamo or no emit)
            v["engine"] = emit if emit in ENGINES else "vllm"
        if emit is not None:  # first, as every answer taking emit checks it
            check_emit(emit, v["engine"])
        dep = DeploymentRequest.of(model, hardware, v)
        run = RunRequest.of(v)
        work = WorkloadRequest.of(v)
        proto = benchmark_protocol(run.protocol)
        if not proto.steady and (dep.mode == "disagg" or work.trace is not None):
            raise ValueError(f"protocol: {run.protocol!r} runs on aggregated serving without a trace; give "
                             "protocol=steady with mode=disagg or a trace")
        held = [k for k in ("batch_wait_iters", "batch_wait_tokens_ratio") if v.get(k) is not None]
        if held and dep.mode == "disagg":  # the pools' models hold no prompt: refused, not dropped unread
            raise ValueError(f"{held[0]}: delayed batching is modelled on aggregated serving (mode=agg); "
                             "the disaggregated pools do not hold prompts")
        return cls(dep, work, EngineRequest.of(v), run, emit)

    def __str__(self) -> str:
        return f"{self.deployment}; {self.workload}; engine {self.serving_engine}; {self.run}" + (
            f"; emit {self.emit}" if self.emit else "")


# the keywords serve takes beside model, hardware, the load and the lengths, with their defaults: the workload's, the
# serving engine's, the run's, the deployment's (decode's layout keywords, answers.resolve.layout_of) and the sessions'
SERVE_KEYWORDS = {"isl_dist": None, "osl_dist": None, "trace": None, "cache_hit": 0.0, "engine": None,
                  "max_num_tokens": None, "max_batch": None, "batch_wait_iters": None,
                  "batch_wait_tokens_ratio": None, "ttft_slo": None, "tpot_slo": None, "method": "analytic",
                  "arrivals": "staggered", "requests": None, "seed": 0, "chips": None, "tp": None, "ep": None,
                  "pp": None, "dp": None, "redundant_experts": None, "attn_dp": None, "kv_batch": None,
                  "weight_dtype": None, "kv_dtype": None, "efficiency": "calibrated", "usd_per_chip_hour": None,
                  "mode": "agg", "pools": None, "usd_per_kwh": None, "facility": None, "emit": None,
                  "protocol": "steady", **dict.fromkeys(SESSION_KEYS), "workload": "steady"}
# what ServeRequest.of reads: serve's keywords but the sessions' (tk.serve answers those apart), the load and the
# lengths (serve's own arguments), a Layout given whole (the CLI's, DeploymentRequest.of) and steady traffic's
# sessions (WorkloadRequest)
SERVE_KEYS = (frozenset(SERVE_KEYWORDS).difference(SESSION_KEYS)
              | {"concurrency", "rate", "isl", "osl", "layout", "sessions"})
