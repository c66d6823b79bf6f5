"""A finite open loop (N prompts at R requests/s, serving/finite_run.py): the trapezoid's request-weighted mean
occupancy against a direct count over discrete arrivals, its limits, and the solve it enters against the
iteration-level simulator running the same 500-prompt Poisson run (TensorRT-LLM 0.14's online table's protocol)."""

import dataclasses

import numpy as np
import pytest

from tokenomy.serving.finite_run import finite_occupancy
from tokenomy.serving.protocol_run import run_protocol
from tokenomy.serving.protocol import protocol_of
from tokenomy.serving.steady import engine_problem
from tokenomy.serving.steady_solve import solve
from tokenomy.catalog import loader


def _counted(rate, n, life, samples=4001):
    """Request-weighted mean number in the engine, counted: request i arrives at i/R and stays L; each request's
    life sampled at ``samples`` instants, the requests alive at each counted."""
    arrive = np.arange(n) / rate
    seen = []
    for a in arrive[:: max(1, n // 200)]:  # 200 requests' lives, evenly over the run
        t = a + np.linspace(0.0, life, samples, endpoint=False) + life / (2 * samples)
        alive = np.searchsorted(arrive, t, side="right") - np.searchsorted(arrive + life, t, side="right")
        seen.append(alive.mean())
    return float(np.mean(seen))


@pytest.mark.parametrize("rate,n,life", [(32.0, 500, 21.0), (16.0, 500, 17.6), (10.0, 2000, 5.0), (4.0, 40, 30.0)])
def test_trapezoid_matches_a_count_over_discrete_arrivals(rate, n, life):
    assert float(finite_occupancy(rate, n, life)) == pytest.approx(_counted(rate, n, life), rel=0.02)


def test_limits_steady_state_and_all_at_once():
    assert float(finite_occupancy(8.0, np.inf, 3.0)) == 24.0  # no end: the steady state's R·L
    assert float(finite_occupancy(8.0, 1e9, 3.0)) == pytest.approx(24.0, rel=1e-6)
    assert float(finite_occupancy(1e9, 500, 20.0)) == pytest.approx(500.0, rel=1e-6)  # every prompt at t = 0
    got = finite_occupancy(np.array([32.0, 64.0, 128.0]), 500, 21.0)
    assert np.all(got <= 500.0) and np.all(np.diff(got) > 0)  # never more than the prompts sent


# Llama-3.1-70B TP4 on H200 under TensorRT-LLM's profile, 500 prompts (trtllm-0.14-online's rows); (R, ISL, OSL)
# where the decode batch, not the prompt budget, is the load. Measured when written: finite-run TPOT 1.13-1.18x
# the simulator's (its drain thins the batch sooner than the fluid trapezoid), the steady state's 1.6-4.4x.
RUNS = [(32.0, 467, 256), (16.0, 467, 256), (32.0, 202, 214)]


@pytest.fixture(scope="module")
def h200_tp4():
    from tokenomy.core.deployment import Deployment
    from tokenomy.core.layout import Layout
    from tokenomy.serving.scheduler import profile_of
    from tokenomy.validation.load import efficiency_set

    prof = profile_of(loader.engine_file("trtllm"))
    eff = prof.on(efficiency_set("h200"))
    return Deployment(loader.model("llama-3.1-70b"), loader.hardware("h200"), Layout(tp=4), "bf16", "bf16", eff), prof


@pytest.mark.parametrize("rate,isl,osl", RUNS)
def test_finite_run_tpot_follows_the_simulated_run(h200_tp4, rate, isl, osl):
    dep, prof = h200_tp4
    pb = engine_problem(dep, prof, isl=isl, osl=osl, load=[rate])
    finite = solve(pb.step, dataclasses.replace(pb.points, prompts=500.0), closed=False)
    steady = solve(pb.step, pb.points, closed=False)
    run = run_protocol(dep, prof, protocol_of(loader.protocol_file("vllm-bench")), isl, osl, rate=rate, prompts=500)
    sim = run.summary(dep.chips)["tpot_s"]
    assert float(finite.batch[0]) <= 500.0
    assert float(finite.tpot_s[0]) == pytest.approx(sim, rel=0.25)
    assert abs(float(finite.tpot_s[0]) / sim - 1.0) < abs(float(steady.tpot_s[0]) / sim - 1.0)


def test_serve_takes_an_open_loops_requests_as_a_finite_run():
    """tk.serve's analytic open loop with ``requests``: the run of that many (steady's prompts), not the endless
    stream it had answered (1,715 running of the 500 sent, TPOT 332 ms against the simulator's 76 ms); its running
    batch is at most the requests sent and its TPOT within 20% of the simulator's run of the same requests."""
    import tokenomy as tk

    kw = dict(chips=4, tp=4, engine="trtllm", rate=[32], isl=467, osl=256)
    endless = tk.serve("llama-3.1-70b", "hgx-h200-8", **kw).rows()[0]
    run, sim = (tk.serve("llama-3.1-70b", "hgx-h200-8", requests=500, method=m, **kw).rows()[0]
                for m in ("analytic", "simulate"))
    assert endless["running_batch"] > 500 and run["running_batch"] <= 500
    assert run["tpot_s"] == pytest.approx(sim["tpot_s"], rel=0.2)
    assert endless["tpot_s"] > 2 * run["tpot_s"]
