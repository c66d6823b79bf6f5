"""serving/protocol_waves.py agrees with the simulator's protocol run within 10% on the grid its docstring states:
Llama-3.1-8B on 1 x H100, trtllm (whole prompts) and vllm (chunked), 1024/128 and 1024/1024, C = 1..64,
trtllm-bench (fixed lengths: phase-locked waves) and inferencex (range ratio 0.8: scattered waves), 10 x C prompts."""

import pytest

from tokenomy.answers.engines import benchmark_protocol, engine_profile
from tokenomy.answers.resolve import deployment
from tokenomy.core.layout import Layout
from tokenomy.serving.protocol_run import run_protocol
from tokenomy.serving.protocol_waves import estimate

CLIENTS = (1, 4, 8, 16, 32, 64)


@pytest.mark.parametrize("engine", ["trtllm", "vllm"])
@pytest.mark.parametrize("name", ["trtllm-bench", "inferencex"])
@pytest.mark.parametrize("isl,osl", [(1024, 128), (1024, 1024)])
def test_closed_form_within_ten_percent_of_the_simulator(engine, name, isl, osl):
    dep = deployment("llama-3.1-8b", "h100-sxm", layout=Layout(tp=1), serving_engine=engine)
    prof, p = engine_profile(engine, 1), benchmark_protocol(name)
    for C in CLIENTS:
        sim = run_protocol(dep, prof, p, isl, osl, concurrency=C, prompts=10 * C).summary(1)
        est = estimate(dep, prof, p, isl, osl, [C], 10 * C)
        for got, want in ((est.ttft_s[0], sim["ttft_s"]), (est.tpot_s[0], sim["tpot_s"]),
                          (est.requests_per_s[0], sim["requests_per_s"])):
            assert got == pytest.approx(want, rel=0.10), (C, got, want)


def test_phase_locked_waves_differ_from_the_steady_state():
    """Where the waves lock (fixed lengths, 8 prompts a step), the run's TTFT is several times the steady state's:
    the closed form sees it, as the simulator does (not a copy of the steady answer)."""
    from tokenomy.serving.steady import steady

    dep = deployment("llama-3.1-8b", "h100-sxm", layout=Layout(tp=1), serving_engine="trtllm")
    prof = engine_profile("trtllm", 1)
    est = estimate(dep, prof, benchmark_protocol("trtllm-bench"), 1024, 128, [8, 64], 640)
    st = steady(dep, prof, isl=1024, osl=128, concurrency=[8, 64])
    assert (est.ttft_s > 3.0 * st.ttft_s).all()
