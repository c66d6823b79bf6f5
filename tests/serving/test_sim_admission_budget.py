"""The simulator admits a waiting request as a chunking engine does: only while the step's token budget has room
after the running requests' decodes and prompt chunks (vLLM v1, vllm/v1/core/sched/scheduler.py Scheduler.schedule:
"while self.waiting and token_budget > 0", each admitted request allocating blocks for the tokens it is given).

It admitted every waiting request whose whole prompt's blocks fit, up to max_num_seqs: DeepSeek-V3 on a GB200 NVL72
replica, 4,096 agentic sessions, held a median of 60 (up to 152) prompts admitted but not yet given a chunk, each with
its blocks, and left HBM's prefix cache a median of 0.4e6 tokens (1.0e6 with the gate; hit rate 0.725 -> 0.778,
mean TTFT 710 s -> 620 s). Here on Llama-3.1-8B / one H100 past its KV capacity (a queue waits), where the old
admission held up to dozens of prompts' worth of tokens ahead of the step."""

import numpy as np

from tokenomy.answers.resolve import deployment
from tokenomy.answers.workloads import engine_profile
from tokenomy.core.layout import Layout
from tokenomy.serving.kv_cache_tiers import TierLevel, TierStack
from tokenomy.serving.session_state import pool_tokens
from tokenomy.serving.sessions import Agentic, generate
from tokenomy.serving.sim_session_run import _SessionRun
from tokenomy.serving.sim_sessions import simulate_sessions

AGENT = Agentic(turns=12, subagent_every=4, subagent_turns=4, system_prompt_tokens=4000, new_input_tokens=1500,
                think_s=10.0)


def test_admission_stops_where_the_step_budget_is_spent(monkeypatch):
    dep, prof = deployment("llama-3.1-8b", "h100-sxm", layout=Layout(1)), engine_profile("vllm", 1)
    ahead, queued = [], []  # per admission: prompt tokens the earlier admitted still had to compute; the queue left

    def admitted(self, rs, now):
        before = [r for r in self.prefilling if r != rs[-1]]
        ahead.append(sum(self.need[r] - self.done[r] for r in before))
        queued.append(len(self.waiting))
        return original(self, rs, now)

    original = _SessionRun.admitted
    monkeypatch.setattr(_SessionRun, "admitted", admitted)
    pool = pool_tokens(dep, prof, AGENT)
    sim = simulate_sessions(dep, prof, generate(AGENT, 6 * 32, seed=1), TierStack((TierLevel("hbm", 0.0, 0.0),)),
                            int(pool // prof.block_size), concurrency=32, stagger_s=AGENT.turns * AGENT.think_s)
    assert max(queued) > 0  # saturated: requests wait to be admitted
    assert max(ahead) < prof.max_num_tokens  # each admitted while the budget had room (before: several budgets)
    assert np.isfinite(sim.hit_rate)
