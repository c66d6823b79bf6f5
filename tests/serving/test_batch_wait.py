"""TensorRT-LLM's delayed batching (batch_wait_timeout_iters T, batch_wait_max_tokens_ratio ρ_w): while others
decode, new prompts are held until T iterations pass or they fill ρ_w of the step budget; a later request of a
closed loop waits W decode steps on average (serving.batch_wait.batch_wait_steps), checked here by hand and
against a step-by-step replay of the engine's counter."""

from dataclasses import replace

import numpy as np
import pytest

from tokenomy.catalog import loader
from tokenomy.serving.scheduler import batch_wait_steps, profile_of

TRT = profile_of(loader.engine_file("trtllm"), 8)


def test_off_by_default_and_when_either_setting_is_zero():
    assert TRT.batch_wait_iters == 0 and TRT.batch_wait_tokens_ratio == 0.0
    for T, ratio in ((0, 0.8), (40, 0.0), (0, 0.0)):
        p = replace(TRT, batch_wait_iters=T, batch_wait_tokens_ratio=ratio)
        assert np.all(batch_wait_steps(p, np.array([4.0, 64.0]), 922.0, 922.0) == 0.0)


def test_the_two_limits_by_hand():
    """Only the timeout can close the window (prompts too short to fill it): W = (T + a·T·T/2)/(1 + a·T), the first
    prompt waiting T and the a·T after it T/2 on average; only the tokens can (T far away): the (k − 1)-th prompt
    after the first closes it at S, mean (k − 1)/a, and the k held wait S·k/2 together: W = (k − 1)/(2a)."""
    timeout_only = replace(TRT, batch_wait_iters=40, batch_wait_tokens_ratio=0.8)  # 1-token prompts: k ~ 6,500
    a = 64.0 / 922.0
    assert batch_wait_steps(timeout_only, 64.0, 1.0, 922.0) == pytest.approx(
        (40.0 + a * 40.0 * 20.0) / (1.0 + a * 40.0), rel=1e-9)
    tokens_only = replace(TRT, batch_wait_iters=100_000, batch_wait_tokens_ratio=0.5)  # 4,096 tokens
    C, I, O = 32.0, 2000.0, 100.0
    k = np.ceil((4096.0 - (C - 1.0)) / I)  # 3 prompts
    assert batch_wait_steps(tokens_only, C, I, O) == pytest.approx((k - 1.0) / (2.0 * C / O), rel=1e-9)
    # one client: no decodes while its prompt waits, the engine takes it at once
    assert batch_wait_steps(timeout_only, 1.0, 922.0, 922.0) == 0.0


def _replay(T, ratio, N, I, C, O, steps=200_000, seed=7):
    """Prompts arriving at random (Poisson, a = C/O a step) against PyExecutor._waiting_requests' rule: each step
    with held prompts either releases them (counter >= T, or their tokens and the C − 1 decodes >= ρ_w·N) or
    advances the counter; the mean wait in steps."""
    arrivals = np.random.default_rng(seed).poisson(C / O, steps)
    held, count, waits = [], 0, []
    for step, n in enumerate(arrivals):
        held += [step] * int(n)
        if not held:
            continue
        if count >= T or len(held) * I + (C - 1) >= ratio * N:
            waits += [step - s for s in held]
            held, count = [], 0
        else:
            count += 1
    return float(np.mean(waits))


@pytest.mark.parametrize("clients", [16.0, 64.0, 128.0, 512.0])
def test_the_mean_wait_matches_a_replay_of_the_engines_counter(clients):
    """InferenceX's recipe (dsr1_fp8_b200_trt.sh: T = 40, ρ_w = 0.8 of 8,192 tokens, 922-token prompts and outputs),
    where the timeout, the tokens or both close the window."""
    p = replace(TRT, batch_wait_iters=40, batch_wait_tokens_ratio=0.8)
    W = float(batch_wait_steps(p, clients, 922.0, 922.0))
    assert W == pytest.approx(_replay(40, 0.8, 8192, 922.0, clients, 922.0), rel=0.06)
