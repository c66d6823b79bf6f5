"""The running batch of a finite open loop: N prompts sent at λ requests/s, then nothing more.

The steady state of an open loop (steady_solve._littles_law) holds B = λ·L requests in the engine, L the time one
spends there, and past the engine's capacity a queue that grows without bound. A benchmark run sends N prompts and
stops: the engine never holds more than N, and a run whose arrival window T_a = N/λ is shorter than L never reaches
the steady state at all (TensorRT-LLM 0.14's online table: 500 requests; at QPS 32 on Llama-3.1-70B TP4 the window
is 15.6 s and a 467/256 request lives ~21 s, so every request is in the engine before the first one leaves; the
steady state's answer, 1,715 running on H200, is 3.4x the prompts sent).

Fluid model (arrivals evenly spread over [0, T_a], each request in the engine for L): the number in the engine
n(s) = λ·min(s, T_a) − λ·clip(s − L, 0, T_a) is a trapezoid that rises for a = min(T_a, L), holds λ·a for
b − a (b = max(T_a, L)) and falls for a. A request's decode steps see n over its own life; averaged over the
requests (each instant weighted by the n(s) requests living then):

    B = ∫ n(s)² ds / ∫ n(s) ds = λ·a·(1 − a/(3·b))          (∫ n = N·L;  ∫ n² = (λ·a)²·(b − a/3))

T_a -> inf gives the steady state's λ·L; L >> T_a gives N·(1 − T_a/(3L)) <= N (all N at once: N). The time per
output token of a step nearly linear in B is then t(B) at this mean. Requests/s stays the offered λ (the cases that
use this report TPOT and TTFT only: the finite run's span, ramp and drain included, is protocol_run's simulation).
Checked against that simulation (tests/serving/test_finite_run.py): TPOT 1.13-1.18x the simulated run's where the
steady state gives 1.6-4.4x. Not modelled: a finite queue. Where even this mean exceeds the running batch's cap the
solve still answers capacity-limited, its queue unbounded; and a run whose prompts arrive about as fast as the engine
prefills them (TensorRT-LLM 0.14, Llama-3.1-70B TP4, 467/16 at QPS 32: ITL 482 ms, every step a full prompt
budget) runs full steps that the mean's step composition does not give.
"""

from __future__ import annotations

import numpy as np


def finite_occupancy(rate_per_s, prompts, lifetime_s):
    """B = λ·a·(1 − a/(3b)), a = min(N/λ, L), b = max(N/λ, L) (module docstring): the requests in the engine as the
    mean request sees them, over a run of ``prompts`` N (inf: the steady state's λ·L) at ``rate_per_s`` λ, each
    request ``lifetime_s`` L in the engine. Arrays broadcast."""
    lam, N, L = (np.asarray(x, float) for x in (rate_per_s, prompts, lifetime_s))
    with np.errstate(invalid="ignore", divide="ignore"):
        window = N / lam
        a, b = np.minimum(window, L), np.maximum(window, L)
        finite = lam * a * (1.0 - a / (3.0 * b))
    return np.where(np.isfinite(N), finite, lam * L)
