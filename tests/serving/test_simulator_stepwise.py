"""The plain simulator's runs taken at once (serving/sim_loop.run_loop: closed-form spans of pure-decode steps, carried
on past the arrivals and completions after which the next step is again pure decode) against the same loop stepping
one iteration per turn (``_Run.stepwise``: no span taken, every decode step timed by the table's bilinear read and
its blocks counted at its own step). tests/serving/test_simulator_reference.py checks the rules themselves against a
naive reference on small cases; this checks the spans on the engine's own tables at sizes where they are long.

Llama-3.1-8B on one H100: a closed loop (vLLM), an open loop with a prefix hit, a cache cut small enough to preempt,
TensorRT-LLM's whole-sequence reservation (no preemption) and SGLang's profile. Per request the arrival, first token
and finish must agree to float rounding (a span's seconds are summed in closed form, the steps' one by one), the
counts (steps, preemptions, tokens, deepest queue, most blocks used) exactly.
"""

import numpy as np
import pytest

from tokenomy.answers.resolve import deployment
from tokenomy.answers.workloads import engine_profile
from tokenomy.core.layout import Layout
from tokenomy.serving import sim_run
from tokenomy.serving.simulator import simulate
from tokenomy.serving.workload import Lengths, Workload

CASES = {  # name: (engine, workload, requests, KV blocks (None: the engine's cache))
    "closed loop": ("vllm", Workload(Lengths("uniform", 64, 4096), Lengths("lognormal", 5.0, 0.8), concurrency=48,
                                     seed=1), 300, None),
    "open loop, prefix hit": ("vllm", Workload(Lengths("lognormal", 6.5, 0.7), Lengths("uniform", 1, 600), rate=8.0,
                                               cache_hit=0.3, seed=2), 300, None),
    "preempting": ("vllm", Workload(Lengths("uniform", 1024, 4096), Lengths("uniform", 256, 1024), concurrency=200,
                                    seed=5), 250, 3000),
    "reserving (trtllm)": ("trtllm", Workload(Lengths("uniform", 64, 4096), Lengths("uniform", 16, 800),
                                              concurrency=64, seed=3), 250, 4000),
    "sglang, open loop": ("sglang", Workload(Lengths("uniform", 64, 4096), Lengths("uniform", 16, 800), rate=20.0,
                                             seed=3), 250, 5000),
}


@pytest.fixture(scope="module")
def dep():
    return deployment("llama-3.1-8b", "h100-sxm", layout=Layout(1))


@pytest.mark.parametrize("case", list(CASES))
def test_spans_taken_at_once_equal_stepping_one_iteration_at_a_time(monkeypatch, dep, case):
    engine, w, n, kv = CASES[case]
    prof = engine_profile(engine, 1)
    fast = simulate(dep, prof, w, n, kv_blocks=kv)
    monkeypatch.setattr(sim_run._Run, "stepwise", True)
    slow = simulate(dep, prof, w, n, kv_blocks=kv)
    assert fast.steps == slow.steps > 5 * n  # several steps a request, each stepped in the reference
    assert (fast.preemptions, fast.tokens_out, fast.prefill_tokens, fast.max_queue, fast.max_blocks_used) == \
        (slow.preemptions, slow.tokens_out, slow.prefill_tokens, slow.max_queue, slow.max_blocks_used)
    np.testing.assert_array_equal(fast.queue_len, slow.queue_len)
    for got, want in ((fast.arrival_s, slow.arrival_s), (fast.first_token_s, slow.first_token_s),
                      (fast.finish_s, slow.finish_s)):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_the_cases_preempt_queue_and_take_long_spans(dep):
    """The cases exercise what the spans must carry: preemption, a queue, and runs of many steps."""
    seen = {}
    for case, (engine, w, n, kv) in CASES.items():
        s = simulate(dep, engine_profile(engine, 1), w, n, kv_blocks=kv)
        seen[case] = s
    assert seen["preempting"].preemptions > 0 and seen["reserving (trtllm)"].preemptions == 0
    assert sum(s.max_queue > 0 for s in seen.values()) >= 3
