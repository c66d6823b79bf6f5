"""The fit values many points at once (calibrate_fit.losses: the cases of several problems stacked in one engine
pass, the stack kept from round to round). A point's loss must not depend on that: each equals the loss of the
same point valued alone, in a fresh call, on its problem's cases only; and the work a subset of cases interpolates
on the batch grid (shared, not copied, by Serving.take) is the whole set's at those cases."""

import numpy as np
import pytest

from tokenomy.validation import calibrate_fit as cf
from tokenomy.validation import load, run
from tokenomy.validation.case_step import work_at

# closed loops, an open loop (request rate) and static batches on three chips: every path of the step function
SUBSET = ("trtllm-0.14-online", "nim-1.8-llama33-70b", "rocm-vllm-0.10-mi300x", "trtllm-0.9-static")
# The open loop's running batch iterates until every point it solves has converged (serving.steady, relative
# 1e-10): a point solved beside others may take a step more than alone, so the two agree to that, not bit for bit.
REL = 1e-9


@pytest.fixture(scope="module")
def prepared():
    return run.prepare(SUBSET)


def test_stacked_and_remembered_points_are_valued_as_alone(prepared):
    s = prepared.serving
    train = cf.train_ids(prepared.cases)
    mask = np.array([c.id in train for c in s.cases], dtype=bool)
    pooled = load.efficiency_file("pooled").terms
    probs = [cf.chip_problem(s, mask, chip, pooled) for chip in sorted(set(s.chip[mask]))]
    probs.append(cf.problem(np.flatnonzero(mask), cf.START, cf.RIDGE_POOLED, cf.anchors.anchored("pooled"), pooled))
    assert len(probs) >= 4 and {3, 4} <= set(s.scenario[mask])  # concurrency and request-rate cases among them
    rng = np.random.default_rng(11)
    stacks: dict = {}
    # three rounds through one memo, as a fit runs them: one point each, then a shrink's several, then one again
    for points in (1, 3, 1):
        reqs = [(q, q.x0() + rng.normal(0.0, 0.2, size=(points, q.x0().size))) for q in probs]
        stacked = cf.losses(s, reqs, stacks)
        for (q, zs), values in zip(reqs, stacked):
            for z, v in zip(zs, values):
                alone = cf.losses(s, [(q, z[None])])[0][0]
                assert v == pytest.approx(alone, rel=REL), (q.idx.size, v, alone)
    assert stacks  # the memo was used


def test_a_subset_interpolates_the_whole_sets_work(prepared):
    s = prepared.serving
    idx = np.arange(len(s.cases))[::3]
    sub = s.take(idx)
    assert sub.grid_table is s.grid_table  # shared, not copied
    batch = np.linspace(1.0, 300.0, len(s.cases))
    whole, part = work_at(s, batch), work_at(sub, batch[idx])
    assert np.array_equal(part.at_zero, whole.at_zero[:, idx], equal_nan=True)
    assert np.array_equal(part.per_token, whole.per_token[:, idx], equal_nan=True)
    assert all(np.array_equal(part.other[f], whole.other[f][idx]) for f in whole.other)
