"""The layout search: the Pareto front against brute force, and the vectorised pass against a one-at-a-time loop."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenomy.answers.resolve import efficiency_of
from tokenomy.catalog import loader
from tokenomy.core.coeffs import shape_of
from tokenomy.core.deployment import Deployment
from tokenomy.core.layout import Layout
from tokenomy.answers.layout_search import best_layout, plan_best
from tokenomy.parallel.search import Constraints, candidate_layouts, default_batches, pareto, search


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
    hw = loader.hardware("gb200-nvl72")
    d = Deployment(loader.model("deepseek-v3"), hw, eff=efficiency_of(hw))
    cons = Constraints(context=8192, min_tokens_per_s_per_user=20, max_ttft_s=2.0)
    return d, cons, search(d, chips=144, constraints=cons)


def test_front_is_feasible_and_undominated(ds_search):
    d, cons, r = ds_search
    assert r.front.size > 3 and plan_best(r) in set(r.front.tolist())
    x, y = r.decode.tokens_per_s_per_chip.ravel(), r.decode.tokens_per_s_per_user.ravel()
    feas = np.flatnonzero(r.feasible.ravel())
    for i in r.front:
        row = r.row(int(i))
        assert row["why"] is None and row["chips"] <= 144
        assert row["tokens_per_s_per_user"] >= 20 and row["ttft_s"] <= 2.0
        assert not np.any((x[feas] > x[i]) & (y[feas] >= y[i]))
    assert x[plan_best(r)] == pytest.approx(np.nanmax(np.where(r.feasible.ravel(), x, np.nan)))


def test_rejections_add_up(ds_search):
    *_, r = ds_search
    assert sum(r.rejected.values()) == r.candidates - int(np.count_nonzero(r.feasible))
    assert "does not fit in HBM" in r.rejected


def test_vectorised_equals_one_at_a_time(ds_search):
    d, cons, r = ds_search
    P, Bn = r.feasible.shape
    rng = np.random.default_rng(1)
    for i in rng.integers(0, P * Bn, 40):
        p = r.layouts.at((P,), int(i) // Bn)
        B = float(r.batches[int(i) % Bn])
        one = d.with_(layout=p).run(B, cons.context, 1.0)
        assert int(one.reason) == int(r.decode.reason.ravel()[i])
        np.testing.assert_allclose(float(one.step_s), r.decode.step_s.ravel()[i], rtol=1e-12)


def test_tighter_constraints_shrink_the_feasible_set(ds_search):
    d, cons, r = ds_search
    strict = search(d, chips=144, constraints=Constraints(8192, 200, 0.1), layouts=r.layouts)
    assert np.all(r.feasible | ~strict.feasible)
    assert strict.feasible.sum() < r.feasible.sum()
    impossible = search(d, chips=144, constraints=Constraints(8192, 1e6), layouts=r.layouts)
    assert plan_best(impossible) is None and impossible.front.size == 0


def test_candidates_are_structurally_valid():
    sh = shape_of(loader.model("llama-3.1-70b"))
    p = candidate_layouts(sh, 72, 8)
    assert np.all(np.asarray(p.ep) == 1) and np.all(64 % np.asarray(p.tp) == 0)
    assert np.all(p.chips <= 72) and np.any(p.chips == 72)
    with pytest.raises(ValueError):
        candidate_layouts(sh, 0, 8)
    with pytest.raises(ValueError):
        Constraints(context=0)


def test_ep_candidates_carry_the_redundant_experts_that_fill_their_slots():
    # 256 experts on 72 or 144 ranks: 32 redundant experts make 288 slots, 4 or 2 per rank (DeepSeek's EP 144).
    p = candidate_layouts(shape_of(loader.model("deepseek-v3")), 144, 72, exact=True)
    ep, r = np.asarray(p.ep), np.asarray(p.redundant_experts)
    assert np.all((256 + r) % ep == 0) and np.all(r <= 64)
    assert set(r[ep == 144].tolist()) == {32} and set(r[ep == 72].tolist()) == {32}
    assert np.all(p.chips == 144)


def test_default_batches_are_whole_sequences():
    b = default_batches()
    assert np.all(b == np.round(b)) and b[0] == 1 and 3 in b and 1.5 not in b


def test_best_layout_uses_every_chip_and_decode_reproduces_plan():
    # The default layout of a question is real (uses all 72 chips) and the plan search's row for it is what the
    # engine gives the same layout one at a time (one engine behind plan and decode).
    hw = loader.hardware("gb200-nvl72")
    d = Deployment(loader.model("deepseek-v3"), hw, eff=efficiency_of(hw))
    lay, rule = best_layout(d, 72, np.array([1.0, 64.0]), 8192.0)
    assert int(lay.chips) == 72 and "72 chips" in rule and not lay.ideal
    res = search(d, chips=72, constraints=Constraints(8192))
    P, Bn = res.feasible.shape
    i = plan_best(res)
    one = d.with_(layout=res.layout(i)).run(float(res.batches[i % Bn]), 8192.0)
    assert float(one.step_s) == pytest.approx(res.row(i)["step_s"], rel=1e-12)


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
