"""The characteristic time (serving/kv_che.py) against a plain scalar reference: the occupancy written out per turn
type from the module docstring's formulas (no summed coefficients, no shared per-point terms), its root found by
bisection point by point. Checks the vectorised Newton steps (settling without a confirming look, points leaving
as they stop, one occupancy shared by the tiers in che_hits) to rtol 1e-9."""

import math

import numpy as np
import pytest

from tokenomy.serving.kv_cache_tiers import TierLevel, TierStack
from tokenomy.serving.kv_che import che_hits, characteristic_time
from tokenomy.serving.sessions import Agentic, MultiTurn
from tokenomy.serving.turn_types import turn_types

RTOL = 1e-9
WORKLOADS = {"multiturn": MultiTurn(turns=12, new_input_tokens=1500, think_s=30.0),
             "agentic": Agentic(turns=12, subagent_every=4, subagent_turns=4, system_prompt_tokens=4000,
                                new_input_tokens=1500, think_s=10.0)}


def _held(T, theta, last, fork, D, W, tt):
    """Seconds an object is held (kv_che's docstring): a last turn's T; a reused one's E[min(τ + W, T)] (looked up
    when its turn is admitted, W after it arrives), min(W, T) + θ·(1 − e^{−(T − W)⁺/θ}); a fork's
    D·(1 − q·e^{−sT/θ'}) on top, q = (θ'/(e2e − W + θ'))^s, θ' = θ + W, e2e = (D − m·θ)/K_sub."""
    if last:
        return T
    held = min(W, T) + theta * (1.0 - math.exp(-max(T - W, 0.0) / theta))
    if fork:
        s = max(int(tt.subagents), 1)
        e2e = max(D - tt.sub_thinks * theta, 0.0) / max(tt.sub_turns, 1)
        idle = theta + W
        q = (idle / (idle + max(e2e - W, 0.0))) ** s
        held += D * (1.0 - q * math.exp(-s * T / idle))
    return held


def _occupancy(T, tt, lam, theta, D, W):
    total = sum(float(n) * float(o) * _held(T, theta, bool(la), bool(sp and not la), D, W, tt)
                for n, o, la, sp in zip(tt.n, tt.obj, tt.last, tt.spawn))
    return lam * total + tt.system_tokens


def _reference_t(cap, tt, lam, theta, D, W):
    """Bisection on [0, hi], hi doubled until it holds more than cap; 0 where even T = 0 holds more."""
    if _occupancy(0.0, tt, lam, theta, D, W) >= cap:
        return 0.0
    lo, hi = 0.0, theta
    while _occupancy(hi, tt, lam, theta, D, W) < cap:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if _occupancy(mid, tt, lam, theta, D, W) < cap else (lo, mid)
    return 0.5 * (lo + hi)


def _points(n=60, seed=1):
    rng = np.random.default_rng(seed)
    return (rng.uniform(2e4, 3e6, n), rng.uniform(0.005, 0.5, n), rng.uniform(1.0, 60.0, n),
            rng.uniform(0.0, 2.0, n))


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_the_characteristic_time_matches_a_scalar_bisection(name):
    tt = turn_types(WORKLOADS[name])
    cap, lam, theta, e2e = _points()
    D, W = tt.sub_run_s(e2e, theta), 0.3 * e2e
    got = characteristic_time(cap, tt, lam, theta, D, queue_s=W)
    want = np.array([_reference_t(*p, D[i], W[i]) for i, p in
                     enumerate(zip(cap, [tt] * len(cap), lam, theta))])
    assert np.count_nonzero(want > 0) > len(want) // 2  # most points hold something: the Newton steps ran
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=0.0)
    # from a start near the answer (a warm start) and far from it: the same root
    for guess in (want * (1 + 1e-3), want * 0.5, np.full(want.shape, 1e9)):
        np.testing.assert_allclose(characteristic_time(cap, tt, lam, theta, D, guess, W), want, rtol=RTOL, atol=0.0)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_roots_below_a_long_wait_match_the_bisection(name):
    """Turns queued for admission longer than the cache keeps them (W of 20-300 s, the 157 s queue of kv_che's
    docstring): the root lies below W at many points, where the occupancy is linear in the reused objects; the held
    time is concave for every W, so a step settles there as above it (kv_che._solve_t has no guard below W)."""
    tt = turn_types(WORKLOADS[name])
    cap, lam, theta, e2e = _points(seed=2)
    W = np.random.default_rng(3).uniform(20.0, 300.0, len(cap))
    D = tt.sub_run_s(e2e + W, theta)
    want = np.array([_reference_t(*p, D[i], W[i]) for i, p in
                     enumerate(zip(cap, [tt] * len(cap), lam, theta))])
    assert np.count_nonzero((want > 0) & (want < W)) > len(want) // 4  # below the wait
    assert np.count_nonzero(want > W) > 0  # and above it
    for guess in (None, want * (1 + 1e-3), want * 0.5, np.full(want.shape, 1e9)):
        np.testing.assert_allclose(characteristic_time(cap, tt, lam, theta, D, guess, W), want, rtol=RTOL, atol=0.0)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_each_tiers_characteristic_time_in_che_hits_matches_the_bisection(name):
    """che_hits solves every tier from one occupancy: each tier's T against the reference at its own capacity
    (write-through: each tier its own LRU; T of a lower tier at least the upper's)."""
    tt = turn_types(WORKLOADS[name])
    hbm, lam, theta, e2e = _points(seed=2)
    ddr = 4.0 * hbm
    D = tt.sub_run_s(e2e, theta)
    stack = TierStack((TierLevel("hbm", 0.0, 0.0), TierLevel("ddr", 0.0, 1e-8, 1e-5)), prefill_s_per_token=3e-5)
    T = che_hits(tt, stack, [hbm, ddr], lam, theta, D).t_char
    for j, cap in enumerate((hbm, ddr)):
        want = np.array([_reference_t(c, tt, lam[i], theta[i], D[i], 0.0) for i, c in enumerate(cap)])
        if j:
            want = np.maximum(want, T[0])
        np.testing.assert_allclose(T[j], want, rtol=RTOL, atol=0.0)
