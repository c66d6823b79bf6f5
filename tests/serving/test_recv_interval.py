"""A scheduler that receives new requests every R-th decode step (SGLang --scheduler-recv-interval R): a request
that lands while the engine decodes waits (R − 1)/2 plain decode steps on average (serving.scheduler.poll_steps),
added to its time to first token where others decode as it lands; an idle engine (one client between requests,
the first wave at t = 0) receives at once."""

import numpy as np

from tokenomy.catalog import loader
from tokenomy.serving.protocol_waves import Waves, wave_figures
from tokenomy.serving.scheduler import poll_steps, profile_of
from tokenomy.serving.steady import Points, solve

A, B_STEP, C_STEP = 0.02, 4e-5, 1e-4  # t(n, P) = a + c·n + b·P seconds


def step(n, P):
    t = A + C_STEP * np.asarray(n, float) + B_STEP * np.asarray(P, float)
    return t, np.zeros(np.shape(t), int), np.zeros(np.shape(t), int)


def _points(poll, C):
    return Points(isl=922.0, osl=922.0, prefill=922.0, load=C, cap=np.full(C.shape, 1e9), budget=32768.0,
                  poll_steps=poll)


def test_poll_steps_by_hand():
    sglang = profile_of(loader.engine_file("sglang"), 8)
    assert sglang.recv_interval == 1 and poll_steps(sglang) == 0.0  # SGLang's default polls every step
    from dataclasses import replace
    assert poll_steps(replace(sglang, recv_interval=10)) == 4.5  # 0..9 steps, equally likely
    assert poll_steps(replace(sglang, recv_interval=30)) == 14.5


def test_the_wait_is_poll_plain_decode_steps_on_ttft_alone():
    C = np.array([1.0, 4.0, 16.0, 64.0])
    base = solve(step, _points(0.0, C), closed=True)
    slow = solve(step, _points(14.5, C), closed=True)
    plain = A + C_STEP * base.decodes  # a step of the same decodes without prefill
    assert np.allclose(slow.plain_step_s, plain, rtol=1e-12)
    # one client: nothing else decodes when it lands, the idle engine receives at once; more: the wait
    assert np.allclose(slow.ttft0_s - base.ttft0_s, 14.5 * plain * np.array([0.0, 1.0, 1.0, 1.0]), rtol=1e-9,
                       atol=1e-15)
    assert np.allclose(slow.tpot_s, base.tpot_s, rtol=1e-12)  # the decodes' steps are the same
    # a closed loop's clients wait longer per request: fewer requests a second (Little's law)
    assert np.all(slow.requests_per_s[1:] < base.requests_per_s[1:])


def test_the_first_wave_lands_on_an_idle_engine():
    C = np.array([8.0, 32.0])
    n = 10 * C
    stag0, stag = (solve(step, _points(p, C), closed=True) for p in (0.0, 4.5))
    tog = solve(step, _points(4.5, C), closed=True, arrivals="together")
    tog0 = solve(step, _points(0.0, C), closed=True, arrivals="together")
    assert np.allclose(tog.ttft0_s, tog0.ttft0_s, rtol=1e-12)  # the wave's staircase is not delayed

    def waves(poll):
        return Waves(C, n, np.full(2, 922.0), np.full(2, 922.0), np.full(2, 32768.0), np.zeros(2, bool),
                     np.zeros(2, bool), 0.0, False, poll)
    f0 = wave_figures(_Many(), waves(0.0), stag0, tog0)
    f = wave_figures(_Many(), waves(4.5), stag, tog)
    # the mean over n requests: only the n − C later ones wait for the poll
    assert np.allclose((f.ttft_s - f0.ttft_s) * n / (n - C), 4.5 * stag.plain_step_s, rtol=1e-9)


class _Many:
    def many(self, n, loads):
        return [step(n, P) for P in loads]
