"""The first wave: U prompts of I tokens queued at once on an idle engine, prefilled in prefill-only steps.

A benchmark at request rate inf (vllm bench serve, SGLang bench_serving, InferenceX, AIPerf, LLMPerf, trtllm-bench)
starts with every client's prompt due at t = 0; the engine admits them in order, a step at a time, and prompt j
(1-based) sees its first token after the step that finishes it:
    chunked prefill (vLLM, SGLang: steps of N_tok tokens)    steps(j) = ceil(j·I/N_tok)
    whole prompts (TensorRT-LLM without chunked context)     steps(j) = ceil(j/k), k = max(floor(N_tok/I), 1)
                                                             prompts a step packs (a prompt longer than the budget
                                                             runs alone: k = 1)
each step t_step = t(0, the tokens a full step carries): min(U·I, N_tok) chunked, min(U, k)·I whole. The mean over
the wave is Σ_j steps(j)/U steps: (S + 1)/2 for S chunked steps (the wave's tokens split evenly), and for whole
prompts with m = ceil(U/k) steps [k·(m − 1)·m/2 + (U − k·(m − 1))·m]/U — (U + 1)/2 when each step takes one prompt
(k = 1): 25 prompts of 5,000 tokens under an 8,192-token budget average 13 prefills, not the 8 that 125,000
tokens in 8,192-token chunks would give. Quantile q of the wave: steps(max(ceil(q·U), 1)).
The same staircase on a real engine: 16 x 1,200-token prompts submitted together reach ~1.27 s by request 15
under a 1,024-token budget (github.com/pegainfer-project/pegainfer/issues/744, "expected finite-capacity
queueing"). Used by serving.steady.solve (arrivals "together") and serving.protocol_waves.
"""

from __future__ import annotations

import numpy as np


def per_step(prefill, budget, whole_prompts):
    """Prompts a prefill-only step packs (whole prompts), else NaN (chunked: tokens, not prompts, fill a step)."""
    I = np.maximum(np.asarray(prefill, float), 1.0)
    return np.where(whole_prompts, np.maximum(np.floor(np.asarray(budget, float) / I), 1.0), np.nan)


def step_tokens(users, prefill, budget, whole_prompts):
    """Tokens a full step of the wave carries (module docstring)."""
    U, I, N = (np.asarray(x, float) for x in (users, prefill, budget))
    k = per_step(I, N, whole_prompts)
    return np.where(whole_prompts, np.minimum(U, np.nan_to_num(k, nan=1.0)) * I, np.minimum(U * I, N))


def steps_to(j, prefill, budget, whole_prompts):
    """Prefill-only steps until prompt j (1-based, at least 1) of the wave has its first token."""
    j = np.maximum(np.asarray(j, float), 1.0)
    I, N = np.maximum(np.asarray(prefill, float), 1.0), np.asarray(budget, float)
    k = np.nan_to_num(per_step(I, N, whole_prompts), nan=1.0)
    return np.where(whole_prompts, np.ceil(j / k), np.ceil(j * I / N))


def mean_steps(users, prefill, budget, whole_prompts):
    """Σ_j steps(j)/U over the wave's U prompts (module docstring's closed forms)."""
    U = np.maximum(np.asarray(users, float), 1.0)
    I, N = np.maximum(np.asarray(prefill, float), 1.0), np.asarray(budget, float)
    S = np.ceil(U * I / N)
    chunked = np.where(S <= 1.0, 1.0, (S + 1.0) / 2.0)
    k = np.nan_to_num(per_step(I, N, whole_prompts), nan=1.0)
    m = np.ceil(U / k)
    whole = (k * (m - 1.0) * m / 2.0 + (U - k * (m - 1.0)) * m) / U
    return np.where(whole_prompts, whole, chunked)


def quantile_steps(q, users, prefill, budget, whole_prompts):
    """Steps until the wave's quantile-q prompt (module docstring)."""
    U = np.maximum(np.asarray(users, float), 1.0)
    return steps_to(np.maximum(np.ceil(np.asarray(q, float) * U), 1.0), prefill, budget, whole_prompts)
