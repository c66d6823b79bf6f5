"""A closed-loop protocol run (burst or offline arrivals) in closed form: the first wave, then the waves after it.

Per point (arrays; B running sequences, I prompt tokens, O = OSL output tokens, N_tok the step budget, U clients,
n_req timed prompts, o_req the request overhead; ``stag`` and ``tog`` the steady state solved with staggered and
together arrivals, serving.steady.solve, on the same step function t(decodes, prefill tokens)):
    wave 1     U prompts at t = 0: tog's mean TTFT (request j first-tokens after ceil(j·I/N_tok) prefill-only
               steps, whole prompts ceil(j/floor(N_tok/I)): serving.first_wave) plus, for U > B, the wait of the U − B
               beyond the batch: (U − B)²/(2·B·U) lifetimes
    later      (each later request first waits p = (r_recv − 1)/2 decode steps for a scheduler that receives
               every r_recv-th step: steady.Points.poll_steps; the first wave lands on an idle engine, which receives at once)
               fixed lengths: the requests a step prefilled finish together and come back together, so the waves stay
               phase-locked in groups of g = the prompts a step takes beside the other groups' decodes (_groups):
               k = floor(B/g) full groups and a remainder r, G = k + [r > 0] groups: G = 1 (the whole wave in one
               step): every wave's TTFT = t(0, B·I) and TPOT = t(B, 0); else TTFT = [k·g·t(B − g, g·I) +
               r·t(B − r, r·I)]/B and TPOT = [(k − 1)·t(B − g, g·I) + t(B − r, r·I) + (O − G)·t(B, 0)]/(O − 1),
               the other groups' prefill steps inside a request's decode
               lengths that vary: the groups scatter within a wave or two and the run is the steady state (stag)
               past capacity (U > B) the steady state's queue (U − B)·lifetime/B is added to each later TTFT
    reported   TTFT = [U·wave-1 + (n_req − U)·later]/n_req (the tools' mean over every timed request); a tool that
               reports the median (LLMPerf's p50): the later waves' TTFT when they are at least half the requests,
               else wave 1's quantile (1/2 − f)/(1 − f), f = (n_req − U)/n_req the later share (the later requests, not
               queued, first-token sooner than the wave's); TPOT = later's;
               requests/s = n_req/duration, duration = n_req/X + the ramp (tog's TTFT − the later waves' without
               queue: the first wave's prefill-only start), X the later waves' rate (phase-locked: B per cycle of TTFT +
               (O − 1)·TPOT; else stag's); offline arrivals are one wave of U = n_req
Agreement with the simulator (serving.protocol_run; tests/serving/test_protocol_waves.py), checked within 10% on
TTFT, TPOT and throughput over the grid: Llama-3.1-8B on 1 x H100, engines trtllm (whole prompts) and vllm
(chunked), ISL/OSL 1024/128 and 1024/1024, U = 1, 4, 8, 16, 32, 64, protocols trtllm-bench (fixed lengths) and
inferencex (range ratio 0.8), 10 x U prompts. Outside it (U > 64, prompts of many chunks, U beyond the KV batch) it
is the validation's fast stand-in for the simulator, not checked against it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.serving import first_wave
from tokenomy.serving.engine_profile import poll_wait_s
from tokenomy.serving.steady import Solved


@dataclass(frozen=True)
class Waves:
    """The run's points (arrays): clients, timed prompts, prompt and output tokens, step budget, whole-prompt engine,
    fixed lengths (phase-locked waves), request overhead."""

    concurrency: np.ndarray
    prompts: np.ndarray
    prefill: np.ndarray
    osl: np.ndarray
    budget: np.ndarray
    whole_prompts: np.ndarray
    fixed: np.ndarray
    request_overhead_s: object = 0.0
    ttft_median: object = False  # where the tool reports the median TTFT, not the mean
    poll_steps: object = 0.0  # decode steps a later request waits before its prompt is scheduled (steady.Solved
    #                           wait_steps: the scheduler's next receive and delayed batching's hold)


@dataclass(frozen=True)
class WaveFigures:
    ttft_s: np.ndarray  # mean over the timed requests
    tpot_s: np.ndarray
    requests_per_s: np.ndarray


def wave_figures(step, w: Waves, stag: Solved, tog: Solved) -> WaveFigures:
    """The module docstring's figures; ``step.many(decodes, loads)`` -> [(seconds, ...)] as serving.steady.solve
    takes it."""
    U, n_req, I, O, N_tok = (np.asarray(x, float) for x in (w.concurrency, w.prompts, w.prefill, w.osl, w.budget))
    B, o_req = np.maximum(stag.batch, 1.0), w.request_overhead_s
    g, full, r = _groups(B, I, N_tok)
    G = np.minimum(full + (r > 0), O)
    heavy = step.many(np.maximum(B - g, 0.0), [np.minimum(g * I, N_tok)])[0][0]
    rest = step.many(np.maximum(B - r, 0.0), [np.minimum(r * I, N_tok)])[0][0]
    plain = step.many(B, [np.zeros_like(B)])[0][0]
    one_step = G <= 1.0
    group_ttft = (full * g * heavy + r * rest) / B  # each request's group, weighted by its size
    fixed = np.asarray(w.fixed, bool)
    # the scheduler's next receive (steady.solve: stag's TTFT holds it at its own plain step)
    poll = poll_wait_s(w.poll_steps, B, np.where(fixed, plain, stag.plain_step_s))
    locked_ttft = np.where(one_step, tog.chunk_step_s, group_ttft) + poll + o_req
    others = (full - 1.0) * heavy + np.where(r > 0, rest, 0.0)  # the other groups' prefill steps in its decode
    locked_tpot = np.where(one_step, plain, (others + (O - G) * plain) / np.maximum(O - 1.0, 1.0))
    later_ttft = np.where(fixed, locked_ttft, stag.ttft0_s) + stag.queue_s
    tpot = np.where(fixed, locked_tpot, stag.tpot_s)
    life = stag.lifetime_s
    first = tog.ttft0_s + np.maximum(U - B, 0.0) ** 2 / (2.0 * B * np.maximum(U, 1.0)) * life
    n_req = np.maximum(n_req, U)
    ttft = (U * first + (n_req - U) * later_ttft) / n_req
    ttft = np.where(w.ttft_median, _median_ttft(U, n_req, later_ttft, tog.chunk_step_s, w, o_req), ttft)
    X = np.where(fixed, B / (locked_ttft + (O - 1.0) * locked_tpot), stag.requests_per_s)
    # the first wave's prefill-only start, against the later waves' TTFT without the wait for a receive (a rate's
    # lifetime holds that wait already)
    ramp = np.maximum(tog.ttft0_s - (later_ttft - stag.queue_s - poll), 0.0)
    duration = n_req / X + ramp
    return WaveFigures(ttft, tpot, n_req / duration)


def _median_ttft(U, n_req, later, t_chunk, w: Waves, o_req):
    """The median over the run's n_req requests (module docstring, "reported"): the later waves' TTFT where they are
    at least half, else the first wave's quantile (1/2 − f)/(1 − f) on its staircase (serving.first_wave)."""
    f = (n_req - U) / n_req
    q = np.clip((0.5 - f) / np.maximum(1.0 - f, 1e-12), 0.0, 1.0)
    wave = first_wave.quantile_steps(q, U, w.prefill, w.budget, w.whole_prompts) * t_chunk + o_req
    return np.where(f >= 0.5, later, np.maximum(wave, later))


def _groups(B, I, N_tok):
    """(g, full groups, remainder) of a phase-locked wave of B prompts of I tokens: a step beside the other groups'
    B − g decodes takes g = floor((N_tok − (B − g0))/I) prompts, g0 = floor(N_tok/I) (8 prompts of 1,024 fill an
    8,192-token step alone; beside 8 decodes 7 fit: 16 clients settle into groups of 7, 7 and 2), at least one."""
    per = np.maximum(I, 1.0)
    g0 = np.minimum(B, np.maximum(np.floor(N_tok / per), 1.0))
    g = np.minimum(B, np.maximum(np.floor((N_tok - np.maximum(B - g0, 0.0)) / per), 1.0))
    full = np.floor(B / g)
    return g, full, B - full * g


def estimate(dep, prof, p, isl: int, osl: int, concurrency, prompts=None, *, as_means: bool = False) -> WaveFigures:
    """The module docstring's figures for protocol ``p`` (burst or offline arrivals) on one replica of ``dep``
    under engine profile ``prof``: U clients (an array of points), the protocol's prompt count (or ``prompts``),
    its length draws' means (``as_means``: ``isl``/``osl`` are those means already, as validation cases state
    them), phase-locked where it draws fixed lengths."""
    from tokenomy.serving.steady import engine_problem, solve

    U = np.atleast_1d(np.asarray(concurrency, float))
    li, lo = p.lengths(isl, output=False), p.lengths(osl, output=True)
    pb = engine_problem(dep, prof, isl=isl if as_means else li.mean, osl=osl if as_means else lo.mean, load=U)
    stag, tog = (solve(pb.step, pb.points, closed=True, arrivals=a) for a in ("staggered", "together"))
    n_req = np.array([p.prompt_count(u, None, prompts) for u in U], float)
    pts = pb.points
    w = Waves(U, n_req, pts.prefill, pts.osl, pts.budget, np.full(U.shape, pts.whole_prompts),
              np.full(U.shape, li.kind == "fixed" and lo.kind == "fixed"), pts.request_overhead_s,
              np.full(U.shape, p.ttft_statistic == "median"), stag.wait_steps)
    return wave_figures(pb.step, w, stag, tog)
