"""Open loop below one request in the engine (λ·lifetime < 1): Little's law's running batch is held at the request
itself, but the prompts still come at λ and the engine idles between requests (serving/steady_steps.py:
arrival_share, busy_share). The hand-checked arithmetic, the limits, and the iteration-level simulator, whose
Poisson arrivals idle the engine, against the analytic answer."""

import numpy as np
import pytest

from tokenomy.answers.resolve import deployment
from tokenomy.answers.workloads import engine_profile
from tokenomy.core.layout import Layout
from tokenomy.serving.simulator import simulate
from tokenomy.serving.steady import steady
from tokenomy.serving.steady_steps import arrival_share, busy_share
from tokenomy.serving.workload import Lengths, Workload


def test_arrival_share_by_hand():
    # R = 2/s, one chunk, OSL 16 (n = 15), t_0 = 6 ms, t_h = 18 ms:
    # f = 2·(0.018 + 14·0.006) / (15 − 2·0.012·14) = 0.204 / 14.664
    f = float(arrival_share(2.0, 1.0, 16.0, 6e-3, 18e-3))
    assert f == pytest.approx(0.204 / 14.664, rel=1e-12)
    # self-consistent: the chunks that came during its prefill step and first 14 decode steps, over its 15 steps
    tpot = 6e-3 + f * 12e-3
    assert f == pytest.approx(2.0 * (18e-3 + 14 * tpot) / 15.0, rel=1e-12)


def test_arrival_share_limits():
    # a long decode: the gated-service share ρ·t_0/((1 − ρ)(t_h − t_0)), ρ = R·(t_h − t_0) = 0.024
    assert float(arrival_share(2.0, 1.0, 1e9, 6e-3, 18e-3)) == pytest.approx(0.024 * 6e-3 / (0.976 * 12e-3), rel=1e-6)
    assert float(arrival_share(0.0, 1.0, 16.0, 6e-3, 18e-3)) == 0.0  # nobody else
    # prompts that alone fill the time: every step carries one
    assert float(arrival_share(100.0, 1.0, 16.0, 6e-3, 18e-3)) == 1.0


def test_busy_share_by_hand():
    assert float(busy_share(2.0, 0.12)) == pytest.approx(1.0 - np.exp(-0.24), rel=1e-12)
    assert float(busy_share(0.0, 0.12)) == 0.0
    assert float(busy_share(500.0, 0.12)) == pytest.approx(1.0, abs=1e-12)


@pytest.fixture(scope="module")
def small():
    return deployment("llama-3.1-8b", "h200", layout=Layout(1), serving_engine="trtllm"), engine_profile("trtllm", 1)


def test_a_trickle_of_requests_decodes_at_the_lone_step(small):
    """One request every 100 s: TPOT is the decode step of one sequence, TTFT its prompt's pass (and the request
    overhead), not a prompt charged to one step in OSL (the running batch's share at B = 1)."""
    dep, prof = small
    s = steady(dep, prof, isl=467, osl=16, rate=[0.01])
    lone = float(dep.run(1, 467 + 8, prefill_tokens=0).step_s)
    assert float(s.tpot_s[0]) == pytest.approx(lone, rel=2e-3)
    # the old share, one prompt in 16 steps, is far from it
    pass_s = float(dep.run(1, 467 + 8, prefill_tokens=467, prefill_context=467 / 2).step_s)
    assert lone + (pass_s - lone) / 16 > 1.05 * lone


# (model, chip, tp, engine, R, ISL, OSL): λ·lifetime 0.03-0.5, the engine idle most of the time. Before
# arrival_share/busy_share the analytic TPOT was 8% (467/16) to 77% (4096/16) above the simulator's, TTFT 12% above
IDLE = [("llama-3.1-8b", "h200", 1, "trtllm", 2.0, 467, 16), ("llama-3.1-8b", "h200", 1, "trtllm", 0.5, 4096, 16),
        ("llama-3.1-70b", "hgx-h100-8", 8, "vllm", 2.0, 467, 16), ("llama-3.1-70b", "hgx-h100-8", 8, "vllm", 0.5, 4096, 16)]


@pytest.mark.parametrize("model,chip,tp,engine,R,isl,osl", IDLE)
def test_an_idle_engine_matches_the_simulator(model, chip, tp, engine, R, isl, osl):
    dep = deployment(model, chip, layout=Layout(tp), serving_engine=engine)
    prof = engine_profile(engine, tp)
    s = steady(dep, prof, isl=isl, osl=osl, rate=[R])
    assert float(s.batch[0]) == 1.0  # held at the request itself
    sim = simulate(dep, prof, Workload(Lengths("fixed", isl), Lengths("fixed", osl), rate=R), 2000)
    got = sim.summary(dep.chips)
    assert got["tpot_s"] == pytest.approx(float(s.tpot_s[0]), rel=0.03)
    assert got["ttft_s"] == pytest.approx(float(s.ttft_s[0]), rel=0.05)


def test_the_mean_steps_prompt_tokens_are_the_arrivals(small):
    """The mean step's prefill tokens P (what busy shares, energy and --explain read) follow the arrival rate:
    P = ISL·f_d, f_d = arrival_share at the engine's own steps (2 requests/s: ~1.2 x R·ISL a second, the prompts
    landing in a request's own prefill step counted), where B·I/life at B = 1 gave ISL/OSL = 29 tokens a step."""
    dep, prof = small
    s = steady(dep, prof, isl=467, osl=16, rate=[2.0])
    t0 = float(dep.run(1, 467 + 8, prefill_tokens=0).step_s)
    th = float(dep.run(1, 467 + 8, prefill_tokens=467, prefill_context=467 / 2).step_s)
    assert float(s.prefill_per_step[0]) == pytest.approx(467 * float(arrival_share(2.0, 1.0, 16.0, t0, th)), rel=0.03)
    assert float(s.prefill_per_step[0]) < 0.5 * 467 / 16
