"""What the session simulator (serving/sim_sessions.py) must keep whatever its loop's bookkeeping looks like: the
tokens it generates and computes, hit tokens within what a prompt can reuse, and time running forward through each
session's turns. benchmarks/sessions.py's agentic plan (Agentic defaults) on Llama-3.1-8B / one H100 (vLLM profile)
with a DRAM tier, cut to a few sessions: a roomy pool (no preemption) and a tight one (preempting).

The loop's spans against stepping one iteration at a time are tests/serving/test_session_stepwise.py's; the prefix
cache's own rules tests/serving/test_kv_hbm_pool.py's.
"""

import numpy as np
import pytest

from tokenomy.answers.resolve import deployment
from tokenomy.answers.workloads import engine_profile
from tokenomy.core.layout import Layout
from tokenomy.serving.kv_cache_tiers import TierLevel, TierStack
from tokenomy.serving.scheduler import kv_tokens
from tokenomy.serving.session_state import pool_tokens
from tokenomy.serving.sessions import Agentic, generate
from tokenomy.serving.sim_blocks import DecodeBlocks
from tokenomy.serving.sim_session_table import base_tokens
from tokenomy.serving.sim_sessions import simulate_sessions

AGENT = Agentic()
POOLS = {"roomy": 4.0, "tight": 0.5}  # of the replica's KV pool (benchmarks/sessions.py: 1.0, preempting)


@pytest.fixture(scope="module")
def runs():
    dep, prof = deployment("llama-3.1-8b", "h100-sxm", layout=Layout(1)), engine_profile("vllm", 1)
    bpt = float(np.ravel(kv_tokens(dep, prof, 8192.0).bytes_per_token)[0])
    stack = TierStack((TierLevel("hbm", 0.0, 0.0), TierLevel("ddr", 2e6, bpt / 64e9, 1e-5)))
    plan = generate(AGENT, 12, seed=0)
    out = {}
    for name, share in POOLS.items():
        blocks = int(share * pool_tokens(dep, prof, AGENT) // prof.block_size)
        out[name] = simulate_sessions(dep, prof, plan, stack, blocks, concurrency=8,
                                      stagger_s=AGENT.turns * AGENT.think_s)
    return plan, out


@pytest.mark.parametrize("pool", list(POOLS))
def test_every_output_token_is_generated_once_and_every_uncached_prompt_token_computed(runs, pool):
    """tokens_out = Σ OSL (a preempted request keeps what it generated); prefill tokens = Σ (ISL − hit) with no
    preemption, more with (recomputation)."""
    plan, res = runs
    s = res[pool]
    assert s.sim.tokens_out == int(np.sum(plan.osl))
    computed = int(np.sum(np.maximum(plan.isl - s.hit_tokens, 1)))
    if pool == "roomy":
        assert s.sim.preemptions == 0 and s.sim.prefill_tokens == computed
    else:
        assert s.sim.preemptions > 0 and s.sim.prefill_tokens > computed


@pytest.mark.parametrize("pool", list(POOLS))
def test_hits_stay_within_what_a_prompt_can_reuse(runs, pool):
    """0 <= hit <= ISL − 1, and at most the prefix its agent's earlier turns, the forks and the system prompt hold;
    the rate in [0, 1] and the tiers' shares adding up to it (no lookup here is capped at ISL − 1)."""
    plan, res = runs
    s = res[pool]
    reusable = base_tokens(plan) + plan.ctx_before
    assert np.all(s.hit_tokens >= 0) and np.all(s.hit_tokens <= np.minimum(plan.isl - 1, reusable))
    assert 0.5 < s.hit_rate < 1.0  # an agentic tree reuses most of its context (the roomy pool ~0.96)
    assert sum(s.hit_by_tier.values()) == pytest.approx(s.hit_rate, rel=1e-12)
    assert s.skipped_share == 0.0  # DRAM is always worth reading here
    assert (s.hit_by_tier["ddr"] > 0) == (pool == "tight")  # read where HBM is short


@pytest.mark.parametrize("pool", list(POOLS))
def test_time_runs_forward_through_each_session(runs, pool):
    """A turn arrives its think time after the last of the turns it follows finished (exactly: the same float);
    its loads end at or after its arrival, its first token after them and its last after its first."""
    plan, res = runs
    s = res[pool]
    arrival, finish, first = s.sim.arrival_s, s.sim.finish_s, s.sim.first_token_s
    for r, follow in enumerate(plan.succ):
        for q in follow:
            assert arrival[q] >= finish[r] + plan.gap_s[q]
    preds = {}
    for r, follow in enumerate(plan.succ):
        for q in follow:
            preds.setdefault(q, []).append(r)
    for q, ps in preds.items():
        assert arrival[q] == max(finish[p] for p in ps) + plan.gap_s[q]
    assert np.all(s.load_wait_s >= 0.0)
    assert np.all(first >= arrival + s.load_wait_s) and np.all(finish > first)


def test_the_blocks_a_step_takes_are_the_decoders_at_a_block_boundary():
    """held(S + 1) − held(S) = h[(−S) mod b], the decoders whose cached tokens a_r + S sit on a block boundary
    (sim_loop's step 3 reads it so)."""
    rng = np.random.default_rng(3)
    for b in (1, 16, 64):
        d = DecodeBlocks(b)
        for a in rng.integers(0, 5000, 40).tolist():
            d.add(int(a))
        for S in range(0, 3 * b + 2):
            assert d.held(S + 1) - d.held(S) == d.hist[-S % b]
