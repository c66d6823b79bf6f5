"""Speed of serving: analytic workload points per second and simulated requests per CPU second (ratios in one run).

Targets (issue 13): analytic >= 1e6 points/s per core; simulator >= 1e5 requests/s (10,000 of 1k/1k in < 0.1 s).
Issue 27 item 8: the same through the front door, ``tk.serve`` on the same 100,000 points (its layout chosen, its
energy, $ and error-band arrays computed; rows built when read: answers/result.Rows), as a ratio against the steady
state under it in the same run; reading every row is timed apart (rows per CPU second). Two sets of 100,000 points:
random whole concurrencies 1..511 (511 distinct values; nothing is deduplicated, every point is solved) and a grid
of 100,000 distinct concurrencies evenly spaced over 1..512 (the grid figure is the one the target is read on).
Each figure is the median of REPEATS runs of process (CPU) time, with the process's allocator as it comes (the
library sets nothing process-wide).
"""

import statistics
import time

import numpy as np

from results import record
from tokenomy.answers.resolve import deployment
from tokenomy.answers.workloads import engine_profile
from tokenomy.core.layout import Layout
from tokenomy.serving.simulator import simulate
from tokenomy.serving.steady import steady
from tokenomy.serving.workload import Lengths, Workload

REPEATS = 5
SIM_REQUESTS = 10_000
ONE_AT_A_TIME = 200  # points of the one-point-per-call baseline
ROWS_READ = 10_000  # points whose rows are all read


def _cpu_s(fn) -> float:
    return statistics.median(_cpu_s1(fn) for _ in range(REPEATS))


def _ask(C):
    import tokenomy as tk

    return tk.serve("llama-3.1-70b", "hgx-h100-8", chips=8, tp=8, concurrency=C)


def _steady_and_front_door(dep, prof, C) -> tuple[float, float]:
    """Workload points per CPU-s of the steady state and of tk.serve over the same points (its rows built when read),
    the two timed in turn, REPEATS times each (medians): the ratio is within one stretch of the shared machine."""
    _ask(C[:10]).rows()  # catalog caches and the layout's lowering out of the way
    steady(dep, prof, isl=1024, osl=1024, concurrency=C[:10])
    pairs = [(_cpu_s1(lambda: steady(dep, prof, isl=1024, osl=1024, concurrency=C)), _cpu_s1(lambda: _ask(C)))
             for _ in range(REPEATS)]
    return C.size / statistics.median(p[0] for p in pairs), C.size / statistics.median(p[1] for p in pairs)


def _cpu_s1(fn) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


def _rows_rate(C) -> float:
    """Rows per CPU-s of tk.serve(...).rows(): the answer and every row of it."""
    return C.size / _cpu_s(lambda: _ask(C).rows())


def _setup():
    # the deployment tk.serve runs below (its engine's host and EP overlap on the efficiency set)
    return deployment("llama-3.1-70b", "hgx-h100-8", layout=Layout(8), serving_engine="vllm"), engine_profile("vllm", 8)


def main() -> None:
    dep, prof = _setup()
    C = np.random.default_rng(0).integers(1, 512, 100_000).astype(float)
    a, door = _steady_and_front_door(dep, prof, C)
    a_grid, door_grid = _steady_and_front_door(dep, prof, np.linspace(1.0, 512.0, 100_000))
    rows_per_s = _rows_rate(C[:ROWS_READ])
    # the baseline in the same run: the same model one point per call (what a loop over points would cost), so the
    # ratio says what vectorising buys on whatever machine runs this, beside the absolute rate
    one = C[:ONE_AT_A_TIME]
    b = ONE_AT_A_TIME / _cpu_s(lambda: [steady(dep, prof, isl=1024, osl=1024, concurrency=one[i:i + 1])
                                        for i in range(one.size)])
    w = Workload(Lengths("fixed", 1024), Lengths("fixed", 1024), concurrency=64)
    s_t = _cpu_s(lambda: simulate(dep, prof, w, SIM_REQUESTS))
    print(f"analytic: {a:,.0f} workload points per CPU second (target 1e6: {a / 1e6:.2f}x); one point per call "
          f"{b:,.0f}/s in the same run: {a / b:,.0f}x")
    print(f"tk.serve (rows built when read): {door:,.0f} workload points per CPU second = {door / a:.2f}x the steady "
          f"state under it (target 1e6: {door / 1e6:.2f}x); reading every row: {rows_per_s:,.0f} rows per CPU second")
    print(f"on a grid of 100,000 distinct concurrencies: steady state {a_grid:,.0f}, tk.serve {door_grid:,.0f} points "
          f"per CPU second (target 1e6: {door_grid / 1e6:.2f}x)")
    print(f"simulator: {SIM_REQUESTS:,} requests of 1k/1k at C=64 in {s_t:.3f} s CPU = {SIM_REQUESTS / s_t:,.0f} "
          f"requests/s (target 1e5: {SIM_REQUESTS / s_t / 1e5:.2f}x)")
    record("serve", {"analytic_points_per_cpu_s": a, "one_point_per_call_per_cpu_s": b, "analytic_vs_one_at_a_time": a / b,
                     "serve_api_points_per_cpu_s": door, "serve_api_vs_steady": door / a, "serve_rows_read_per_cpu_s": rows_per_s,
                     "analytic_grid_points_per_cpu_s": a_grid, "serve_api_grid_points_per_cpu_s": door_grid,
                     "simulator_requests_per_cpu_s": SIM_REQUESTS / s_t})


if __name__ == "__main__":
    main()
