"""The simulator on cases worked by hand: which step each token lands in, with step times anyone can add up.

The step-time table is t(n, P) = 1 + 0.1·n + 0.01·P seconds (n decodes, P prefill tokens), flat in context; it is
linear, so the table's interpolation reads it exactly. Each schedule below is derived in its comment.
"""

import numpy as np
import pytest

from tokenomy.serving.scheduler import EngineProfile
from tokenomy.serving.sim_table import C_GRID, P_GRID, StepTable
from tokenomy.serving.simulator import simulate
from tokenomy.serving.workload import Lengths, Requests, Workload


def _table(budget, n_max=8):
    n = np.arange(n_max + 1, dtype=float)[:, None, None]
    P = np.linspace(0.0, budget, P_GRID + 1)[None, :, None]
    t = 1.0 + 0.1 * n + 0.01 * P + 0.0 * np.arange(C_GRID + 1)[None, None, :]
    return StepTable(t, budget, 1.0, 10.0)


def _prof(budget=8, chunked=True, block=4, max_batch=8):
    return EngineProfile("hand", "0", chunked, budget, max_batch, block, 0.9, "total")


def _closed(C, isl, osl, arrivals="together"):
    return Workload(Lengths("fixed", isl), Lengths("fixed", osl), concurrency=C, arrivals=arrivals)


def _sim(w, n, prof, kv_blocks=1000):
    return simulate(None, prof, w, n, table=_table(prof.max_num_tokens), kv_blocks=kv_blocks)


def test_two_prompts_of_10_under_a_budget_of_8():
    # step 1: no decodes, r0 prefills 8 of 10            P=8  t=1.08  now 1.08
    # step 2: r0 its last 2, r1 its first 6              P=8  t=1.08  now 2.16  r0's first token
    # step 3: r0 decodes (1 token), r1 its last 4        n=1 P=4  t=1.14  now 3.30  r1's first token, r0 has 2
    # step 4: r0 and r1 decode                           n=2  t=1.20  now 4.50  r0 has 3 = OSL: done
    # step 5: r1 decodes                                 n=1  t=1.10  now 5.60  r1 done
    s = _sim(_closed(2, 10, 3), 2, _prof())
    assert s.ttft_s == pytest.approx([2.16, 3.30], abs=1e-12)
    assert s.finish_s == pytest.approx([4.50, 5.60], abs=1e-12)
    assert s.steps == 5 and s.tokens_out == 6 and s.prefill_tokens == 20 and s.preemptions == 0
    assert s.tpot_s == pytest.approx([(4.50 - 2.16) / 2, (5.60 - 3.30) / 2], abs=1e-12)


def test_whole_prompts_when_the_engine_does_not_chunk():
    # ISL 5, OSL 2, budget 8, whole prompts: step 1 r0's 5 (r1's 5 do not fit in the 3 left)  t=1.05  now 1.05
    # step 2: r0 decodes, r1's whole prompt (5 of the 7 left)  n=1 P=5  t=1.15  now 2.20  r0 done, r1 first token
    # step 3: r1 decodes                                        n=1      t=1.10  now 3.30  r1 done
    s = _sim(_closed(2, 5, 2), 2, _prof(chunked=False))
    assert s.ttft_s == pytest.approx([1.05, 2.20], abs=1e-12)
    assert s.finish_s == pytest.approx([2.20, 3.30], abs=1e-12)
    # chunked, the same prompts: step 1 r0's 5 and r1's first 3 (t=1.08), step 2 r0 decodes, r1 its last 2 (1.12)
    c = _sim(_closed(2, 5, 2), 2, _prof(chunked=True))
    assert c.ttft_s == pytest.approx([1.08, 2.20], abs=1e-12)
    assert c.finish_s == pytest.approx([2.20, 3.30], abs=1e-12)


def test_preemption_by_recompute_in_a_cache_of_three_blocks():
    # ISL 4, OSL 6, blocks of 4 tokens, 3 blocks. A decode holding K cached tokens needs a block when K % 4 == 0.
    # step 1: admit r0, r1 (1 block each), prefill both           P=8   1.08  now 1.08   both first tokens, K=4
    # step 2: both need a block, 1 free: r0 takes it, r1 (the latest admitted) is preempted
    #         r0 decodes                                           n=1   1.10  now 2.18   r0 K=5
    # step 3: r1 re-admitted (1 block), re-prefills its 4; r0      n=1 P=4 1.14 now 3.32  r0 K=6, r1 K=4
    # step 4: r1 needs a block, none free: preempted again; r0     n=1   1.10  now 4.42   r0 K=7
    # step 5: r1 re-admitted, re-prefills; r0 decodes              n=1 P=4 1.14 now 5.56  r0 K=8, r1 K=4
    # step 6: both need a block, none free: r1 preempted, r0 takes its block, decodes   1.10  now 6.66  r0 done
    # step 7: r1 re-admitted alone, re-prefills                    P=4   1.04  now 7.70
    # steps 8-12: r1 decodes its 5 remaining tokens (2 new blocks, 2 free)   5 x 1.10  now 13.20  r1 done
    s = _sim(_closed(2, 4, 6), 2, _prof(), kv_blocks=3)
    assert s.ttft_s == pytest.approx([1.08, 1.08], abs=1e-12)
    assert s.finish_s == pytest.approx([6.66, 13.20], abs=1e-12)
    assert s.preemptions == 3 and s.steps == 12 and s.max_blocks_used == 3
    assert s.tokens_out == 12 and s.prefill_tokens == 8 + 3 * 4


def test_closed_loop_issues_the_next_request_at_a_completion():
    # C = 1, ISL 8, OSL 2: step 1 prefill (1.08), step 2 decode (1.10) -> done at 2.18; request 1 arrives then,
    # steps 3-4 the same: first token at 2.18 + 1.08 = 3.26, done at 4.36
    s = _sim(_closed(1, 8, 2), 2, _prof())
    assert s.arrival_s == pytest.approx([0.0, 2.18], abs=1e-12)
    assert s.first_token_s == pytest.approx([1.08, 3.26], abs=1e-12)
    assert s.finish_s == pytest.approx([2.18, 4.36], abs=1e-12)


def test_an_arrival_waits_for_the_next_step_boundary():
    # open loop by trace: r0 at 0 (ISL 8, OSL 4), r1 at 1.5 (ISL 4, OSL 1)
    # step 1 [0, 1.08]: r0 prefill; step 2 [1.08, 2.18]: r0 decodes (r1 not yet there at 1.08)
    # step 3 [2.18, 3.32]: r1 (arrived 1.5) prefills beside r0's decode (n=1, P=4) -> r1 done (OSL 1) at 3.32
    # step 4 [3.32, 4.42]: r0's last decode -> done
    tr = Requests(np.array([0.0, 1.5]), np.array([8, 4]), np.array([4, 1]))
    w = Workload(Lengths("fixed", 1), Lengths("fixed", 1), trace=tr)
    s = _sim(w, 2, _prof())
    assert s.finish_s == pytest.approx([4.42, 3.32], abs=1e-12)
    assert s.ttft_s == pytest.approx([1.08, 3.32 - 1.5], abs=1e-12)
    assert s.queue_len.tolist() == [0, 0]
