"""The analytic session state picks the branch the session simulator runs on. DeepSeek-V3 on one GB200 NVL72 (tp8
dp9 kv-batch), 4,096 agentic sessions, think 4 s, LMCache's tiers: with no DRAM the solve landed on a congested
branch — every sub-agent's fork counted as pinned while its turn waited for the NVMe read channel, HBM's hit rate
0.41 and a 164 s wait for the channel — while 240 GB of DRAM put HBM at 0.96 and the wait at 0.18 s. The simulator
looks a turn up on arrival and pins its blocks when the scheduler admits it (sim_session_run), and puts the same
share in HBM with and without the DRAM (0.506 / 0.507), its read channel waiting 0.84 s at no DRAM (tokenomy serve
... --method simulate --requests 6000, 2026-12-05, before its admission followed the token budget:
docs/serving.md): the wait before admission leaves an object unreferenced,
whichever queue it is spent in (session_state.state_at, kv_che's W)"""

import pytest

import tokenomy as tk


@pytest.fixture(scope="module")
def rows():
    return tk.serve("deepseek-v3", "gb200-nvl72", workload="agentic", concurrency=4096, think_s=4.0,
                    kv_tiering="lmcache", dram_bytes=[0, 240e9], tp=8, dp=9, kv_batch=True).rows()


def test_no_congested_read_channel_without_dram(rows):
    no_dram, _ = rows
    assert no_dram["load_wait_s"] < 10.0  # the simulator's: 0.84 s


def test_a_tier_that_serves_no_hits_leaves_hbm_as_it_was(rows):
    no_dram, dram = rows
    assert abs(dram["hit_hbm"] - no_dram["hit_hbm"]) < 0.05
