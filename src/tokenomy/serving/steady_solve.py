"""The steady state of aggregated continuous batching from a step-time function alone, vectorised over workload
points: ``solve`` (no Deployment; serving.steady runs it on the pass engine, validation on its cases' prepared work);
the steps a point's requests see at its running batch: serving/steady_steps.py.

Per point (means of the length distributions; I = ceil(ISL·(1−F)) prefill tokens computed per request, N_tok
the token budget, t(B_d, P) one step of B_d decodes at context ISL + OSL/2 plus P prefill tokens,
scheduler.step_time; the letters are docs/notation.md's serving ones: U users, C stays the context):
    B       = min(U, B_kv, max_batch, B_N)                  running sequences (closed loop: U users); B_N the most the
                                                           token budget sustains (scheduler.budget_batch); max_batch
                                                           and N_tok pooled over the schedulers (pooled_limits)
    chunks  = ceil(I / (N_tok − B_d')), life = chunks + OSL − 1   steps a request holds its slot; B_d' the
                                                           decodes beside its prompt (at most B; B − 1 in a closed
                                                           loop)
    B_d     = B·(OSL − 1)/life,   P = B·I/life               decodes and prefill tokens of a mean step (open
                                                           loop: P·min(f, f_R)/f, the prompts as they come: TPOT below)
    TPOT    = f_d·t(B_d, P/f) + (1 − f_d)·t(B_d, 0)       f = min(1, B·chunks/life): the share of steps carrying a
                                                           prefill chunk; f_d = f·(B − 1)/B in a closed loop (a
                                                           request's own chunks precede its first token); open:
                                                           f = f_d = min(f, f_R), f_R the share the arrival rate
                                                           brings (steady_steps.arrival_share: B is held at 1 where
                                                           the engine idles between requests, f_R is not)
    TTFT    = queue + wait + (c − 1)·t(B_d, room) + t(B_d, min(r + P·(B − 1)/B, slot)) + push + o_req
              c = chunks, the first c − 1 full (room = N_tok − B_d, a closed loop's N_tok − B_d·(B − 1)/B: the
              budget the decodes beside it leave), the last r = I − (c − 1)·room tokens sharing its step with the
              other requests' mean prefill up to the step's slot (the room, or whole prompts: scheduler.prompt_slot;
              the open loop times it at the room); o_req the request overhead around the
              engine (Efficiency.request_overhead_s). push, closed loop: the prompts ahead push it back E[k] − c
              steps and those behind fill its last step (prefill_queue.closed_loop_prompt; an engine that does
              not chunk packs floor(room/I) whole prompts a step). Checked against the iteration-level simulator
              (tests/serving/test_serve_steady_and_sim.py: 1k-16k-token prompts, chunked and whole-prompt)
              wait: a scheduler that receives new requests every r_recv-th decode step (SGLang
              --scheduler-recv-interval r_recv) adds (r_recv − 1)/2 plain decode steps (scheduler.poll_steps) where
              others decode as it lands (closed loop: min(1, B − 1); open: min(1, B) by PASTA), and the steps
              TensorRT-LLM's delayed batching holds its prompt (batch_wait.held_steps, batch_wait_*); plus
              for open-loop arrivals the rest of the step under way, E[T²]/(2·E[T]) (size-biased), times the
              chance 1 − exp(−λ·L) that the engine is mid-step (steady_steps.busy_share), and
              the last chunk shares its step with the prompts that landed in the same step, spills past the
              room and queues behind full-room chunks (steady_steps.step_times); 0 for a closed loop (a client's next
              request lands at a step boundary); "together": all U prompts in the first steps, request j
              done after ceil(j·I/N_tok) prefill-only steps (whole prompts: ceil(j/k), k = floor(N_tok/I)
              a step), TTFT the mean of that (serving.first_wave)
    queue   = (U − B)·lifetime/B when U > B (closed loop, Little's law); open loop: B = λ·lifetime, its smallest root
              by bracketed secant steps (_littles_law), capacity-limited (queue grows without bound) when λ·lifetime > B_cap;
              a finite run of N prompts (Points.prompts) holds the trapezoid's request-weighted mean instead,
              λ·a·(1 − a/(3b)), a = min(N/λ, lifetime), b = max(N/λ, lifetime) (serving/finite_run.py)
    X       = B / lifetime requests/s,  lifetime = TTFT − queue + (OSL − 1)·TPOT
    $       chips·$/chip-s split by time: the prefill share of the mean step (E[t] − t(B_d, 0))/E[t] to the input
            tokens
capacity_limited when demand exceeds B_kv or max_batch, or the step's tokens B_d + P exceed the budget.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from tokenomy.serving import first_wave
from tokenomy.serving.batch_wait import held_steps
from tokenomy.serving.engine_profile import budget_batch, poll_wait_s
from tokenomy.serving.finite_run import finite_occupancy
from tokenomy.serving.steady_steps import mean_step, step_times

OPEN_LOOP_ITERATIONS = 60  # at most; the secant steps converge in a few
OPEN_LOOP_RTOL = 1e-10  # the running batch's convergence: a point's answer is the same alone or in a sweep to
# ~1e-9 (tests/serving/test_steady_reference.py); bracketed points that bisect take ~16 steps to it


@dataclass(frozen=True)
class Points:
    """Workload points as ``solve`` takes them, arrays over the points (or numbers, broadcasting): the mean ISL and
    OSL, I = ``prefill`` the prompt tokens computed per request, the ``load`` (users U in a closed loop, requests/s R
    in an open one), ``cap`` = min(B_kv, max_batch), N_tok = ``budget`` the tokens a step carries, ``whole_prompts``
    where the engine does not chunk prefill (a step takes whole prompts only: scheduler.prompt_slot) and o_req =
    ``request_overhead_s`` (tokenisation, HTTP and detokenisation around the engine) added to TTFT."""

    isl: object
    osl: object
    prefill: object
    load: object
    cap: object
    budget: object
    whole_prompts: object = False
    request_overhead_s: object = 0.0
    poll_steps: object = 0.0  # decode steps a new request waits for the scheduler's next receive (scheduler.poll_steps)
    # TensorRT-LLM's delayed batching: the iterations T and the tokens ρ_w·N_tok it holds new prompts for while
    # others decode (batch_wait.batch_wait_of; 0: off)
    batch_wait_iters: object = 0.0
    batch_wait_tokens: object = 0.0
    prompts: object = np.inf  # an open loop's prompts sent, then no more (a finite run: serving.finite_run); inf steady


@dataclass(frozen=True)
class Solved:
    """The scheduler's steady state from a step-time function alone (no Deployment): what ``solve`` returns."""

    batch: np.ndarray
    decodes: np.ndarray
    prefill_per_step: np.ndarray
    chunks: np.ndarray
    tpot_s: np.ndarray
    plain_step_s: np.ndarray  # the same decodes without prefill
    chunk_step_s: np.ndarray
    ttft0_s: np.ndarray  # time to first token without the queue (mean, p50, p99)
    ttft_p50_s: np.ndarray
    ttft_p99_s: np.ndarray
    lifetime_s: np.ndarray
    queue_s: np.ndarray
    demand_limited: np.ndarray
    over_budget: np.ndarray
    requests_per_s: np.ndarray
    prefill_share: np.ndarray
    bound: np.ndarray
    reason: np.ndarray
    wait_steps: object = 0.0  # decode steps a later request waits before its prompt is scheduled (receive + held)


def _littles_law(many, pts: Points, cap):
    """The running batch of an open loop: the smallest root of B = g(B) = min(max(λ·L(B), 1), cap), L(B) the time a
    request spends in the engine with B running (the rest of the step it lands in, its prefill, OSL − 1 decode
    steps). Plain iteration from B = 1 climbs to it but crawls near saturation (λ·L'(B) -> 1: 200 steps at 3% under capacity),
    so each step is the secant's fixed point through the last two (B, g(B)) — below the root while g is convex,
    the chord lying under g past its last point — kept inside the bracket [lo, hi] of points known below
    (g >= B) and above (g < B) the root, bisected when the secant leaves it. ``cap``: the running batch's cap with
    the token budget's (solve)."""
    load, osl = pts.load, pts.osl

    def g(B_o):
        st = step_times(many, pts, B_o, mean_step(B_o, osl, pts.prefill, pts.budget), rate=load)
        lifetime = st.residual_s + st.prefill_s + (osl - 1.0) * st.tpot_s
        return np.minimum(np.maximum(finite_occupancy(load, pts.prompts, lifetime), 1.0), cap)

    lo = np.minimum(np.ones_like(load), cap)
    hi = np.full_like(lo, np.inf)
    x_prev, g_prev = lo, g(lo)
    x = g_prev
    for _ in range(OPEN_LOOP_ITERATIONS):
        gx = g(x)
        if np.allclose(gx, x, rtol=OPEN_LOOP_RTOL, atol=0.0, equal_nan=True):
            return gx
        below = gx >= x
        lo, hi = np.where(below, np.maximum(lo, x), lo), np.where(below, hi, np.minimum(hi, x))
        with np.errstate(invalid="ignore", divide="ignore"):
            slope = (gx - g_prev) / (x - x_prev)
            secant = x + (gx - x) / (1.0 - slope)
        nxt = np.where(np.isfinite(secant) & (slope < 1.0), secant, gx)
        inside = (nxt > lo) & (nxt < hi)
        nxt = np.where(inside, nxt, np.where(np.isfinite(hi), (lo + hi) / 2.0, gx))
        x_prev, g_prev, x = x, gx, np.clip(nxt, 1.0, cap)
    return g(x)


def solve(step, pts: Points, *, closed: bool, arrivals="staggered") -> Solved:
    """The module docstring's equations for any step-time function ``step.many(B_d, loads) -> [(seconds, bound,
    reason) at P for P in loads]`` (B_d decodes at the point's mean context plus P prefill tokens, arrays over
    points; several loads in one call, the decodes' terms formed once): ``steady`` passes the engine on a Deployment
    (scheduler.StepTimer), validation the engine on each case's prepared work; a plain ``step(B_d, P)`` is called
    once a load. ``pts``: the workload points (Points)."""
    many = getattr(step, "many", None) or (lambda B_d, loads: [step(B_d, P) for P in loads])
    pts = replace(pts, budget=np.asarray(pts.budget, float))
    I, osl, load, budget, request_overhead_s = pts.prefill, pts.osl, pts.load, pts.budget, pts.request_overhead_s
    cap = budget_batch(pts.cap, osl, I, budget, pts.whole_prompts)  # the token budget, too, caps the running batch
    if closed:
        B = np.minimum(load, cap)
    else:
        B = _littles_law(many, pts, cap)
    mean = mean_step(B, osl, I, budget, closed)
    chunks, life, B_d, P = mean
    together = closed and arrivals == "together"
    if together:  # U prompts at once: prefill-only steps, then U decodes per step
        B_d, P = B, np.zeros_like(B)
        mean = mean._replace(decodes=B_d, prefill=P)
    st = step_times(many, pts, B, mean, prefill=not together, rate=None if closed else load)
    tpot, t_plain, bound, reason, pf, t_chunk = (st.tpot_s, st.plain_s, st.bound, st.reason, st.prefill_s,
                                                 st.last_chunk_s)
    P = P * st.prompt_scale  # an open loop's prompts as they come (steady_steps.arrival_share)
    if together:  # the first wave's staircase (serving.first_wave: whole prompts k a step, or chunks of N_tok)
        whole = pts.whole_prompts
        t_chunk = many(np.zeros_like(B), [first_wave.step_tokens(B, I, budget, whole)])[0][0]
        steps = lambda q: first_wave.quantile_steps(q, B, I, budget, whole)  # noqa: E731
        ttft0 = first_wave.mean_steps(B, I, budget, whole) * t_chunk
        p50, p99 = steps(0.5) * t_chunk, steps(0.99) * t_chunk
        chunks = first_wave.steps_to(B, I, budget, whole)
    # the steps before its prompt is scheduled: the scheduler's next receive and delayed batching's hold
    # (batch_wait.held_steps: a = B/life arrivals a step beside the B − 1 other clients' decodes in a closed loop;
    # λ·t(B_d, 0) beside B by PASTA in an open one, Poisson there; the whole prompt's ISL tokens count)
    wait_steps = pts.poll_steps + held_steps(pts.batch_wait_iters, pts.batch_wait_tokens,
                                             B / life if closed else load * t_plain,
                                             np.maximum(B - 1.0, 0.0) if closed else B, pts.isl)
    if not together:
        # + those steps, where others decode when it lands (an idle engine receives and schedules at once)
        wait = (0.0 if closed else st.residual_s) + poll_wait_s(wait_steps, B, t_plain, closed)
        ttft0 = wait + pf
        p50 = p99 = ttft0
    in_engine = ttft0 + (osl - 1.0) * tpot  # Little's law counts the time inside the engine
    ttft0, p50, p99 = (x + request_overhead_s for x in (ttft0, p50, p99))
    lifetime = in_engine + request_overhead_s
    if closed:
        queue = np.where(load > B, (load - B) * lifetime / B, 0.0)
        demand = load > cap
    else:
        demand = finite_occupancy(load, pts.prompts, in_engine) > cap * (1.0 + 1e-9)
        queue = np.where(demand, np.inf, 0.0)
    over_budget = B_d + B * I / life > budget + 1e-9
    # past capacity the engine serves B per lifetime spent in it, the queue behind full chunks (unbounded) aside
    served = lifetime if st.served_prefill_s is None else\
        st.residual_s + st.served_prefill_s + (osl - 1.0) * tpot + request_overhead_s
    X = np.where(closed, B / lifetime, np.where(demand, B / served, load))
    share = np.clip(np.where(together, chunks * t_chunk / lifetime, (st.mean_s - t_plain) / st.mean_s), 0.0, 1.0)
    return Solved(B, B_d, P, chunks, tpot, t_plain, t_chunk, ttft0, p50, p99, lifetime, queue, demand, over_budget,
                  X, share, bound, reason, wait_steps)
