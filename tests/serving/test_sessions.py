"""Session workloads (serving/sessions.py), their traces (serving/session_trace.py) and the tiers' LRU
(serving/kv_cache_tiers.py): each checked against what the docstrings say, on hand-built cases."""

import json

import numpy as np
import pytest

import tokenomy as tk
from tokenomy.serving.kv_cache_tiers import SYSTEM, TieredCache, TierLevel, TierStack
from tokenomy.serving.session_trace import read_session_trace
from tokenomy.serving.sessions import Agentic, MultiTurn, generate


def test_a_sessions_context_grows_by_each_turns_input_and_output():
    plan = generate(MultiTurn(turns=5, think_s=3.0), 3, seed=2)
    for a in range(3):
        rs = np.flatnonzero(plan.agent == a)
        assert list(plan.turn[rs]) == [0, 1, 2, 3, 4]
        new = plan.isl[rs[1:]] - plan.isl[rs[:-1]] - plan.osl[rs[:-1]]  # this turn's new tokens
        assert np.all(new >= 1)
        # the object reusable at turn k is everything the agent sent and generated before it
        assert plan.ctx_before[rs[0]] == 0
        assert np.all(plan.ctx_before[rs[1:]] == plan.isl[rs[:-1]] - plan.system_tokens + plan.osl[rs[:-1]])
        assert plan.waits[rs[0]] == 0 and np.all(plan.waits[rs[1:]] == 1)


def test_sub_agents_fork_from_the_parents_context_and_the_parent_waits_for_them():
    w = Agentic(turns=4, subagents=2, subagent_every=2, subagent_turns=3, think_s=1.0)
    plan = generate(w, 1)
    subs = np.flatnonzero(plan.parent >= 0)
    assert len(subs) == 2  # one spawn (after turn 2 of 4), two sub-agents
    main = np.flatnonzero(plan.agent == 0)
    spawner = main[1]
    for c in subs:
        first = np.flatnonzero(plan.agent == c)[0]
        # the fork is the parent's whole context after the spawning turn
        assert plan.fork_tokens[c] == plan.isl[spawner] - plan.system_tokens + plan.osl[spawner]
        assert plan.isl[first] > plan.isl[spawner] + plan.osl[spawner]
        assert plan.chain(first)[0] == (0, plan.fork_tokens[c])
    assert plan.waits[main[2]] == 2  # fork-join: the parent's next turn waits for both sub-agents


def test_negative_think_time_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="^think_s: "):
        MultiTurn(think_s=-1.0)


def test_tokenomy_csv_trace_with_a_sub_agent(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("session_id,parent_id,timestamp_s,new_input_tokens,output_tokens\n"
                 "a,,0,100,10\na,,5,20,10\nb,a,6,30,5\n")
    plan = read_session_trace(f)
    assert list(plan.isl) == [100, 130, 170]  # a's 2nd turn: 100 + 10 + 20; b forks from a's 130 + 10 = 140
    assert plan.fork_tokens[1] == 140 and plan.parent[1] == 0
    assert list(plan.start_s) == [0.0, 5.0, 6.0]


def test_trace_turn_whose_parent_does_not_exist_names_the_line(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text(json.dumps({"session_id": "x", "parent_id": "ghost", "timestamp_s": 0, "new_input_tokens": 5,
                             "output_tokens": 5}) + "\n")
    with pytest.raises(ValueError, match=r"^trace: t.jsonl line 1: parent_id 'ghost' names no earlier session"):
        read_session_trace(f)


def test_aiperf_sessions_accumulate_history_and_delays_follow_the_previous_turn(tmp_path):
    f = tmp_path / "a.jsonl"
    rows = [{"session_id": "s1", "input_length": 100, "output_length": 20, "timestamp": 0},
            {"session_id": "s1", "input_length": 50, "output_length": 20, "delay": 2000},
            {"session_id": "s2", "input_length": 70, "output_length": 7, "timestamp": 500}]
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    plan = read_session_trace(f)
    assert list(plan.isl) == [100, 170, 70]  # 100 + 20 + 50: AIPerf carries the history
    assert plan.succ[0] == (1,) and plan.gap_s[1] == 2.0 and np.isnan(plan.start_s[1])
    assert plan.start_s[2] == 0.5


def test_mooncake_requests_fork_from_the_longest_shared_hash_prefix(tmp_path):
    f = tmp_path / "m.jsonl"
    rows = [{"timestamp": 0, "input_length": 1500, "output_length": 10, "hash_ids": [1, 2, 3]},
            {"timestamp": 10, "input_length": 1200, "output_length": 10, "hash_ids": [1, 2, 9]},
            {"timestamp": 20, "input_length": 600, "output_length": 10, "hash_ids": [7, 8]}]
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    plan = read_session_trace(f)
    assert plan.parent[1] == 0 and plan.fork_tokens[1] == 2 * 512  # two 512-token blocks shared
    assert plan.parent[2] == -1
    assert list(plan.isl) == [1500, 1200, 600]


def _stack(store, hbm=100.0, ddr=300.0, s_read=1e-6, s_pre=1e-4):
    return TierStack((TierLevel("hbm", hbm, 0.0), TierLevel("ddr", ddr, s_read, 0.0)), store,
                     prefill_s_per_token=s_pre)


def test_lru_evicts_the_least_recent_and_on_evict_moves_it_down():
    c = TieredCache(_stack("on-evict"))
    for key in (1, 2, 3):
        c.finish(key, 40.0)  # 120 tokens in a 100-token HBM: key 1 is the least recent
    assert 1 not in c.lru[0] and c.lru[1][1] == 40.0
    hit, per = c.lookup([(1, 40.0)], 50.0)
    assert hit == 40.0 and per == [0.0, 40.0]
    assert 1 in c.lru[0] and 1 not in c.lru[1]  # read back into HBM, gone from DRAM (exclusive tiers)


def test_write_through_keeps_a_copy_below_and_the_rule_skips_a_slow_read():
    c = TieredCache(_stack("write-through"))
    c.finish(1, 80.0)
    c.finish(2, 80.0)  # evicts 1 from HBM; DRAM kept its own copy
    assert 1 not in c.lru[0] and 1 in c.lru[1] and 2 in c.lru[1]
    slow = TieredCache(_stack("write-through", s_read=1e-3, s_pre=1e-4))  # reading 10x slower than recomputing
    slow.finish(1, 80.0)
    slow.finish(2, 80.0)
    hit, per = slow.lookup([(1, 80.0)], 100.0)
    assert hit == 0.0 and slow.skipped == 80.0


def test_a_prefix_chain_stops_at_its_first_miss():
    c = TieredCache(_stack("write-through", hbm=1000.0, ddr=1000.0))
    c.finish(SYSTEM, 10.0)
    c.finish(5, 30.0)
    hit, _ = c.lookup([(SYSTEM, 10.0), (7, 20.0), (5, 30.0)], 100.0)  # 7 is not cached: 5 cannot be used after it
    assert hit == 10.0


def test_the_session_simulator_on_a_hand_worked_trace(tmp_path):
    """Three requests on a 10-block (160-token) KV pool with a DRAM tier under it (write-through; read 1 us/token
    after 1 ms, recompute 1 ms/token): a's first turn (100 new + 10 out) leaves its 110-token context in HBM; c
    (120 + 10), arriving at 1 s when nothing runs, misses, and storing its 130 tokens evicts a's from HBM (240 > 160),
    DRAM keeping its copy; a's second turn (20 new) at 5 s finds its 110 tokens in DRAM, reads them (1 ms +
    110 us < 110 ms of recompute) and computes 20. So hit tokens 0, 0, 110 of 100 + 120 + 130 input tokens, and a's
    second turn waits 1.11 ms for its load after the tokenizer's 130 tokens. When it is admitted the engine looks
    again (vLLM's Scheduler.schedule: get_computed_blocks, then the connector): HBM still holds the first 30 tokens
    of a's context (its tail was evicted first), the other 80 come from DRAM."""
    from tokenomy.answers.engines import engine_profile
    from tokenomy.answers.resolve import deployment
    from tokenomy.core.layout import Layout
    from tokenomy.serving.sim_sessions import simulate_sessions

    f = tmp_path / "t.csv"
    f.write_text("session_id,parent_id,timestamp_s,new_input_tokens,output_tokens\n"
                 "a,,0,100,10\nc,,1,120,10\na,,5,20,10\n")
    plan = read_session_trace(f)
    stack = TierStack((TierLevel("hbm", 0.0, 0.0), TierLevel("ddr", 1000.0, 1e-6, 1e-3)), prefill_s_per_token=1e-3)
    dep = deployment("llama-3.1-8b", "h100-sxm", layout=Layout(1))
    prof = engine_profile("vllm", 1)
    sim = simulate_sessions(dep, prof, plan, stack, 10)
    order = np.argsort(sim.sim.arrival_s)
    assert list(sim.sim.arrival_s[order]) == [0.0, 1.0, 5.0]
    assert list(sim.hit_tokens[order]) == [0.0, 0.0, 110.0]
    assert sim.hit_rate == pytest.approx(110.0 / 350.0, rel=1e-12)
    assert sim.hit_by_tier == pytest.approx({"hbm": 30.0 / 350.0, "ddr": 80.0 / 350.0}, rel=1e-12)
    tok = prof.tokenize_s_per_token  # the API server tokenizes each prompt before its lookup (nothing else queued)
    assert sim.load_wait_s[order] == pytest.approx([100 * tok, 120 * tok, 130 * tok + 1e-3 + 110 * 1e-6], rel=1e-9)
    assert np.all(sim.sim.e2e_s[order][:2] < 1.0)  # each turn done before the next arrives (the case's premise)


def test_decode_rows_overflowing_at_every_context_continue_linearly_in_n():
    # n decodes sharing prefixes run where the engine's unshared pass answers inf at every context (the block pool
    # counts a shared block once): the row continues the last two finite rows, so the clock never meets NaN
    from tokenomy.serving.sim_sessions import _extrapolated

    t = np.array([[[1.0, 2.0]], [[2.0, 3.0]], [[3.0, 4.5]], [[np.inf, np.inf]], [[np.inf, np.inf]]])
    out = _extrapolated(t)
    assert np.all(np.isfinite(out))
    assert out[3].tolist() == [[4.0, 6.0]] and out[4].tolist() == [[5.0, 7.5]]


def test_an_open_loop_of_agentic_sessions_finishes_with_finite_times():
    # rate 0.2 sessions/s of agentic trees on one H100 with Llama-3.1-8B: 25 decodes sharing prefixes overflow the
    # unshared pass at every context; the simulator used to wait on a NaN clock forever
    row = tk.serve("llama-3.1-8b", "h100-sxm", workload="agentic", rate=0.2, method="simulate").rows()[0]
    assert np.isfinite(row["ttft_s"]) and np.isfinite(row["tpot_s"]) and 0.0 < row["hit_rate"] < 1.0
