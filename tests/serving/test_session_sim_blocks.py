"""The session simulator's KV pool (serving/sim_sessions.py): the blocks in use, each shared block counted once, never
exceed the replica's ``kv_blocks`` at any step, and ``max_blocks_used`` reports that peak (not the ledger's, which
counts a decoding request's shared prompt once per request).

Blocks in use at a step, counted here from the prefix cache's own state (kv_hbm_pool.SharedPrefixCache), not the
loop's ledger: each prefilling request's blocks less the prefix it references that HBM holds (the contiguous pinned
part of its chain), each decoder's context blocks less its prompt (registered in pinned objects), plus every pinned
object once. Found by a 150-session agentic run (llama-3.1-8b, one H100) reporting 61,953 blocks of 28,008.
"""

import numpy as np
import pytest

from tokenomy.serving import sim_sessions
from tokenomy.serving.kv_cache_tiers import TierLevel, TierStack
from tokenomy.serving.session_state import pool_tokens
from tokenomy.serving.sessions import SessionPlan, generate
from tokenomy.serving.sim_blocks import DecodeBlocks
from tokenomy.serving.sim_session_run import _SessionRun


def _in_use(run, held_dec: int) -> float:
    """Blocks in use now, each shared block once (module docstring); also checks no prefilling request's ledger
    holds fewer blocks than its unshared part."""
    b, cache = run.blk, run.cache
    own = 0
    for r in run.prefilling:
        shared, refs = 0.0, cache.held_by.get(r, ())
        for key, need in run.chain_of[r]:
            if need <= 0:
                continue
            t = min(cache.pinned.get(key, 0.0), need) if key in refs else 0.0
            shared += t
            if t < need:
                break
        g = run.gen[r]
        mine = max(-(-(run.isl[r] + max(g - 1, 0)) // b) - int(shared // b), 1)
        assert run.held[r] - run.taken[r] // b >= mine, f"request {r} holds fewer blocks than it computes into"
        own += mine
    return own + held_dec + (sum(cache.pinned.values()) - sum(run.credited)) / b


def _checked(monkeypatch) -> list[float]:
    """Patch the session run to step one iteration a turn and record the blocks in use at each (``_in_use``),
    checking the loop's ledger against them: it counts each block once (a request admitted with a prefix it takes
    out of the free LRU counted those blocks twice until its prefill ended), to extra's rounding down (< 1 block).
    The list of them, filled."""
    seen = []

    class Checked(DecodeBlocks):
        def at(self, S: int) -> int:
            held = super().at(S)
            run, in_use = self.run, _in_use(self.run, held)
            ledger = sum(run.held[r] for r in run.prefilling) + held - run.extra  # what the loop admits against
            assert 0 <= ledger - in_use < 1, f"the ledger counts {ledger - in_use} blocks apart from those in use"
            seen.append(in_use)
            return held

    class Run(_SessionRun):
        stepwise = True  # one step a loop turn: each step counted (a run of decode steps only grows them)

        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            self.dec = Checked(self.blk)
            self.dec.run = self

    monkeypatch.setattr(sim_sessions, "_SessionRun", Run)
    return seen


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_blocks_in_use_never_exceed_the_pool_with_subagents_and_tiers(h100, small_agentic, monkeypatch, seed):
    """Agentic trees with sub-agents forking their parent's context, a DRAM tier, a pool tight enough to preempt
    (re-admitted requests whose prefix HBM evicted meanwhile): at every step the blocks in use, each shared block once,
    fit the pool, and the reported peak is that count's (benchmarks/sessions.py's at 150 sessions reported 2.2x)."""
    dep, prof, bpt = h100
    stack = TierStack((TierLevel("hbm", 0.0, 0.0), TierLevel("ddr", 2e6, bpt / 64e9, 1e-5)))
    plan = generate(small_agentic, 16, seed=seed)
    blocks = int(0.05 * pool_tokens(dep, prof, small_agentic) // prof.block_size)
    seen = _checked(monkeypatch)
    s = sim_sessions.simulate_sessions(dep, prof, plan, stack, blocks, concurrency=8,
                                       stagger_s=6 * small_agentic.think_s)
    assert s.sim.preemptions > 0 and s.hit_by_tier["ddr"] > 0  # the cases the count must hold through
    assert len(seen) == s.sim.steps and max(seen) <= blocks + 1e-9
    assert 0.5 * blocks < s.sim.max_blocks_used <= blocks


def test_two_decoders_sharing_a_system_prompt_report_it_once(h100):
    """By hand: a 4,096-token system prompt (256 blocks of 16) and two single-turn sessions of 4,256 prompt tokens
    (160 of their own), the second arriving after the first's prompt is cached; each generates 2,000 tokens. While
    both decode the pool holds 256 + 2·10 prompt blocks plus at most 2·125 generated: <= 526 of 600. The loop's
    ledger counts each prompt whole (2·ceil((4,256 + 1,999)/16) = 782 at the end), which was the figure reported."""
    dep, prof, _ = h100
    one = np.ones(2, np.int64)
    plan = SessionPlan(agent=np.arange(2), turn=0 * one, isl=4256 * one, osl=2000 * one, ctx_before=0 * one,
                       gap_s=np.zeros(2), start_s=np.array([0.0, 1.0]), waits=0 * one, succ=((), ()),
                       parent=-one, fork_tokens=0 * one, session=np.arange(2), system_tokens=4096.0,
                       last_of_session=np.ones(2, bool))
    s = sim_sessions.simulate_sessions(dep, prof, plan, TierStack((TierLevel("hbm", 0.0, 0.0),)), 600)
    assert s.hit_tokens.tolist() == [0.0, 4096.0]  # the second reuses the first's system prompt
    assert s.sim.finish_s[0] > s.sim.first_token_s[1]  # both decode at once
    assert s.sim.preemptions == 0
    assert 256 + 2 * 10 < s.sim.max_blocks_used <= 256 + 2 * 10 + 2 * 125


def test_a_readmitted_request_recomputes_only_what_hbm_does_not_hold(h100, small_agentic, monkeypatch):
    """A preempted request admitted again computes its prompt tokens HBM no longer holds and its generated ones, no
    more: ISL − (held now) + (g − 1), at least one token. A decoder's prompt was all registered at its first
    admission, so that admission's own part is not recomputed again (it had been added on top: need 2,157 where
    ISL − now + g − 1 is 23)."""
    dep, prof, bpt = h100
    stack = TierStack((TierLevel("hbm", 0.0, 0.0), TierLevel("ddr", 2e6, bpt / 64e9, 1e-5)))
    plan = generate(small_agentic, 16, seed=0)
    blocks = int(0.05 * pool_tokens(dep, prof, small_agentic) // prof.block_size)
    checked = []

    class Run(_SessionRun):
        def _readmit(self, r):
            now = super()._readmit(r)
            g = self.gen[r]
            assert self.need[r] <= max(int(self.isl[r] - now), 1) + max(g - 1, 0), (r, self.need[r], now, g)
            checked.append(g > 1)
            return now

    monkeypatch.setattr(sim_sessions, "_SessionRun", Run)
    sim_sessions.simulate_sessions(dep, prof, plan, stack, blocks, concurrency=8, stagger_s=6 * small_agentic.think_s)
    assert any(checked)  # decoders were preempted and admitted again
