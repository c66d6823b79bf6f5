"""Speed of session serving (issue 28): analytic multi-turn steady state points per CPU second, and the session
simulator's requests per CPU second on an agentic plan (ratios in one run, medians of REPEATS).

Targets: analytic >= 1e5 workload points per CPU-s; simulator >= 50,000 requests per CPU-s on an agentic trace.
The plain solve (solve_plain: every e2e root from the wide bracket, the scan at once) is timed on a tenth of the points.
The simulator's figure counts the loop over the plan (its step table built once beforehand, as a sweep reuses it).
"""


import numpy as np

from results import cpu_s, record
from tokenomy.answers.resolve import deployment
from tokenomy.answers.workloads import engine_profile
from tokenomy.core.layout import Layout
from tokenomy.serving.kv_cache_tiers import TierLevel, TierStack
from tokenomy.serving.scheduler import kv_tokens, pooled_limits
from tokenomy.serving.session_state import pool_tokens, problem
from tokenomy.serving.session_steady import session_steady, solve_plain
from tokenomy.serving.sessions import Agentic, MultiTurn, generate
from tokenomy.serving.sim_sessions import simulate_sessions, step_table

REPEATS = 3
POINTS = 100_000
SESSIONS = 400  # agentic session trees: 400 x (24 + 2 x 2 x 8) = 22,400 requests


def _cpu_s(fn) -> float:
    return cpu_s(fn, REPEATS)


def main() -> None:
    dep, prof = deployment("llama-3.1-8b", "h100-sxm", layout=Layout(1)), engine_profile("vllm", 1)
    bpt = float(np.ravel(kv_tokens(dep, prof, 8192.0).bytes_per_token)[0])
    w = MultiTurn()
    pool = pool_tokens(dep, prof, w)
    stack = TierStack((TierLevel("hbm", 0.0, 0.0), TierLevel("ddr", 0.0, bpt / 64e9, 1e-5)), prefill_s_per_token=3e-5)
    rng = np.random.default_rng(0)
    C = rng.integers(1, 256, POINTS).astype(float)
    ddr = rng.uniform(0.0, 4e6, POINTS)[:, None]
    session_steady(dep, prof, w, stack, ddr[:10], concurrency=C[:10], pool=pool)
    a_t = _cpu_s(lambda: session_steady(dep, prof, w, stack, ddr, concurrency=C, pool=pool))
    part = POINTS // 10  # the plain solve (no warm starts) on the first tenth, in the same run
    p_t = _cpu_s(lambda: solve_plain(problem(dep, prof, w, stack, ddr[:part],
                                                     concurrency=C[:part], pool=pool)))
    one = 20
    b_t = _cpu_s(lambda: [session_steady(dep, prof, w, stack, ddr[i:i + 1], concurrency=C[i:i + 1], pool=pool)
                          for i in range(one)])
    ag = Agentic()
    plan = generate(ag, SESSIONS, seed=0)
    stack2 = TierStack((TierLevel("hbm", 0.0, 0.0), TierLevel("ddr", 2e6, bpt / 64e9, 1e-5)))
    blocks = int(pool_tokens(dep, prof, ag) // prof.block_size)
    n_max = int(min(pooled_limits(prof, dep.layout, 0.0, 0.0)[0], blocks))
    table = step_table(dep, prof, plan, n_max, int(pooled_limits(prof, dep.layout, float(plan.isl.max()), n_max)[1]))
    s_t = _cpu_s(lambda: simulate_sessions(dep, prof, plan, stack2, blocks, concurrency=8, table=table,
                                           stagger_s=ag.turns * ag.think_s))
    a, b, s, p = POINTS / a_t, one / b_t, len(plan) / s_t, part / p_t
    print(f"analytic sessions: {a:,.0f} workload points per CPU second (target 1e5: {a / 1e5:.2f}x); one point per "
          f"call {b:,.0f}/s in the same run: {a / b:,.0f}x; the plain solve (no warm starts) {p:,.0f}/s: {a / p:.2f}x")
    print(f"session simulator: {len(plan):,} agentic requests in {s_t:.3f} s CPU = {s:,.0f} requests/s "
          f"(target 5e4: {s / 5e4:.2f}x)")
    record("sessions", {"analytic_points_per_cpu_s": a, "one_point_per_call_per_cpu_s": b,
                        "analytic_vs_one_at_a_time": a / b,
                        "plain_solve_points_per_cpu_s": p, "analytic_vs_plain_solve": a / p, "simulator_requests_per_cpu_s": s})


if __name__ == "__main__":
    main()
