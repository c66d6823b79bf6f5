"""The session simulator's runs taken at once (serving/sim_loop.run_loop: closed-form spans of pure-decode steps,
carried on past the arrivals, lookups and completions after which the next step is again pure decode) against the
same loop stepping one iteration per turn (``_Run.stepwise``: no span is taken, every decode step is one step timed
by the table's bilinear read, every block count read at its own step). tests/serving/test_simulator_stepwise.py does
the same for the plain simulator.

Small agentic traces on Llama-3.1-8B / one H100 (vLLM profile): a closed loop with sub-agents on a KV pool tight
enough to preempt, with a DRAM tier that the rule reads from; an open loop with layerwise loads, preempting too.
And benchmarks/sessions.py's plan (Agentic defaults) cut to four sessions on a quarter of the pool. Per request the
arrival, TTFT, TPOT and hit tokens must agree (times to float rounding: a span's seconds are summed in closed form,
the steps' one by one), and the counts (steps, preemptions, tokens, deepest queue) exactly.
"""

import numpy as np
import pytest

from tokenomy.serving import sim_run
from tokenomy.serving.kv_cache_tiers import TierLevel, TierStack
from tokenomy.serving.session_state import pool_tokens
from tokenomy.serving.sessions import Agentic, generate, session_start_times
from tokenomy.serving.sim_session_run import _SessionRun
from tokenomy.serving.sim_sessions import simulate_sessions

def _both(monkeypatch, run):
    fast = run()
    monkeypatch.setattr(sim_run._Run, "stepwise", True)
    return fast, run()


CASES = {  # name: (sessions, C (None: open loop), share of the pool, DRAM tokens, load policy)
    "closed, preempting, DRAM read": (10, 6, 0.035, 2e5, "before-prefill"),
    "open loop, layerwise loads": (8, None, 0.062, 1e5, "layerwise-overlapped"),  # 3 preemptions (0.06: none)
    "benchmarks/sessions.py's plan, cut": (4, 4, 0.25, 2e6, "before-prefill"),  # Agentic defaults
}


@pytest.mark.parametrize("case", list(CASES))
def test_spans_taken_at_once_equal_stepping_one_iteration_at_a_time(monkeypatch, h100, small_agentic, case):
    dep, prof, bpt = h100
    sessions, C, share, ddr, load = CASES[case]
    stack = TierStack((TierLevel("hbm", 0.0, 0.0), TierLevel("ddr", ddr, bpt / 64e9, 1e-5)), load=load,
                      prefill_s_per_token=3e-5)
    start = None if C else session_start_times(1.0, sessions, seed=2)
    w = Agentic() if case.startswith("benchmarks") else small_agentic
    plan = generate(w, sessions, seed=4, start_s=start)
    blocks = int(share * pool_tokens(dep, prof, w) // prof.block_size)
    fast, slow = _both(monkeypatch, lambda: simulate_sessions(dep, prof, plan, stack, blocks, concurrency=C,
                                                              stagger_s=w.turns * w.think_s if C else 0.0))
    f, s = fast.sim, slow.sim
    assert f.steps == s.steps > 20 * len(plan.isl)  # a run of many steps per request, each stepped in the reference
    assert (f.preemptions, f.tokens_out, f.prefill_tokens, f.max_queue) == (s.preemptions, s.tokens_out,
                                                                            s.prefill_tokens, s.max_queue)
    assert f.preemptions > 0 and f.max_queue > 1 and fast.hit_by_tier["ddr"] > 0  # preemptions, a queue, DRAM reads
    np.testing.assert_array_equal(fast.hit_tokens, slow.hit_tokens)
    for got, want in ((f.arrival_s, s.arrival_s), (f.ttft_s, s.ttft_s), (f.tpot_s, s.tpot_s), (f.e2e_s, s.e2e_s),
                      (fast.load_wait_s, slow.load_wait_s)):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    assert fast.hit_rate == slow.hit_rate


def test_each_lookup_sees_the_free_blocks_of_its_own_step(monkeypatch, h100):
    """sim_loop's span carries a run past a lookup (a turn arriving mid-run with no queue is looked up and the run
    goes on): the lookup must still happen at the step where stepping one iteration at a time does it, its HBM
    capacity set from the blocks free at that step. Per request, the free blocks each lookup sees agree exactly with
    the step-by-step reference's; a lookup moved to the end of a run would see the blocks the decodes took since."""
    dep, prof, bpt = h100
    stack = TierStack((TierLevel("hbm", 0.0, 0.0), TierLevel("ddr", 2e6, bpt / 64e9, 1e-5)),
                      prefill_s_per_token=3e-5)
    plan = generate(Agentic(), 4, seed=4)
    blocks = int(0.25 * pool_tokens(dep, prof, Agentic()) // prof.block_size)
    seen = []
    arrived = _SessionRun.arrived

    def spy(self, r, t, base_free):
        seen[-1][r] = base_free
        return arrived(self, r, t, base_free)

    monkeypatch.setattr(_SessionRun, "arrived", spy)
    for stepwise in (False, True):
        monkeypatch.setattr(sim_run._Run, "stepwise", stepwise)
        seen.append({})
        simulate_sessions(dep, prof, plan, stack, blocks, concurrency=4, stagger_s=96.0)
    fast, slow = seen
    assert len(fast) == len(plan.isl) and fast == slow
    assert len(set(fast.values())) > len(plan.isl) // 2  # the free blocks move from lookup to lookup
