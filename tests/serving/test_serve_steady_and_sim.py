"""Serving: the analytic steady state against the iteration-level simulator, and the invariants of both."""

import numpy as np
import pytest

from tokenomy.answers.resolve import deployment
from tokenomy.answers.workloads import BUSY_PREFILL, engine_profile
from tokenomy.core.layout import Layout
from tokenomy.serving.scheduler import sequences_held
from tokenomy.serving.simulator import simulate
from tokenomy.serving.steady import steady
from tokenomy.serving.workload import Lengths, Workload, read_trace




def _w(C, isl, osl, **kw):
    return Workload(Lengths("fixed", isl), Lengths("fixed", osl), concurrency=C, **kw)


# the grid: Llama-3.1-70B on 8 x H100 (tp8), vLLM profile, closed loop staggered, below saturation
GRID = [(C, 1024, 1024) for C in (1, 4, 16, 64)] + [(C, 2048, 256) for C in (1, 4, 16)]


@pytest.mark.parametrize("C,isl,osl", GRID)
def test_analytic_and_simulator_agree_below_saturation(dep, prof, C, isl, osl):
    # OSL uniform within ±5% of its mean: with every length fixed, all clients share one period of OSL steps and
    # the simulator phase-locks (prompts that once shared a step share it every cycle: +5% TTFT at C = 16,
    # 2048/256), an artefact of identical requests that measured benchmarks, whose lengths vary, do not show
    w = Workload(Lengths("fixed", isl), Lengths("uniform", round(0.95 * osl), round(1.05 * osl)), concurrency=C)
    s = steady(dep, prof, isl=isl, osl=osl, concurrency=[C])
    sim = simulate(dep, prof, w, max(10 * C, 100)).summary(dep.chips)
    assert not s.capacity_limited[0]
    assert sim["ttft_s"] == pytest.approx(float(s.ttft_s[0]), rel=0.05)
    assert sim["tpot_s"] == pytest.approx(float(s.tpot_s[0]), rel=0.05)


def test_tpot_is_the_engine_step_of_the_running_batch(dep, prof):
    """64 users of 1k/1k: a request holds its slot 1 + 1023 steps, one of them its whole prompt (1,024 tokens fit
    the 8,192-token budget beside the decodes), so 64 of every 1,024 steps carry a prompt and the rest only
    decodes; a request's own prompt step is before its first token, so the steps it decodes in carry the other
    63 clients' prompts: TPOT = (63/1024)·t(n, 1024) + (961/1024)·t(n, 0), each step interpolated between whole
    batches."""
    s = steady(dep, prof, isl=1024, osl=1024, concurrency=[64])
    n, P = float(s.decodes[0]), float(s.prefill_per_step[0])
    assert n == pytest.approx(64 * 1023 / 1024) and P == pytest.approx(64 * 1024 / 1024)

    def t(tokens):
        lo, hi = (float(dep.run(b, 1024 + 512, prefill_tokens=tokens, prefill_context=512.0).step_s)
                  for b in (np.floor(n), np.ceil(n)))
        return lo + (n - np.floor(n)) * (hi - lo)
    f = 63 / 1024
    assert float(s.tpot_s[0]) == pytest.approx(f * t(1024.0) + (1 - f) * t(0.0), rel=1e-12)


def test_above_saturation_capacity_limited_and_the_queue_grows(dep, prof):
    b_kv = float(sequences_held(dep, prof, 1024, 1024))
    C = int(max(b_kv, prof.max_batch)) * 2
    assert steady(dep, prof, isl=1024, osl=1024, concurrency=[C]).capacity_limited[0]
    R = 40.0  # requests/s, far above what 8 x H100 serve at 1k/1k
    assert steady(dep, prof, isl=1024, osl=1024, rate=[R]).capacity_limited[0]
    w = Workload(Lengths("fixed", 1024), Lengths("fixed", 1024), rate=R)
    sims = [simulate(dep, prof, w, n) for n in (200, 800)]
    q = [int(x.queue_len.max()) for x in sims]
    assert q[1] > 2 * q[0] > 0
    assert sims[1].summary(dep.chips)["ttft_s"] > 2 * sims[0].summary(dep.chips)["ttft_s"]


def test_seeded_and_deterministic(dep, prof):
    w = Workload(Lengths("uniform", 256, 2048), Lengths("lognormal", 5.0, 0.5), rate=4.0, seed=3)
    a, b = simulate(dep, prof, w, 300), simulate(dep, prof, w, 300)
    assert np.array_equal(a.ttft_s, b.ttft_s) and np.array_equal(a.e2e_s, b.e2e_s)
    c = simulate(dep, prof, Workload(w.isl, w.osl, rate=4.0, seed=4), 300)
    assert not np.array_equal(a.ttft_s, c.ttft_s)


def test_kv_admission_never_exceeds_the_cache(dep):
    small = engine_profile("vllm", 8, max_batch=1024)
    from dataclasses import replace
    small = replace(small, hbm_fraction=0.25)  # a cache of a few sequences: admission and preemption bind
    sim = simulate(dep, small, _w(256, 4096, 512), 600)
    assert 0 < sim.max_blocks_used <= sim.kv_blocks
    assert np.all(np.isfinite(sim.e2e_s))


def test_trace_bad_row_names_its_line(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("arrival_s,input_tokens,output_tokens\n0.0,100,10\n0.5,abc,10\n")
    with pytest.raises(ValueError, match="line 3"):
        read_trace(p)
    p.write_text("0.0,100,10\n0.1,200,20\n")
    assert len(read_trace(p)) == 2


# lengths that vary: prompts arriving together share a step, long prompts take several chunks, the prompts ahead
# push one back a step and those behind fill its last (serving/prefill_queue.closed_loop_prompt). OSL uniform within
# ±30% of its mean: within ±10% a pair of clients that co-arrived completes in one step again about 1 cycle in 27
# (vs 1 in OSL at random), so a few clients co-arrive more often than Poisson (at C = 4, 8192/128: two prompts at
# one boundary 3.5x Poisson's share), an artefact of narrow spreads; ±10% gave within 5% too but 16/8192/128 and
# 48/12000/300 (-5%, +8%). At least 1,800 requests: at 100 the mean TTFT of few clients moves +-2-3% by chance, and
# at 600 that of 48 clients at 12000/300 still moved 1.9-5.7% between seeds (3.5% at 1,800).
# The grid was chosen before the model: prompts of 1-16k tokens against the 8,192-token budget, one to three
# chunks, prefill 11-82% of the engine's time; the worst when written 4.7% (12000/300).
VARIED = [(64, 2048, 256), (128, 2048, 256), (64, 4096, 128), (32, 8192, 512), (64, 1024, 1024), (16, 8192, 128),
          (64, 8192, 256), (8, 16384, 256), (128, 4096, 512), (32, 4096, 64), (48, 12000, 300)]


@pytest.mark.parametrize("C,isl,osl", VARIED)
def test_ttft_with_shared_and_chunked_prefill_matches_the_simulator(dep, prof, C, isl, osl):
    w = Workload(Lengths("fixed", isl), Lengths("uniform", round(0.7 * osl), round(1.3 * osl)), concurrency=C)
    s = steady(dep, prof, isl=isl, osl=osl, concurrency=[C])
    sim = simulate(dep, prof, w, max(12 * C, 1800)).summary(dep.chips)
    assert sim["ttft_s"] == pytest.approx(float(s.ttft_s[0]), rel=0.05)
    assert sim["tpot_s"] == pytest.approx(float(s.tpot_s[0]), rel=0.05)


# an engine that schedules whole prompts (TensorRT-LLM's default): one 4096-token prompt ahead under an 8,192-token
# budget holds the next a step even where its tokens would fit; Qwen3-30B-A3B (MoE) on 2 x H200 under the trtllm profile
WHOLE = [(8, 4096, 128), (16, 2048, 256), (64, 1024, 1024), (16, 4096, 512), (32, 2048, 256)]


@pytest.mark.parametrize("C,isl,osl", WHOLE)
def test_whole_prompt_engine_matches_the_simulator(C, isl, osl):
    dep = deployment("qwen3-30b-a3b", "hgx-h200-8", layout=Layout(2))
    prof = engine_profile("trtllm", 2)
    assert not prof.chunked_prefill
    w = Workload(Lengths("fixed", isl), Lengths("uniform", round(0.7 * osl), round(1.3 * osl)), concurrency=C)
    s = steady(dep, prof, isl=isl, osl=osl, concurrency=[C])
    assert float(s.prefill_share[0]) < BUSY_PREFILL
    sim = simulate(dep, prof, w, max(12 * C, 1800)).summary(dep.chips)
    assert sim["ttft_s"] == pytest.approx(float(s.ttft_s[0]), rel=0.05)
    assert sim["tpot_s"] == pytest.approx(float(s.tpot_s[0]), rel=0.05)
