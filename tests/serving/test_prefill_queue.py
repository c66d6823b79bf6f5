"""The closed loop's prompt queue (serving/prefill_queue.py): Poisson tails, the steps a prompt is pushed back by
those ahead of it and the tokens its steps process, checked against sums written out here term by term."""

import math

import numpy as np
import pytest

from tokenomy.serving.prefill_queue import NEGLIGIBLE, capped_poisson_sum, closed_loop_prompt, poisson_tail
from tokenomy.serving.scheduler import budget_batch, prompt_slot


def _tail(mu, k):
    return 1.0 - sum(math.exp(-mu) * mu ** j / math.factorial(j) for j in range(int(k)))


@pytest.mark.parametrize("mu,k", [(0.3, 1), (0.3, 3), (2.5, 4), (12.0, 9), (0.0, 1), (1.0, 0)])
def test_poisson_tail_is_the_sum_of_the_pmf(mu, k):
    assert float(poisson_tail(mu, k)) == pytest.approx(_tail(mu, k) if k > 0 else 1.0, abs=1e-12)


def test_nobody_else_no_push_and_only_its_own_tokens():
    extra, tokens = closed_loop_prompt(0.0, 4096.0, 8128.0, 1.0, 0.0)
    assert float(extra) == 0.0 and float(tokens) == 4096.0


def test_one_chunk_prompt_pushed_by_whole_prompts_ahead():
    """4096-token prompts under an 8128-token room, λ = 0.5 others a boundary: μ = λ/2 + ρ²/(2(1 − ρ)) ahead,
    ρ = λ·I/room; the m-th extra step needs k_m = floor(((m − 1)·room + room − I)/I) + 1 = 1, 3, 5, 7, 9, 11 ahead."""
    lam, I, room = 0.5, 4096.0, 8128.0
    rho = lam * I / room
    mu = lam / 2 + rho ** 2 / (2 * (1 - rho))
    k = [math.floor(((m - 1) * room + room - I) / I) + 1 for m in range(1, 7)]
    assert k == [1, 3, 5, 7, 9, 11]
    want_extra = sum(_tail(mu, x) for x in k)
    extra, tokens = closed_loop_prompt(lam, I, room, 1.0, 63.0)
    assert float(extra) == pytest.approx(want_extra, abs=6 * NEGLIGIBLE)  # tails under NEGLIGIBLE are not formed
    lam_b, slack = lam / 2 + lam * want_extra, (1 + want_extra) * room - I - mu * I
    # E[min(slack, K·I)] over K ~ Poisson(lam_b), term by term
    behind = sum(math.exp(-lam_b) * lam_b ** j / math.factorial(j) * min(slack, j * I) for j in range(60))
    assert float(tokens) == pytest.approx(I + mu * I + behind, rel=1e-6)


@pytest.mark.parametrize("lam,size,cap", [(0.23, 12000.0, 4288.0), (0.5, 1024.0, 7000.0), (3.0, 500.0, 900.0),
                                          (0.0, 4096.0, 100.0), (1.0, 100.0, 0.0)])
def test_capped_poisson_sum_is_the_mean_of_the_clipped_fill(lam, size, cap):
    want = sum(math.exp(-lam) * lam ** j / math.factorial(j) * min(cap, j * size) for j in range(80))
    assert float(capped_poisson_sum(lam, size, cap)) == pytest.approx(want, rel=1e-6, abs=1e-9)


def test_the_loops_feedback_bounds_the_backlog_near_saturation():
    # ρ -> 1: the M/D/1 queue diverges, the closed loop's stays near sqrt((B − 1)/π) prompts; the push is summed
    # to convergence (one prompt a step here: extra = Σ_m P(K_a >= m) = E[K_a] = μ), not cut at a few steps
    lam, I, room, others = 0.999, 8000.0, 8000.0, 127.0
    extra, _ = closed_loop_prompt(lam, I, room, 1.0, others)
    mu = lam / 2 + math.sqrt(others / math.pi)
    assert float(extra) == pytest.approx(mu, rel=1e-5)  # Σ_{m >= 1} P(K >= m) = E[K]
    assert float(extra) < 10.0  # not the ~500 prompts of ρ²/(2(1 − ρ))


def test_whole_prompt_slot_and_its_batch_cap():
    assert float(prompt_slot(8065.0, 4096.0, True)) == 4096.0  # two do not fit beside 127 decodes
    assert float(prompt_slot(8065.0, 4096.0, False)) == 8065.0
    assert float(prompt_slot(8065.0, 2000.0, True)) == 8000.0
    # 4096/128 under 8192 tokens: the chunked budget sustains 8192·(1 + 127)/(4096 + 127) = 248 running; whole
    # prompts start one a step, one a request's 128 steps: 128
    chunked, whole = (float(budget_batch(1e9, 128.0, 4096.0, 8192.0, w)) for w in (False, True))
    assert chunked == pytest.approx(8192 * 128 / 4223)
    assert whole == 128.0
    assert np.array_equal(budget_batch(np.array([50.0, 1e9]), 128.0, 4096.0, 8192.0, True), [50.0, 128.0])


def test_closed_loop_ttft_on_a_linear_step_is_steps_plus_tokens():
    """On a step linear in its prefill tokens, t(n, P) = a + c·n + b·P, a closed loop's time to first token is
    (c + E[k] − c)·t(n, 0) + b·(the tokens its steps process): every step it waits is counted once and every token
    once. Whole prompts of 5000 tokens under 8192 (one a step): the last step is timed at the slot (5000 tokens and
    no more), not at the room (8192 − n), or the 3,000-odd tokens between would be paid twice."""
    from tokenomy.serving.steady import Points, solve

    a, b, c = 0.02, 4e-5, 1e-4

    def step(n, P):
        t = a + c * np.asarray(n, float) + b * np.asarray(P, float)
        return t, np.zeros(np.shape(t), int), np.zeros(np.shape(t), int)

    I, osl, N = 5000.0, 128.0, 8192.0
    C = np.array([8.0, 32.0, 64.0])
    s = solve(step, Points(isl=I, osl=osl, prefill=I, load=C, cap=np.full(3, 1e9), budget=N, whole_prompts=True),
              closed=True)
    B, n, P = s.batch, s.decodes, s.prefill_per_step
    assert np.all(s.chunks == 1.0) and np.all(B == C)
    room = N - n * (B - 1) / B
    slot = prompt_slot(room, I, True)
    assert np.all(slot == I) and np.all(I + P * (B - 1) / B > slot)  # the case the slot caps
    extra, tokens = closed_loop_prompt(P * (B - 1) / B / I, I, slot, 1.0, B - 1)
    want = (1.0 + extra) * (a + c * n) + b * tokens
    assert np.allclose(s.ttft0_s, want, rtol=1e-12)


def test_large_means_are_tabled_in_slices_with_the_same_bits(monkeypatch):
    # a mean of thousands has thousands of terms: the table takes the points in slices of at most TABLE_CELLS
    # cells, and a point's tail does not depend on the slice it lands in, nor on the other points
    from tokenomy.serving import prefill_queue as pq

    lam = np.linspace(2000.0, 3000.0, 2001)
    k = np.floor(lam + 1.5 * np.sqrt(lam))
    sliced = poisson_tail(lam, k)
    monkeypatch.setattr(pq, "TABLE_CELLS", 1 << 30)  # one table for all of them
    assert np.array_equal(sliced, poisson_tail(lam, k))
    assert np.array_equal(sliced[[7, 1500]], poisson_tail(lam[[7, 1500]], k[[7, 1500]]))
    # P(K >= mean + 1.5 sd) of a Poisson with a large mean: the sum of its pmf, written out in logs
    i = 1000
    exact = sum(math.exp(j * math.log(lam[i]) - lam[i] - math.lgamma(j + 1)) for j in range(int(k[i]), 4000))
    assert sliced[i] == pytest.approx(exact, rel=1e-9)
