"""Layout-search speed: the vectorised search vs the same plan engine called one candidate at a time.

Problem: DeepSeek-V3 (fp8 weights, bf16 KV) on GB200 NVL72 racks, a budget of 1,152 chips (16 racks), context
8,192, min 20 tokens/s per user, TTFT <= 2 s; every candidate plan (tp x ep x pp x dp x attention/KV layout)
crossed with 111 distinct batch sizes in 1..65,536. Both measurements run in this process on one core; we print
the median of repeated runs and the ratio, by wall clock and by this process's CPU time (robust to other load). The loop evaluates a random sample of the same candidates (decode and the
plan's TTFT prefill, exactly as the search does) and is timed per candidate.
Also: `tokenomy plan --mode disagg` for DeepSeek-V3 on 4 GB200 NVL72 racks (288 chips) as a CLI process, wall
clock, median of 3 (issue 13 item 6: < 2 s).
Run: .venv/bin/python benchmarks/search.py          (--smoke: a few candidates and repeats, no CLI process: checks
the benchmark runs; its figures mean nothing)
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: the target is per core
    os.environ.setdefault(_v, "1")

import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from tokenomy.answers.resolve import efficiency_of  # noqa: E402
from tokenomy.catalog import loader  # noqa: E402
from tokenomy.core.deployment import Deployment  # noqa: E402
from tokenomy.core.layout import Layout  # noqa: E402
from tokenomy.parallel.search import Constraints, candidate_layouts, search  # noqa: E402

from results import record  # noqa: E402
from sweep import timed  # noqa: E402  (benchmarks/sweep.py: median rate of repeated runs)

MODEL, HARDWARE, DTYPE, CHIPS = "deepseek-v3", "gb200-nvl72", "fp8", 1152
CONS = Constraints(context=8192, min_tokens_per_s_per_user=20, max_ttft_s=2.0)


def setup():
    hw = loader.hardware(HARDWARE)
    dep = Deployment(loader.model(MODEL), hw, weight_dtype=DTYPE, eff=efficiency_of(hw))
    batches = np.unique(np.geomspace(1, 65536, 128).round())
    return dep, batches


def vectorised(dep, batches):
    r = search(dep, chips=CHIPS, constraints=CONS, batches=batches)
    return r.candidates


def one_at_a_time(dep, batches, samples=2000):
    plans = candidate_layouts(dep.shape, CHIPS, dep.topo.domain_size)
    rng = np.random.default_rng(0)
    C = CONS.context
    n = np.size(plans.tp)
    for _ in range(samples):
        i, B = int(rng.integers(n)), float(batches[rng.integers(batches.size)])
        p = plans.at((n,), i)
        d = dep.with_(layout=p).run(B, C, 1.0)
        one = Layout(p.tp, p.ep, p.pp, p.dp, p.attn_dp, p.kv_batch, microbatches=1,
                     redundant_experts=p.redundant_experts)
        t = dep.with_(layout=one).run(float(p.dp), C, C)
        _ = (d.reason == 0) & (d.tokens_per_s_per_user >= CONS.min_tokens_per_s_per_user) & (t.step_s <= 2.0)
    return samples


def cpu_rate(fn, *args, repeats=5):
    """Median configs per CPU-second of this (single-threaded) process: other load on the machine does not count."""
    rates = []
    for _ in range(repeats):
        t0 = time.process_time()
        n = fn(*args)
        rates.append(n / (time.process_time() - t0))
    return statistics.median(rates)


DISAGG_PLAN = ["plan", "--model", MODEL, "--hardware", HARDWARE, "--chips", "288", "--mode", "disagg",
               "--concurrency", "256,1024", "--isl", "4096", "--osl", "1024", "--engine", "sglang", "--ttft-slo", "2",
               "--tpot-slo", "0.05", "--top", "1"]


def cli_wall_s(args, repeats=3) -> float:
    """Median wall seconds of ``tokenomy <args>`` as a fresh process (start-up included)."""
    import subprocess
    import sys
    from pathlib import Path

    exe = Path(sys.executable).with_name("tokenomy")
    walls = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run([str(exe), *args], check=True, capture_output=True)
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls)


def main(smoke: bool = False) -> None:
    dep, batches = setup()
    samples, reps = (20, 1) if smoke else (2000, 3)
    vec_rate, n = timed(lambda: vectorised(dep, batches), 1 if smoke else 5)
    loop_rate, m = timed(lambda: one_at_a_time(dep, batches, samples), reps)
    vec_cpu = cpu_rate(vectorised, dep, batches, repeats=1 if smoke else 5)
    loop_cpu = cpu_rate(one_at_a_time, dep, batches, samples, repeats=reps)
    print(f"search: {MODEL} on <= {CHIPS} x {dep.hardware.chip.name} ({HARDWARE}), context {CONS.context:g}, "
          f"{batches.size} batches: {n:,} candidate configurations (plan x batch)")
    print(f"vectorised search:  {vec_rate:,.0f} configs/s wall, {vec_cpu:,.0f} per CPU-second "
          f"(median of 5; Pareto front and TTFT included)")
    print(f"one at a time:      {loop_rate:,.0f} configs/s wall, {loop_cpu:,.0f} per CPU-second (median of 3 x {m})")
    print(f"ratio:              {vec_rate / loop_rate:,.0f}x wall, {vec_cpu / loop_cpu:,.0f}x CPU")
    if smoke:
        return
    wall = cli_wall_s(DISAGG_PLAN)
    record("search", {"candidates_per_s": vec_rate, "one_at_a_time_per_s": loop_rate,
                      "vs_one_at_a_time": vec_rate / loop_rate, "candidates_per_cpu_s": vec_cpu,
                      "vs_one_at_a_time_cpu": vec_cpu / loop_cpu, "plan_disagg_cli_s": wall})
    print(f"plan --mode disagg: {MODEL} on 288 x {dep.hardware.chip.name} (4 racks), concurrency 256,1024, 4k/1k: "
          f"{wall:.2f} s wall as a CLI process (median of 3; target < 2 s: {2.0 / wall:.1f}x inside it)")


if __name__ == "__main__":
    import sys

    main(smoke="--smoke" in sys.argv[1:])
