"""The steady state of a workload on a Deployment, vectorised over workload points: the equations of
serving/steady_solve.py (``solve``) with the pass engine as the step function (scheduler.StepTimer), the KV
capacity and the engine profile's limits as the running batch's cap (``engine_problem``), and what follows from the
solution: rates, $ per token split by the prefill share of the mean step, KV occupancy, the chips' busy shares,
NaN where a point does not fit (``_steady_of``). Several dp replicas: one replica's steady state at each share of
the load, combined (``_combine``). Many closed-loop points: solved in pieces that stay in cache (PIECE_POINTS).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from tokenomy.core import engine
from tokenomy.core.deployment import Deployment, usd_per_mtok
from tokenomy.serving.replicas import one_replica, replica_count, replica_shares
from tokenomy.serving.batch_wait import batch_wait_of
from tokenomy.serving.engine_profile import EngineProfile, poll_steps, pooled_limits
from tokenomy.serving.kv_capacity import kv_capacity, shared_block_tokens
from tokenomy.serving.scheduler import StepTimer, rank_chunk
from tokenomy.serving.steady_solve import Points, Solved, solve  # also steady.solve etc. (re-exported)
from tokenomy.serving.workload import prefill_context, prefill_tokens

PIECE_POINTS = 1 << 14  # closed-loop points per pass: its arrays stay in cache (2^14 measured fastest of 5,000..2^20
# on 100k points, +40% over one pass; with the pieces sharing one problem, tk.serve on 100k points interleaved over
# 2^13..2^16: 2^14 705k/768k/763k/741k/730k points per CPU-s for 2^13/2^14/20000/2^15/2^16, within the noise of the
# shared machine; on 10^6 points 2^14 1.2-1.35M, 2^16 1.1M; benchmarks/serve.py)


@dataclass(frozen=True)
class Prefix:
    """What the prompts reuse: ``hit`` the share of each prompt's tokens the prefix cache already holds (a number
    or one per point; prefill computes only the rest, workload.prefill_tokens), ``shared_tokens`` a prefix every
    running request shares (a session workload's system prompt), held once in the KV pool (kv_capacity)."""

    hit: object = 0.0
    shared_tokens: float = 0.0


NO_PREFIX = Prefix()


@dataclass(frozen=True)
class Sending:
    """How the run sends its requests: a closed loop's clients start ``arrivals`` "staggered" (the steady state) or
    "together" (phase-locked waves, steady_solve); an open loop sends ``prompts`` requests in all (serving.finite_run:
    no more running than were sent; inf: an endless stream, the steady state)."""

    arrivals: str = "staggered"
    prompts: float = np.inf


STEADY_SENDING = Sending()


@dataclass(frozen=True)
class Steady:
    """Arrays over workload points."""

    batch: np.ndarray  # running sequences B
    b_kv: np.ndarray
    decodes: np.ndarray  # B_d
    prefill_per_step: np.ndarray  # P
    chunks: np.ndarray
    tpot_s: np.ndarray
    ttft_s: np.ndarray
    ttft_p50_s: np.ndarray
    ttft_p99_s: np.ndarray
    queue_s: np.ndarray
    chunk_step_s: np.ndarray
    e2e_s: np.ndarray
    requests_per_s: np.ndarray
    output_tokens_per_s: np.ndarray
    prefill_share: np.ndarray
    usd_per_mtok_input: np.ndarray
    usd_per_mtok_output: np.ndarray
    kv_occupancy: np.ndarray
    capacity_limited: np.ndarray
    bound: np.ndarray  # index into engine.BOUNDS (the mean step)
    fits: np.ndarray
    # the share of time each unit of a chip is busy over the mean step of B_d decodes and P prefill tokens
    # (engine.PassTerms.busy_shares; econ/energy.py turns them into watts: power is linear in busy time below the cap)
    busy_compute: np.ndarray
    busy_hbm: np.ndarray
    busy_link: np.ndarray
    # decode steps a request landing while others decode waits before its prompt is scheduled: the next receive
    # (poll_steps) + TensorRT-LLM's delayed-batching hold (batch_wait.held_steps); serve's --explain prints them
    wait_steps: np.ndarray


def steady(dep: Deployment, prof: EngineProfile, *, isl, osl, concurrency=None, rate=None,
           prefix: Prefix = NO_PREFIX, sending: Sending = STEADY_SENDING) -> Steady:
    """The steady state at each point (module docstring); ``concurrency`` or ``rate`` an array of points. Points
    that do not fit come back NaN (``fits`` false) without numpy's warnings on the way. ``prefix``: the cache hit
    and the shared prompt prefix (Prefix); ``sending``: the clients' start and an open loop's run of that many prompts
    (Sending; the prompts shared evenly by the replicas).
    Several dp replicas (serving.replicas): one replica's steady state at each share of the load (replica_shares: a
    closed loop's U = q·dp + r clients as r replicas of q + 1 and dp − r of q), combined by _combine: rates and
    batches summed over the replicas, latencies weighted by the requests/s each share serves, KV capacity times dp,
    the whole deployment's KV occupancy and $ per token (idle replicas are paid for too). The solve is called from
    here, so `tokenomy serve` reaches the engine in 6 calls (tests/cli/test_serve_hops.py)."""
    closed, reps = concurrency is not None, replica_count(dep)
    arrivals, prompts = sending.arrivals, sending.prompts
    one = one_replica(dep) if reps > 1 else dep
    load = concurrency if closed else rate
    shares = replica_shares(load, reps, closed) if reps > 1 else [(load, 1)]
    parts = []
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for x, k in shares:
            pb = engine_problem(one, prof, isl=isl, osl=osl, load=x, cache_hit=prefix.hit,
                                shared_tokens=prefix.shared_tokens, prompts=prompts / reps)
            if closed and pb.points.load.size > PIECE_POINTS:
                parts.append((_closed_in_pieces(one, pb, arrivals), k))
                continue
            parts.append((_steady_of(one, pb, solve(pb.step, pb.points, closed=closed, arrivals=arrivals)), k))
        return parts[0][0] if reps == 1 else _combine(parts, reps)


BUSY = ("busy_compute", "busy_hbm", "busy_link")
SUMMED = ("batch", "decodes", "prefill_per_step", "requests_per_s", "output_tokens_per_s")
RATE_WEIGHTED = ("tpot_s", "ttft_s", "ttft_p50_s", "ttft_p99_s", "queue_s", "chunk_step_s", "e2e_s", "prefill_share",
                 "chunks", "wait_steps")


def _combine(parts, reps: int) -> Steady:
    """The deployment of ``reps`` replicas from [(one replica's Steady, replicas running like it)] (steady)."""
    on = [np.asarray(k, float) > 0 for _, k in parts]
    part = lambda s, k, on_, x: np.where(on_, np.asarray(k, float) * x, 0.0)  # noqa: E731 (0, not NaN, where k = 0)
    rates = [part(s, k, o, s.requests_per_s) for (s, k), o in zip(parts, on)]
    total = sum(rates)
    out = {f: sum(part(s, k, o, getattr(s, f)) for (s, k), o in zip(parts, on)) for f in SUMMED}
    with np.errstate(invalid="ignore", divide="ignore"):
        for f in RATE_WEIGHTED:
            out[f] = sum(np.where(o, r * getattr(s, f), 0.0) for (s, _), o, r in zip(parts, on, rates)) / total
        for f in ("usd_per_mtok_input", "usd_per_mtok_output"):
            out[f] = 1.0 / sum(part(s, k, o, 1.0 / getattr(s, f)) / reps for (s, k), o in zip(parts, on))
    first = parts[0][0]
    out["b_kv"] = first.b_kv * float(reps)
    out["kv_occupancy"] = sum(part(s, k, o, s.kv_occupancy) for (s, k), o in zip(parts, on)) / reps
    for f in BUSY:  # over every replica: one without requests is idle (busy 0), its power still drawn
        out[f] = sum(part(s, k, o, getattr(s, f)) for (s, k), o in zip(parts, on)) / reps
    out["capacity_limited"] = np.logical_or.reduce([o & s.capacity_limited for (s, _), o in zip(parts, on)])
    out["fits"] = np.logical_and.reduce([~o | s.fits for (s, _), o in zip(parts, on)])
    out["bound"] = np.where(on[0], first.bound, parts[-1][0].bound)
    nan = np.where(out["fits"], 0.0, np.nan)
    return Steady(**{f.name: (out[f.name] + nan if f.name in SUMMED + RATE_WEIGHTED else out[f.name])
                     for f in fields(Steady)})


def _closed_in_pieces(dep: Deployment, pb: "EngineProblem", arrivals) -> Steady:
    """The closed loop in pieces of at most PIECE_POINTS points: every formula is per point, so the pieces give
    the numbers of one pass; each piece's arrays stay in cache, and the problem (KV capacity, limits, the
    contexts' lowerings, the decode-only steps at each whole batch) is formed once for all of them. Each piece is
    written into the answer's arrays as it is solved, so its own arrays are freed before the next is formed (the
    allocator reuses their memory instead of holding every piece until a final concatenation). (The open loop's
    secant steps run until every point has converged: its points share the iteration count, and it runs in one
    pass.)"""
    shape, out = pb.points.load.shape, None
    for sl, p in pb.pieces(PIECE_POINTS):
        part = _steady_of(dep, p, solve(p.step, p.points, closed=True, arrivals=arrivals))
        if out is None:
            out = {f.name: np.empty(int(np.prod(shape)), np.result_type(getattr(part, f.name))) for f in fields(Steady)}
        for name, x in out.items():
            x[sl] = getattr(part, name)
    return Steady(**{name: x.reshape(shape) for name, x in out.items()})


def _slices(points: int, most: int) -> list[slice]:
    """``points`` points in ceil(points/most) runs of equal length (within one)."""
    k = -(-points // most)
    edges = [points * i // k for i in range(k + 1)]
    return [slice(a, b) for a, b in zip(edges[:-1], edges[1:])]


@dataclass(frozen=True)
class EngineProblem:
    """A deployment's workload points as ``solve`` takes them: the engine's step function and the points
    (``solve(problem.step, problem.points, closed=..., arrivals=...)``), with the KV capacity beside."""

    step: StepTimer
    points: Points
    b_kv: np.ndarray
    kv_tokens: np.ndarray
    shared_tokens: object = 0.0  # the prefix the running sequences share, in whole blocks (held once a replica)

    def pieces(self, most: int):
        """(slice, the problem over it) for runs of at most ``most`` points of its flattened grid (_slices), the step
        timer's lowerings and decode-only tables shared (StepTimer.piece): its tables reach the most running
        sequences of any point, min(load, cap), where that is fewer batches than points."""
        shape, st = self.points.load.shape, self.step
        flat = lambda x: np.ravel(np.broadcast_to(x, shape)) if np.ndim(x) else x  # noqa: E731
        pts = {f.name: flat(getattr(self.points, f.name)) for f in fields(Points)}
        b_kv, kv_tok = flat(self.b_kv), flat(self.kv_tokens)
        context, prefill_context, chunk = (None if x is None else flat(x)
                                           for x in (st.context, st.prefill_context, st.chunk_tokens))
        size = int(np.prod(shape))
        top = float(np.max(np.minimum(pts["load"], pts["cap"]))) if size else None
        top = top if top is not None and top + 1.0 <= size else None
        for sl in _slices(size, most):
            cut = lambda x: x[sl] if np.ndim(x) else x  # noqa: E731
            yield sl, EngineProblem(st.piece(sl, context, prefill_context, chunk, top),
                                    Points(**{k: cut(v) for k, v in pts.items()}), cut(b_kv), cut(kv_tok),
                                    self.shared_tokens)


def engine_problem(dep: Deployment, prof: EngineProfile, *, isl, osl, load, cache_hit=0.0,
                   shared_tokens=0.0, prompts=np.inf) -> EngineProblem:
    """The engine on ``dep`` under ``prof`` at each point of ``load`` (users or requests/s) as solve's inputs
    (``cache_hit``, ``shared_tokens``: steady's Prefix; ``prompts``: an open loop's finite run, Points.prompts)."""
    load = np.atleast_1d(np.asarray(load, float))
    isl, osl = (np.broadcast_to(np.asarray(x, float), load.shape) for x in (isl, osl))
    I = prefill_tokens(isl, cache_hit)
    ctx, pctx = isl + osl / 2.0, prefill_context(isl, cache_hit, I)
    b_kv, kv_tok = kv_capacity(dep, prof, isl, osl, shared_tokens)
    step = StepTimer(dep, ctx, pctx, rank_chunk(dep, prof, I), load.shape)  # a chunk on one rank
    max_batch, _ = pooled_limits(prof, dep.layout, I, 0.0)
    cap = np.minimum(b_kv, max_batch)
    T, wait_tokens = batch_wait_of(prof, dep.layout)  # TensorRT-LLM's delayed batching (off by default)
    pts = Points(isl=isl, osl=osl, prefill=I, load=load, cap=cap, budget=pooled_limits(prof, dep.layout, I, cap)[1],
                 whole_prompts=not prof.chunked_prefill,
                 request_overhead_s=float(np.asarray(dep.eff.request_overhead_s)), poll_steps=poll_steps(prof),
                 batch_wait_iters=T, batch_wait_tokens=wait_tokens, prompts=prompts)
    return EngineProblem(step, pts, b_kv, kv_tok, float(shared_block_tokens(prof, shared_tokens)))


def _steady_of(dep: Deployment, pb: EngineProblem, s: Solved) -> Steady:
    """steady's answer from the engine's problem and what solve made of it: the rates, $ per token, KV occupancy
    and the busy shares of the mean step, NaN where the point does not fit."""
    b_kv, kv_tok, pts = pb.b_kv, pb.kv_tokens, pb.points
    isl, osl, load = pts.isl, pts.osl, pts.load
    X, out_tps = s.requests_per_s, s.requests_per_s * osl
    # each sequence's own blocks at the mean context, and a shared prefix once on every replica (kv_capacity)
    dp, shared = float(dep.layout.dp), pb.shared_tokens
    occupancy = (s.batch * (isl - shared + osl / 2.0) + (s.batch > 0) * shared * dp) / (kv_tok * dp)
    fits = (s.reason == 0) & (b_kv >= 1)
    nan = np.where(fits, 0.0, np.nan)
    q = s.queue_s
    mean_step = pb.step.terms(s.decodes, s.prefill_per_step)
    busy = [np.broadcast_to(u, load.shape) + nan for u in mean_step.busy_shares()]
    return Steady(batch=s.batch, b_kv=b_kv, decodes=s.decodes, prefill_per_step=s.prefill_per_step,
                  chunks=s.chunks, tpot_s=s.tpot_s + nan, ttft_s=s.ttft0_s + q + nan,
                  ttft_p50_s=s.ttft_p50_s + q + nan, ttft_p99_s=s.ttft_p99_s + q + nan, queue_s=q + nan,
                  chunk_step_s=s.chunk_step_s + nan, e2e_s=s.lifetime_s + q + nan, requests_per_s=X + nan,
                  output_tokens_per_s=out_tps + nan, prefill_share=s.prefill_share,
                  # the chip-seconds split by step time: the prefill share pays for the input tokens
                  usd_per_mtok_input=usd_per_mtok(s.prefill_share, X * isl, dep.chips, dep.price) + nan,
                  usd_per_mtok_output=usd_per_mtok(1.0 - s.prefill_share, out_tps, dep.chips, dep.price) + nan,
                  kv_occupancy=occupancy + nan, capacity_limited=s.demand_limited | s.over_budget,
                  bound=s.bound, fits=fits, busy_compute=busy[0], busy_hbm=busy[1], busy_link=busy[2],
                  wait_steps=np.broadcast_to(s.wait_steps, load.shape) + nan)


def bound_name(i) -> str:
    return engine.BOUNDS[int(i)]
