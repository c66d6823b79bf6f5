"""The analytic hit rates' own invariants (serving/kv_che.py inside serving/session_steady.py): the characteristic time
fills the capacity, the hit rate tends to the reusable share, the fork held through its sub-agents' run, the tabulated
and warm-started solves against the plain one. Their agreement with the session simulator over a stated grid:
tests/serving/test_session_agreement.py."""

from dataclasses import replace

import numpy as np
import pytest

from tokenomy.answers.engines import engine_profile
from tokenomy.answers.resolve import deployment
from tokenomy.core.layout import Layout
from tokenomy.serving.kv_cache_tiers import TierLevel, TierStack
from tokenomy.serving.kv_capacity import kv_tokens
from tokenomy.serving.kv_che import characteristic_time, occupancy
from tokenomy.serving.session_state import problem
from tokenomy.serving.session_steady import session_steady
from tokenomy.serving.turn_types import turn_types
from tokenomy.serving.sessions import Agentic, MultiTurn

LONG = MultiTurn(turns=12, new_input_tokens=1500, think_s=30.0)
AGENT = Agentic(turns=12, subagent_every=4, subagent_turns=4, system_prompt_tokens=4000, new_input_tokens=1500,
                think_s=10.0)


@pytest.fixture(scope="module")
def one_h100():
    dep = deployment("llama-3.1-8b", "h100-sxm", layout=Layout(1))
    prof = engine_profile("vllm", 1)
    return dep, prof, float(np.ravel(kv_tokens(dep, prof, 8192.0).bytes_per_token)[0])


def test_the_characteristic_time_fills_the_capacity_and_grows_with_it():
    tt = turn_types(LONG)
    caps = np.array([1e5, 4e5, 1.6e6])
    T = characteristic_time(caps, tt, 0.05, 30.0, 0.0)
    assert np.all(np.diff(T) > 0)
    assert occupancy(T, tt, 0.05, 30.0, 0.0) == pytest.approx(caps, rel=1e-5)


def test_the_hit_rate_tends_to_the_reusable_share_with_unbounded_capacity(one_h100):
    """Everything held: each turn recomputes only its new tokens (independent count from the workload's means)."""
    dep, prof, _ = one_h100
    w = replace(LONG, think_s=1.0)
    a = session_steady(dep, prof, w, TierStack((TierLevel("hbm", 0.0, 0.0),)), np.zeros(0), concurrency=1.0,
                       pool=1e12)
    K, S = w.turns, w.system_prompt_tokens
    isl = [S + w.first_input_tokens] + [S + w.first_input_tokens + w.output_tokens +
                                        (k - 1) * (w.new_input_tokens + w.output_tokens) + w.new_input_tokens
                                        for k in range(1, K)]
    new = [w.first_input_tokens] + [w.new_input_tokens] * (K - 1)
    assert float(a.hits.hit_rate) == pytest.approx(1 - sum(new) / sum(isl), rel=1e-3)


def test_the_tabulated_steady_state_stays_near_the_solved_one(one_h100):
    """steady_table (the sweep's shortcut) against steady.steady on random points below 80% of the capacity."""
    from tokenomy.serving.steady import Prefix, steady
    from tokenomy.serving.steady_table import SteadyTable

    dep, prof, _ = one_h100
    isl, osl = 3925.0, 250.0
    tab = SteadyTable(dep, prof, isl, osl, closed=False)
    rng = np.random.default_rng(3)
    hit = rng.uniform(0.0, 0.95, 60)
    top = np.interp(hit, tab.hits, np.nanmax(tab.grid["requests_per_s"], axis=0))
    X = rng.uniform(0.05, 0.8, 60) * top
    exact = steady(dep, prof, isl=isl, osl=osl, rate=X, prefix=Prefix(hit))
    got = tab(X, hit)
    ok = np.isfinite(exact.ttft_s) & ~exact.capacity_limited
    assert ok.sum() > 40
    assert np.allclose(got.ttft_s[ok], exact.ttft_s[ok], rtol=0.03)
    assert np.allclose(got.e2e_s[ok], exact.e2e_s[ok], rtol=0.03)


def test_the_session_steady_state_is_a_fixed_point_whatever_the_step_budget(monkeypatch):
    """DeepSeek-V3 on one tp8 replica of a GB200 NVL72 rack, agentic, think 30 s, 1,024 sessions over 9 replicas,
    HBM only: a plain iteration settled at TTFT 0.4, 0.7 or 1.5 s by its iteration count. The solve's answer is a
    true fixed point (the hit rate maps onto itself, the e2e onto itself) and the same under any step budget."""
    import tokenomy.serving.roots as roots
    import tokenomy.serving.session_state as st
    import tokenomy.serving.session_steady as ss

    dep = deployment("deepseek-v3", "gb200-nvl72", layout=Layout(8))
    prof = engine_profile("vllm", 8)
    w, stack = Agentic(think_s=30.0), TierStack((TierLevel("hbm", 0.0, 0.0),))
    args = (dep, prof, w, stack, np.zeros(0))
    a = session_steady(*args, concurrency=1024 / 9)
    h, e2e = float(a.hits.hit_rate), float(a.e2e_s)
    pb = st.problem(*args, concurrency=1024 / 9)
    assert float(ss.hit_map(pb, h)) == pytest.approx(h, abs=1e-4)
    assert float(st.state_at(pb, h, np.asarray(e2e))[0]) == pytest.approx(e2e, rel=1e-4)
    for steps in (25, 200):
        monkeypatch.setattr(roots, "STEPS", steps)
        b = session_steady(*args, concurrency=1024 / 9)
        assert float(b.hits.hit_rate) == pytest.approx(h, abs=1e-4)
        assert float(b.ttft_s) == pytest.approx(float(a.ttft_s), rel=1e-3)


@pytest.mark.parametrize("closed", [True, False])
def test_the_warm_started_solve_equals_the_plain_well_defined_solve(one_h100, closed):
    """solve_warm (session_steady's path for many points) warm-starts each e2e root from its neighbouring scan
    cell (and the crossing from its cell's ends); solve_plain solves every root from the wide bracket, the scan's
    cells at once. On the same problem, over points
    from idle to past the replica's capacity (the closed loop's jump), with and without DRAM, the answers agree
    within the solve's tolerances."""
    import tokenomy.serving.session_steady as ss

    dep, prof, bpt = one_h100
    stack = TierStack((TierLevel("hbm", 0.0, 0.0), TierLevel("ddr", 0.0, bpt / 64e9, 1e-5)), prefill_s_per_token=3e-5)
    rng = np.random.default_rng(3)
    n = 40
    load = rng.uniform(1.0, 400.0, n) if closed else rng.uniform(0.005, 0.3, n)
    kw = dict(concurrency=load) if closed else dict(rate=load)
    args = (dep, prof, LONG, stack, rng.uniform(0.0, 4e6, n)[:, None])
    think = rng.uniform(1.0, 60.0, n)
    pb = problem(*args, think_s=think, **kw)
    fast, plain = ss.solve_warm(pb), ss.solve_plain(pb)
    assert np.allclose(fast.hits.hit_rate, plain.hits.hit_rate, atol=1e-4)
    assert np.array_equal(np.isfinite(fast.ttft_s), np.isfinite(plain.ttft_s))
    ok = np.isfinite(plain.ttft_s)
    assert ok.sum() > n // 2
    assert np.allclose(fast.ttft_s[ok], plain.ttft_s[ok], rtol=1e-3)
    assert np.allclose(fast.e2e_s[ok], plain.e2e_s[ok], rtol=1e-3)
    assert np.array_equal(fast.bistable, plain.bistable)



def _fork_held_by_hand(T, theta, e2e, subs, turns, n, rng):
    """Monte Carlo of a fork's hold: s sub-agents each run ``turns`` turns of (Exp(θ) think, e2e run) from the
    parent's turn; the fork is held through every busy stretch, for min(window, T) in each window when all think,
    then min(Exp(θ), T) after the last finishes (the parent's gap)."""
    total = 0.0
    for _ in range(n):
        busy = []
        for _ in range(subs):
            t = 0.0
            for _ in range(turns):
                t += rng.exponential(theta)
                busy.append((t, t + e2e))
                t += e2e
        busy.sort()
        held, cur = 0.0, 0.0
        for a, b in busy:
            held += min(a - cur, T) if a > cur else 0.0
            held += max(b - max(a, cur), 0.0)
            cur = max(cur, b)
        total += held + min(rng.exponential(theta), T)
    return total / n


@pytest.mark.parametrize("T,theta,e2e", [(84.0, 10.0, 7.7), (20.0, 10.0, 7.7), (500.0, 4.0, 50.0)])
def test_a_fork_is_held_through_its_sub_agents_run(T, theta, e2e):
    """The occupancy's fork term (kv_che's module docstring: held_fork = D·(1 − q·e^{−sT/θ}) + θ·(1 − e^{−T/θ}),
    D to the slowest sub-agent's end) against a Monte Carlo of the sub-agents' busy and idle windows, within 2.5%
    at T >= 2θ. Read off the occupancy: with and without the spawn flags, the difference is λ·F·(held_fork − the
    plain object's θ·(1 − e^{−T/θ}))."""
    tt = turn_types(AGENT)
    plain = replace(tt, spawn=np.zeros_like(tt.spawn))
    lam = 0.05
    D = tt.sub_run_s(e2e, theta)
    F = float(np.sum((tt.n * tt.obj)[tt.spawn]))
    extra = (occupancy(T, tt, lam, theta, D) - occupancy(T, plain, lam, theta, D)) / (lam * F)
    model = float(extra) + theta * -np.expm1(-T / theta)
    mc = _fork_held_by_hand(T, theta, e2e, AGENT.subagents, AGENT.subagent_turns, 4000, np.random.default_rng(2))
    assert model == pytest.approx(mc, rel=0.025)


def test_a_sub_agents_e2e_is_read_back_from_its_spawns_run():
    """D = K_sub·e2e + sub_thinks·θ (TurnTypes.sub_run_s) and e2e = (D − sub_thinks·θ)/K_sub (sub_e2e_s, what the
    fork's occupancy and the siblings' share both read), 0 where D is shorter than the think gaps."""
    tt = turn_types(AGENT)
    e2e, theta = np.array([0.0, 7.7, 50.0]), np.array([10.0, 10.0, 4.0])
    np.testing.assert_allclose(tt.sub_e2e_s(tt.sub_run_s(e2e, theta), theta), e2e, rtol=1e-12, atol=1e-12)
    assert tt.sub_turns == AGENT.subagent_turns and tt.sub_thinks > 1.0  # the slowest of s sums > one's
    assert tt.sub_e2e_s(0.5 * tt.sub_thinks * 10.0, 10.0) == 0.0


def test_a_turn_queued_longer_than_the_cache_keeps_it_finds_only_the_system_prompt():
    """The engine looks a prefix up when it admits the turn (vLLM's Scheduler.schedule), so the reuse distance is the
    think gap plus the queue: with W above T no context is found (looked up on arrival, P(τ < T) = 1 − e^{−T/θ}
    of them were: the 0.95 past saturation that the simulator's 0.46 refuted), and sibling sub-agents share a fork
    one of them recomputed."""
    from tokenomy.serving.kv_che import che_hits

    stack = TierStack((TierLevel("hbm", 0.0, 0.0),))
    for w in (LONG, AGENT):
        tt = turn_types(w)
        lam, D = 0.05, tt.sub_run_s(5.0, w.think_s)
        free = che_hits(tt, stack, [np.array([2e5])], lam, w.think_s, D)
        queued = che_hits(tt, stack, [np.array([2e5])], lam, w.think_s, D, queue_s=2.0 * float(free.t_char[0][0]))
        assert float(free.hit_rate[0]) > 0.5
        system = float(np.sum(tt.n)) * tt.system_tokens / float(np.sum(tt.n * tt.isl))
        s = getattr(w, "subagents", 1)  # siblings per fork (a chat has none)
        forks = 0.0 if tt.fork is None else float(np.sum(tt.n * tt.fork)) / float(np.sum(tt.n * tt.isl)) * (s - 1) / s
        # the siblings' share: forks·(s − 1)/s·P(Exp(θ) < (e2e − W)⁺ + T), the turn run out before W (e2e 5 s)
        assert float(queued.hit_rate[0]) == pytest.approx(
            system + forks * (1.0 - np.exp(-float(queued.t_char[0][0]) / w.think_s)), rel=1e-6, abs=1e-9)
