"""TensorRT-LLM's delayed batching run step by step by the simulator (serving/batch_wait_gate.py: PyExecutor's own
counter) against its closed form (batch_wait.held_steps, batch_wait_steps). The closed form assumes Poisson
arrivals at a = U/O a step beside U − 1 decodes; the simulator assumes none of that: its clients send their next
request when their last finishes, its decodes are whoever runs, its gate counts the prompts its budget picked.
Every step takes 1 s (a flat table), so a request's TTFT is the steps it was held plus its prompt's step, and the
hold is read off it: W_sim = mean TTFT − 1 (no receive interval, KV and batch cap out of the way)."""

from dataclasses import replace

import numpy as np
import pytest

from tokenomy.serving.batch_wait_gate import BatchWaitGate
from tokenomy.serving.scheduler import EngineProfile, batch_wait_steps, held_steps
from tokenomy.serving.sim_table import C_GRID, P_GRID, StepTable
from tokenomy.serving.simulator import simulate
from tokenomy.serving.workload import Lengths, Workload

TRT = EngineProfile("trtllm", "test", False, 8192, 4096, 32, 0.9, "free")
L = 922  # InferenceX's 1k/1k: lengths uniform in [int(0.8 L), L] (--random-range-ratio 0.8), mean 830
DRAW = Lengths("uniform", int(0.8 * L), L)
MEAN = (int(0.8 * L) + L) / 2.0


def _flat(n_max: int) -> StepTable:
    return StepTable(np.ones((n_max + 1, P_GRID + 1, C_GRID + 1)), 9000.0, 1.0, 10.0)


def _held(prof, w: Workload, n: int, n_max: int) -> float:
    s = simulate(None, prof, w, n, table=_flat(n_max), kv_blocks=10**7)
    return float(np.mean(s.ttft_s[s.counted])) - 1.0


def test_the_gate_is_the_engines_counter():
    """_waiting_requests by hand: T = 3 holds three iterations and releases on the fourth (counter 3 >= T), then
    restarts; the tokens release at once, whatever the counter."""
    g = BatchWaitGate(3, 100.0)
    assert [g.holds(10, 5) for _ in range(5)] == [True, True, True, False, True]
    assert g.count == 1 and g.holds(95, 5) is False and g.count == 0  # 95 + 5 >= 100
    assert g.holds(94, 5) is True  # 99 < 100


def test_off_the_simulator_takes_prompts_at_once():
    w = Workload(DRAW, DRAW, concurrency=16, seed=1)
    assert _held(TRT, w, 400, 17) == pytest.approx(0.0, abs=1e-9)


GRID = [(T, ratio, U) for T, ratio in ((40, 0.8), (10, 0.5), (100, 0.3)) for U in (4, 16, 64, 128, 256)]


@pytest.mark.parametrize("T,ratio,U", GRID)
def test_closed_loop_replay_matches_the_closed_form(T, ratio, U):
    """Grid: (T, ρ_w) in {(40, 0.8) InferenceX's recipe, (10, 0.5), (100, 0.3)} x U in {4, 16, 64, 128, 256}
    clients, 8,192-token budget, prompts and outputs drawn as InferenceX draws them (mean 830 tokens), max(20·U, 2000)
    requests less the first and last U. The closed form is within 15% of the replay over the grid (measured: within
    3% but for T = 100, ρ_w = 0.3 at 4-64 clients, -5 to -12%: few arrivals a window, where a closed loop's arrivals
    are more regular than Poisson)."""
    prof = replace(TRT, batch_wait_iters=T, batch_wait_tokens_ratio=ratio)
    w = Workload(DRAW, DRAW, concurrency=U, seed=1)
    W_sim = _held(prof, w, max(20 * U, 2000), U + 1)
    W = float(batch_wait_steps(prof, U, MEAN, MEAN))
    assert W_sim > 1.0  # the engine holds the prompts: a real wait to compare
    assert W == pytest.approx(W_sim, rel=0.15)


@pytest.mark.parametrize("rate", [0.02, 0.1, 0.3])
def test_open_loop_replay_matches_the_closed_form(rate):
    """Poisson arrivals (an open loop at ``rate`` requests a 1-s step), T = 40, ρ_w = 0.8: held_steps at
    a = R·t beside the running decodes (the simulator's time average, B = R·(O + W) by Little's law) within 10%."""
    prof = replace(TRT, batch_wait_iters=40, batch_wait_tokens_ratio=0.8)
    w = Workload(DRAW, DRAW, rate=rate, seed=2)
    n = 3000
    W_sim = _held(prof, w, n, 600)
    B = rate * (MEAN - 1.0 + W_sim)  # the decodes running beside an arrival (time average, PASTA)
    W = float(held_steps(40, 0.8 * 8192, rate, B, MEAN))
    assert W_sim > 1.0
    assert W == pytest.approx(W_sim, rel=0.10)


def test_fixed_lengths_phase_lock_and_wait_the_whole_timeout():
    """The closed form's limit, shown: with fixed lengths on equal steps a released group finishes together and
    comes back together, too few to fill the window (64 clients of 922 tokens: groups below the k = 6 the tokens
    need), so every request waits the full T = 40 — not the 25 steps of random arrivals. (A fixed-length run is
    phase-locked: serving/protocol_waves.py.)"""
    prof = replace(TRT, batch_wait_iters=40, batch_wait_tokens_ratio=0.8)
    fixed = Lengths("fixed", L)
    w = Workload(fixed, fixed, concurrency=64, seed=1)
    assert _held(prof, w, 2000, 65) == pytest.approx(40.0, abs=0.5)
    assert float(batch_wait_steps(prof, 64, L, L)) == pytest.approx(25.0, abs=0.5)
