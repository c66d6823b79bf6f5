"""The steps a workload point's requests see at B running sequences, from a step-time function alone: the mean step
(``mean_step``: a prompt's chunks, the steps a request holds its slot, the decodes B_d and prefill tokens P of the
mean step) and its times (``step_times``: TPOT over the steps with and without a prefill chunk, the rest of the step
an arrival lands in, and a request's prefill up to its first token, closed loop or open). serving/steady_solve.py's
``solve`` and its open loop's fixed point run them; the equations are in its module docstring."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from tokenomy.serving.engine_profile import prompt_slot
from tokenomy.serving.prefill_queue import closed_loop_prompt, full_chunk_queue_s, gated_residual_s, spill_share

if TYPE_CHECKING:
    from tokenomy.serving.steady_solve import Points


class MeanStep(NamedTuple):
    """A point's mean step (module docstring): the chunks of a prompt, the steps a request holds its slot, the
    decodes B_d and prefill tokens P of the mean step."""

    chunks: object
    life: object
    decodes: object
    prefill: object


def mean_step(B, osl, I, budget, closed=False) -> MeanStep:
    """(chunks, life, B_d, P) of the module docstring. A prompt's chunks take the room beside the decodes running
    with it, at most B of them, B − 1 in a closed loop (the other clients: a lone client's 8192-token prompt is one
    chunk under an 8192-token budget)."""
    beside = np.maximum(B - 1.0, 0.0) if closed else B
    chunks = np.ceil(I / np.maximum(budget - beside, 1.0))
    life = chunks + osl - 1.0
    B_d = B * (osl - 1.0) / life
    P = np.minimum(B * I / life, np.maximum(budget - B_d, 0.0))
    return MeanStep(chunks, life, B_d, P)


def arrival_share(rate, chunks, osl, plain_s, heavy_s):
    """Open loop: the share f_d of the steps a request decodes in that carry another's prompt chunk, from the
    arrival rate λ alone. Prompts that land during a step ride in the next (in-flight batching), one chunk a step,
    so the n = OSL − 1 decode steps of a request carry the chunks of the prompts that came during its own c prefill
    steps and its first n − 1 decode steps: λ·c·(c·t_h + (n − 1)·TPOT) chunks, TPOT = t_0 + f_d·(t_h − t_0)
    (t_0 = ``plain_s``, t_h = ``heavy_s`` a step with a chunk). Solved for f_d:
        f_d = a·(c·t_h + (n − 1)·t_0) / (n − a·(t_h − t_0)·(n − 1)),   a = λ·c   (1 where the denominator is <= 0)
    (n -> inf: f_d = ρ·t_0/((1 − ρ)(t_h − t_0)), ρ = a·(t_h − t_0): the gated service of
    prefill_queue.gated_residual_s). The running batch's share B·c/life (step_times) is the same count with
    Little's law's B = λ·lifetime, but where the engine idles between requests (λ·lifetime < 1) B is held at the
    request itself, and that share charges a prompt every ``life`` steps however seldom they come: Llama-3.1-8B
    on one H200, 467/16 at 2 requests/s, a prefill in one step of 16 where about 1.3% carry one (TensorRT-LLM 0.14's
    online table: 5 ms ITL there). The iteration-level simulator, whose Poisson arrivals idle the engine, agrees
    (tests/serving/test_open_loop_idle_engine.py)."""
    a = np.asarray(rate, float) * np.asarray(chunks, float)
    n = np.maximum(np.asarray(osl, float) - 1.0, 1.0)
    t0, th = np.asarray(plain_s, float), np.asarray(heavy_s, float)
    den = n - a * np.maximum(th - t0, 0.0) * (n - 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = a * (np.asarray(chunks, float) * th + (n - 1.0) * t0) / den
    return np.where(den > 0.0, np.clip(f, 0.0, 1.0), 1.0)


def busy_share(rate, in_engine_s):
    """Open loop: the chance that a Poisson arrival finds the engine mid-step, 1 − exp(−λ·L), L = ``in_engine_s``
    the time a request holds the engine (its prefill and OSL − 1 decode steps). Each request stays L whatever the
    others do while the engine is far from full, so the requests in it are Poisson with mean λ·L (M/G/∞; by PASTA
    an arrival sees the time average) and the engine is empty with chance exp(−λ·L); an arrival then starts its
    prompt at once, with no rest of a step to wait for. Llama-3.1-8B on one H200, 467/16 at 2 requests/s:
    λ·L ≈ 0.2, so about four arrivals in five find it idle; the simulator's TTFT agrees (tests/serving/
    test_open_loop_idle_engine.py). λ·L >> 1: every arrival waits, the size-biased rest of the step (step_times)."""
    return -np.expm1(-np.asarray(rate, float) * np.asarray(in_engine_s, float))


@dataclass(frozen=True)
class StepTimes:
    """The steps of a point (arrays over points), all at its B_d decodes."""

    tpot_s: np.ndarray  # the mean step of a request's decode
    mean_s: np.ndarray  # the mean step over all steps (a request's own prefill chunks included)
    plain_s: np.ndarray  # a step without prefill
    bound: np.ndarray  # of a step with prefill
    reason: np.ndarray
    residual_s: np.ndarray  # the rest of the step an arrival lands in
    prefill_s: np.ndarray  # from a request's first prefill chunk to its first token
    last_chunk_s: np.ndarray  # the step of its last chunk
    served_prefill_s: object = None  # prefill_s less the open loop's wait behind full-room chunks (inf past capacity)
    prompt_scale: object = 1.0  # the mean step's prefill tokens P as the arrival rate brings them, over B·I/life's


def step_times(many, pts: Points, B, mean: MeanStep, prefill: bool = True, rate=None) -> StepTimes:
    """TPOT: a request holds its slot ``life`` steps, ``chunks`` of them carrying its prefill, so a share
    f = min(1, B·chunks/life) of all steps carry prefill — P/f tokens each — and the rest none. Its own chunks
    precede its first token, so in a closed loop the steps it decodes in carry the other B − 1 clients' chunks:
    (B − 1)·c chunks in every ``life`` steps, a share f_d = f·(B − 1)/B (an open loop's arrivals come at λ whether
    it runs or not: f_d = f); TPOT = f_d·t(B_d, P/f) + (1 − f_d)·t(B_d, 0) (8 users of 16k/256: 7 of the 8 prompts'
    chunks land in a request's decode). (A mean step t(B_d, P) would overstate it where t is concave in P, as a
    one-shot all-reduce that gives way to a two-shot makes it; the simulator sees the mix.)
    Residual: an arrival lands in a step chosen by its length (the inspection paradox), so the rest of that step
    is E[T²]/(2·E[T]) = [f·t_h² + (1 − f)·t_p²]/(2·E[T]), E[T] = f·t_h + (1 − f)·t_p the mean step, not TPOT/2;
    an open loop's prompts of one chunk: E[T²] as gated batch service makes it (prefill_queue.gated_residual_s: the
    prompts that arrived during a step share the next, so a long step makes the next long).
    Prefill (``prefill``; else zeros): c − 1 full chunks of the room the decodes beside it leave (N_tok − B_d; a
    closed loop's N_tok − B_d·(B − 1)/B, the other clients'), then the last r = I − (c − 1)·room tokens beside the
    prompts that share its step. Closed loop (clients arrive at step boundaries; a lone client shares with no one): the others'
    mean prefill P·(B − 1)/B up to the step's slot (the room, or for an engine that does not chunk floor(room/I)
    whole prompts, scheduler.prompt_slot: one 4096-token prompt ahead under an 8192-token budget holds the next a
    step even where the tokens would fit), then pushed back by the prompts ahead of it and filled by those behind
    (prefill_queue.closed_loop_prompt), each extra step t(B_d, 0) and each extra token the chord
    (t(B_d, room) − t(B_d, 0))/room, or for a prompt of one chunk the chord to the step it decodes beside,
    (t(B_d, L) − t(B_d, 0))/L at its load L = min(P/f, N_tok − B_d) (the step is near linear in its prefill tokens
    past a few hundred: 70B tp8, 64 decodes, 4.0e-5 s a token from 256 to 8128). Open loop at rate λ: those that landed
    in the same (size-biased) step, λ·I·E[T²]/E[T] tokens, that step taken 1 + P(spill) times (``spill_share``)
    after the wait behind full-room chunks (``full_chunk_queue_s``); the open loop times the last chunk at the
    room, whole-prompt engine or not (the simulator measured the trtllm profile 7% under it at 5000/128, 3 req/s).
    ``many``: the step function's (solve), ``mean``: the point's mean step at B running (mean_step)."""
    chunks, life, B_d, P = mean
    I, budget, whole_prompts = pts.prefill, pts.budget, pts.whole_prompts
    f = np.clip(B * chunks / np.maximum(life, 1.0), 1e-12, 1.0)
    # a closed loop's others are the B − 1 other clients; Poisson arrivals come at λ whether it runs or not
    others_share = np.maximum(B - 1.0, 0.0) / np.maximum(B, 1.0) if rate is None else 1.0
    f_d = f * others_share
    # the room a prompt's chunks take: beside the decodes running with it (a closed loop's: the other clients')
    room = np.maximum(budget - B_d * others_share, 1.0)
    r = I - (chunks - 1.0) * room
    closed_others = P * others_share
    closed = prefill and rate is None
    full = prefill and bool(np.any(chunks > 1))  # some prompts take full-room chunks before their last
    loads = [np.minimum(P / f, np.maximum(budget - B_d, 0.0)), np.zeros_like(P)] + ([room] if full else [])
    if closed:  # the closed loop's last-chunk step rides in the same engine call
        slot = prompt_slot(room, I, whole_prompts)  # what a step's prefill can take: the room, or whole prompts
        loads += [np.minimum(r + closed_others, slot)]
    out = many(B_d, loads)
    (heavy, bound, reason), plain = out[0], out[1][0]
    batch_share = f
    if rate is not None:  # Poisson prompts come at λ whether the engine is busy or idle (arrival_share)
        f = f_d = np.minimum(f, arrival_share(rate, chunks, pts.osl, plain, heavy))
    tpot = f_d * heavy + (1.0 - f_d) * plain
    mean = f * heavy + (1.0 - f) * plain
    residual = (f * heavy ** 2 + (1.0 - f) * plain ** 2) / (2.0 * np.maximum(mean, 1e-30))
    if prefill and rate is not None:  # open loop, one-chunk prompts: steps as batch service makes them
        prompt_s = (heavy - plain) * I / np.maximum(loads[0], 1.0)  # a prompt's share of a prefill step
        gated = gated_residual_s(plain, mean, prompt_s, rate)
        residual = np.where((chunks <= 1.0) & np.isfinite(gated), gated, residual)
    if not prefill:
        zero = np.zeros_like(tpot)
        return StepTimes(tpot, mean, plain, bound, reason, residual, zero, zero)
    t_full = out[2][0] if full else 0.0
    if closed:
        t_last = out[-1][0]
        pf = (chunks - 1.0) * t_full + t_last
        extra, tokens = closed_loop_prompt(closed_others / np.maximum(I, 1.0), I, slot, chunks, B - 1.0)
        counted = (chunks - 1.0) * room + np.minimum(r + closed_others, slot)  # the tokens pf already times
        # the step's seconds a prefill token: the chord to a full room where the prompt takes one, else to the
        # prefill step a request decodes beside (I/c tokens; per point, so a sweep's pieces agree)
        per_token = np.where(chunks > 1, (t_full - plain) / room, (heavy - plain) / np.maximum(loads[0], 1.0))
        pf = pf + extra * plain + per_token * (tokens - counted)
    else:  # the co-arrivals depend on the steps just timed: one more engine call
        others = np.minimum(rate * I * 2.0 * residual, room)
        t_last = many(B_d, [np.minimum(r + others, room)])[0][0]
        spill = spill_share(others / np.maximum(I, 1.0), I, r, room)
        served = (chunks - 1.0) * t_full + (1.0 + spill) * t_last
        pf = served + full_chunk_queue_s(rate, (chunks - 1.0) * t_full)
        residual = residual * busy_share(rate, served + (pts.osl - 1.0) * tpot)  # an idle engine starts it at once
        return StepTimes(tpot, mean, plain, bound, reason, residual, pf, t_last, served, f / batch_share)
    return StepTimes(tpot, mean, plain, bound, reason, residual, pf, t_last)
