"""TensorRT-LLM's delayed batching in the analytic models: the decode steps it holds a new prompt.

    batch_wait_of     (T, ρ_w·N_tok) of a profile on a layout, or (0, 0) where it is off
    held_steps        the mean hold of a prompt (renewal reward over Poisson arrivals): steady_solve.solve charges
                      it at its solved batch, closed loop and open
    batch_wait_steps  the same for a closed loop of U clients (validation's delayed-batching rows, the tests)
The simulator runs the engine's counter itself: batch_wait_gate.py.
"""

from __future__ import annotations

import math

import numpy as np

from tokenomy.serving.engine_profile import EngineProfile, scheduler_ranks


def batch_wait_steps(prof: EngineProfile, clients, prefill, osl):
    """W: the decode steps a later request of a closed loop of U clients waits under TensorRT-LLM's delayed batching
    (``held_steps``), its prompts of I = ``prefill`` tokens arriving a = U/O a decode step (each client's request
    lives ~O steps) beside the U − 1 other clients' decodes; 0 where U <= 1 (no decodes: the engine takes the prompt
    at once). InferenceX's DeepSeek-R1 FP8 on 8 x B200 (TensorRT-LLM 1.3.0rc14, T = 40, ρ_w = 0.8, N_tok = 8192,
    922-token prompts): W = 25 steps at 64 clients, 19 at 128; the catalog case measures TTFT 569 and 592 ms against
    ~130 and ~210 ms without it. (serving.steady_solve.solve charges the same wait at its solved batch.)"""
    U, I, O = np.broadcast_arrays(*(np.asarray(x, float) for x in (clients, prefill, osl)))
    T, tokens = batch_wait_of(prof)
    held = held_steps(T, tokens, U / np.maximum(O, 1.0), np.maximum(U - 1.0, 0.0), I)
    return np.where(U > 1.0, held, 0.0)


def batch_wait_of(prof: EngineProfile, layout=None) -> tuple[float, float]:
    """(T, ρ_w·N_tok): the iterations and the tokens TensorRT-LLM's delayed batching waits for (``held_steps``), or
    (0, 0) where it is off: either setting 0 (its default), or attention-DP on ``layout`` (PyExecutor._schedule
    waits only ``if not self.enable_attention_dp``; ``scheduler_ranks`` above dp)."""
    T, ratio = float(prof.batch_wait_iters), float(prof.batch_wait_tokens_ratio)
    attn_dp = layout is not None and np.any(np.asarray(scheduler_ranks(layout)) > np.asarray(layout.dp))
    if T <= 0.0 or ratio <= 0.0 or attn_dp:
        return 0.0, 0.0
    return T, ratio * float(prof.max_num_tokens)


def held_steps(wait_iters, wait_tokens, arrivals_per_step, decodes, prompt_tokens):
    """W: the mean decode steps a prompt is held by TensorRT-LLM's delayed batching (PyTorch backend,
    github.com/NVIDIA/TensorRT-LLM tensorrt_llm/_torch/pyexecutor/py_executor.py at 9521caf4696c, PyExecutor._schedule
    and _waiting_requests): while generation requests run, the scheduled context requests are held and a counter
    advances once an iteration until it reaches T = ``wait_iters`` or the held prompts' tokens plus one per running
    generation request (n = ``decodes``) reach ``wait_tokens`` = ρ_w·N_tok (batch_wait_max_tokens_ratio x
    max_num_tokens); all are then released together and the counter restarts. Prompts of I = ``prompt_tokens`` tokens
    (the whole prompt: len(get_tokens(0))) arrive at random, a = ``arrivals_per_step`` a decode step;
    k = max(ceil((ρ_w·N_tok − n)/I), 1) prompts fill the window the first opens. With N ~ Poisson(a·T) arrivals after
    the first within T steps: the timeout closes it (N <= k − 2) after T steps holding 1 + N prompts, the first
    waiting T, the others T/2 on average; else the (k − 1)-th arrival closes it at t_k ~ Gamma(k − 1, a) holding k
    prompts that wait t_k·k/2 together, E[t_k; t_k <= T] = (k − 1)/a·P(N >= k). Per request (renewal reward):
        W = (Σ_{n<=k−2} p_n·(T + n·T/2) + (k − 1)/a·P(N >= k)·k/2) / (Σ_{n<=k−2} p_n·(1 + n) + k·P(N >= k − 1)).
    0 where T or ρ_w·N_tok is 0 (the engine's test passes at once: nothing waits, its default). Exact for Poisson
    arrivals on steps of one length; a closed loop's arrivals are not Poisson: checked against the simulator running
    the engine's counter step by step (tests/serving/test_batch_wait_replay.py). The Poisson sums in closed form:
    Σ_{n<=m} p_n = F(m) and Σ_{n<=m} n·p_n = a·T·F(m − 1) (``_poisson_cdf``)."""
    T, thr, a, n_dec, I = np.broadcast_arrays(*(np.asarray(x, float) for x in (
        wait_iters, wait_tokens, arrivals_per_step, decodes, prompt_tokens)))
    on = (T > 0.0) & (thr > 0.0)
    if not np.any(on):
        return np.zeros(T.shape)
    a = np.maximum(a, 1e-12)
    k = np.where(on, np.maximum(np.ceil((thr - n_dec) / np.maximum(I, 1.0)), 1.0), 1.0)
    lam = np.maximum(a * T, 1e-300)
    F1, F2, F3 = (_poisson_cdf(k - j, lam) for j in (1.0, 2.0, 3.0))  # P(N <= k − 1), P(N <= k − 2), P(N <= k − 3)
    waits = T * F2 + T / 2.0 * lam * F3 + (k - 1.0) / a * (1.0 - F1) * k / 2.0
    held = F2 + lam * F3 + k * (1.0 - F2)
    return np.where(on, waits / held, 0.0)


TAIL_SIGMAS = 12.0  # Poisson mass beyond λ ± (12·√λ + 30) is below 1e-30: the sums skip it
CELLS = 1 << 22  # terms summed at once (points x window), so a far window (a huge budget, 1-token prompts) stays small


def _poisson_cdf(m, lam) -> np.ndarray:
    """F(m) = P(N <= m), N ~ Poisson(λ), elementwise: 0 below the window λ ± (TAIL_SIGMAS·√λ + 30) (and for m < 0),
    1 above it, inside the pmf summed from the window's foot, log p(n + 1) = log p(n) + log λ − log(n + 1)."""
    m, lam = (np.asarray(x, float).copy() for x in np.broadcast_arrays(np.asarray(m, float), np.asarray(lam, float)))
    half = TAIL_SIGMAS * np.sqrt(lam) + 30.0
    foot = np.maximum(np.floor(lam - half), 0.0)
    out = np.where(m < foot, 0.0, 1.0)
    idx = np.flatnonzero((m >= foot) & (m < lam + half))
    if not idx.size:
        return out
    width = int(np.max(m.flat[idx] - foot.flat[idx])) + 1
    flat = out.reshape(-1)
    for part in np.array_split(idx, idx.size * width // CELLS + 1):
        lo, top, L = foot.flat[part], m.flat[part], lam.flat[part]
        log_lo = -L + lo * np.log(L) - np.array([math.lgamma(x + 1.0) for x in lo])  # log p(foot)
        i = np.arange(width, dtype=float)[:, None]
        steps = np.where(i > 0, np.log(L) - np.log(np.maximum(lo + i, 1.0)), 0.0)
        logp = log_lo + np.cumsum(steps, axis=0)
        flat[part] = np.minimum(np.sum(np.where(lo + i <= top, np.exp(logp), 0.0), axis=0), 1.0)
    return out
