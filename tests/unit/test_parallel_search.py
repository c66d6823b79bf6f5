"""The layout search: the Pareto front against brute force, and the vectorised pass against a one-at-a-time loop."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenomy.catalog import loader
from tokenomy.core.inference import hw_coeffs
from tokenomy.parallel.plan import Plans, evaluate, shape_of
from tokenomy.parallel.search import Constraints, candidate_plans, pareto, search
from tokenomy.parallel.topology import topology


def brute_front(x, y):
    keep = []
    for i in range(len(x)):
        dominated = any((x[j] >= x[i] and y[j] >= y[i]) and (x[j] > x[i] or y[j] > y[i]) for j in range(len(x)))
        if not dominated:
            keep.append(i)
    return keep


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20), st.booleans()), min_size=1, max_size=40))
def test_pareto_against_brute_force(pts):
    x, y, m = (np.array(v, dtype=float) for v in zip(*pts))
    mask = m.astype(bool)
    got = pareto(x, y, mask)
    idx = np.flatnonzero(mask)
    want = {(x[i], y[i]) for i in np.asarray(idx)[brute_front(x[idx], y[idx])]} if idx.size else set()
    assert {(x[i], y[i]) for i in got} == want
    assert list(y[got]) == sorted(y[got], reverse=True)


@pytest.fixture(scope="module")
def ds_search():
    sh = shape_of(loader.model("deepseek-v3"))
    topo, hw = topology(loader.hardware("gb200-nvl72")), hw_coeffs(loader.hardware("gb200-nvl72"), "fp8")[0]
    cons = Constraints(context=8192, min_tokens_per_s_per_user=20, max_ttft_s=2.0)
    return sh, topo, hw, cons, search(sh, topo, hw, chips=144, constraints=cons)


def test_front_is_feasible_and_undominated(ds_search):
    sh, topo, hw, cons, r = ds_search
    assert r.front.size > 3 and r.best in set(r.front.tolist())
    x, y = r.decode.tokens_per_s_per_chip.ravel(), r.decode.tokens_per_s_per_user.ravel()
    feas = np.flatnonzero(r.feasible.ravel())
    for i in r.front:
        row = r.row(int(i))
        assert row["why"] is None and row["chips"] <= 144
        assert row["tokens_per_s_per_user"] >= 20 and row["ttft_s"] <= 2.0
        assert not np.any((x[feas] > x[i]) & (y[feas] >= y[i]))
    assert x[r.best] == pytest.approx(np.nanmax(np.where(r.feasible.ravel(), x, np.nan)))


def test_rejections_add_up(ds_search):
    *_, r = ds_search
    assert sum(r.rejected.values()) == r.candidates - int(np.count_nonzero(r.feasible))
    assert "does not fit in HBM" in r.rejected


def test_vectorised_equals_one_at_a_time(ds_search):
    sh, topo, hw, cons, r = ds_search
    P, Bn = r.feasible.shape
    rng = np.random.default_rng(1)
    for i in rng.integers(0, P * Bn, 40):
        p = r.plans.at((P,), int(i) // Bn)
        B = float(r.batches[int(i) % Bn])
        one = evaluate(sh, topo, hw, p, B, cons.context, 1.0)
        assert int(one.reason) == int(r.decode.reason.ravel()[i])
        np.testing.assert_allclose(float(one.step_s), r.decode.step_s.ravel()[i], rtol=1e-12)


def test_tighter_constraints_shrink_the_feasible_set(ds_search):
    sh, topo, hw, cons, r = ds_search
    strict = search(sh, topo, hw, chips=144, constraints=Constraints(8192, 200, 0.1), plans=r.plans)
    assert np.all(r.feasible | ~strict.feasible)
    assert strict.feasible.sum() < r.feasible.sum()
    impossible = search(sh, topo, hw, chips=144, constraints=Constraints(8192, 1e6), plans=r.plans)
    assert impossible.best is None and impossible.front.size == 0


def test_candidates_are_structurally_valid():
    sh = shape_of(loader.model("llama-3.1-70b"))
    p = candidate_plans(sh, 72, 8)
    assert np.all(np.asarray(p.ep) == 1) and np.all(64 % np.asarray(p.tp) == 0)
    assert np.all(p.chips <= 72) and np.any(p.chips == 72)
    with pytest.raises(ValueError):
        candidate_plans(sh, 0, 8)
    with pytest.raises(ValueError):
        Constraints(context=0)
    assert isinstance(Plans(tp=2).label(), str)


def test_pareto_prefilter_on_large_inputs():
    # Above 4096 points the front drops points beaten by a higher log(y) bin first; same front as a plain sweep.
    rng = np.random.default_rng(0)
    for _ in range(5):
        n = 20_000
        x = np.round(rng.lognormal(size=n), 2)
        y = np.round(np.exp(-x * rng.random()) * rng.lognormal(size=n), 2) + 0.01
        mask = rng.random(n) < 0.8
        idx = np.flatnonzero(mask)
        o = np.lexsort((-x[idx], -y[idx]))
        xo = x[idx][o]
        plain = idx[o[xo > np.concatenate([[-np.inf], np.maximum.accumulate(xo)[:-1]])]]
        got = pareto(x, y, mask)
        assert set(zip(x[got], y[got])) == set(zip(x[plain], y[plain]))
