"""The analytic session state past saturation, on the branch the session simulator runs on. DeepSeek-V3 on one GB200
NVL72 (tp8 dp9 kv-batch), 4,096 agentic sessions, think 4 s, LMCache's tiers. The engine looks a turn's prefix up when
it admits it (vLLM's Scheduler.schedule), so a context ages through the think gap and the whole queue: HBM alone no
longer keeps the waiting sessions' contexts and the trays' NVMe serves most of the input. The simulator, looking up
again at admission (sim_session_run.admit_blocks), with no DRAM: hit 0.960 (HBM 0.543, NVMe 0.417), its NVMe read
channel waiting 109 s, TTFT 118 s (tokenomy serve ... --method simulate, 2026-12-06); the analytic state: 0.960, HBM
0.32, 229 s. Earlier the solve had landed on two branches (HBM 0.41 with no DRAM, 0.96 with 240 GB) when it counted a
fork as pinned while its turn waited for a read; the wait before admission leaves an object unreferenced, whichever
queue it is spent in (session_state.state_at, kv_che's W), and a tier that serves no hits leaves HBM as it was."""

import pytest

import tokenomy as tk


# the module's tests in one xdist worker (make test: --dist loadgroup), which serves the rows once (~10 CPU-s)
pytestmark = pytest.mark.xdist_group("session_branch_rows")


@pytest.fixture(scope="module")
def rows():
    return tk.serve("deepseek-v3", "gb200-nvl72", workload="agentic", concurrency=4096, think_s=4.0,
                    kv_tiering="lmcache", dram_bytes=[0, 240e9], tp=8, dp=9, kv_batch=True).rows()


def test_the_nvme_channel_serves_the_queued_contexts_as_in_the_simulator(rows):
    no_dram, _ = rows
    assert no_dram["hit_rate"] == pytest.approx(0.960, rel=0.05)  # the simulator's
    assert 10.0 < no_dram["load_wait_s"] < 1000.0  # the simulator's channel: 109 s


def test_a_tier_that_serves_no_hits_leaves_hbm_as_it_was(rows):
    no_dram, dram = rows
    assert abs(dram["hit_hbm"] - no_dram["hit_hbm"]) < 0.05
