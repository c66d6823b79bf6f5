"""Leave-one-source-out: each fold's search starts from the fit on every source (a warm start) and minimises the
same loss as a search from the starting values; the held-out predictions agree within a stated tolerance."""

import numpy as np

from tokenomy.validation import calibrate_fit as cf
from tokenomy.validation import nelder_mead as nm
from tokenomy.validation import run

# three small sources (static-batch runs: no queueing to solve, so the fits take seconds): MI300X vLLM,
# TPU v4 (Pope et al.), H100 TensorRT-LLM 0.9
SUBSET = ("rocm-vllm-0.10-mi300x", "pope2022-esti", "trtllm-0.9-static")
# Nelder–Mead stops where its simplex's values span < 1e-7, not at the exact optimum: two searches of the same
# loss from different starts end a little apart. Measured on this subset: held-out predictions within 7.3% (median
# 1.6%) of each other, losses within 1%.
PREDICTION_MEDIAN, PREDICTION_MAX, LOSS_REL = 0.03, 0.10, 0.02


def _loss(s, p: cf.Problem, t) -> float:
    return float(cf.losses(s, [(p, cf._to_z(t)[p.free][None])])[0][0])


def test_warm_started_folds_agree_with_cold_started_ones():
    p = run.prepare(SUBSET)
    full = run.refit(p)
    train = cf.train_ids(p.cases)
    src = {c.id: c.source.id for c in p.cases}
    folds = [{i for i in train if src[i] != s} for s in SUBSET]
    warm = cf.fit_folds(p.serving, p.training, folds, full)
    cold = cf.fit_folds(p.serving, p.training, folds)
    s = p.serving
    for name, ids, w, c in zip(SUBSET, folds, warm, cold):
        q = run.only_source(p, name)
        a = np.array([r["calibrated"] for r in run.rows(q, w.terms)])
        b = np.array([r["calibrated"] for r in run.rows(q, c.terms)])
        d = np.abs(a / b - 1)[np.isfinite(b)]
        assert np.median(d) <= PREDICTION_MEDIAN and d.max() <= PREDICTION_MAX, (name, np.median(d), d.max())
        mask = np.array([k.id in ids for k in s.cases])
        pooled = cf.problem(np.flatnonzero(mask), cf.START, cf.RIDGE_POOLED, cf.anchors.anchored("pooled"))
        lw, lc = _loss(s, pooled, w.terms["pooled"]), _loss(s, pooled, c.terms["pooled"])
        assert lw <= lc * (1 + LOSS_REL), (name, lw, lc)
        assert w.fitted_on == c.fitted_on  # the same cases: only the start differs


def test_lockstep_searches_take_the_steps_of_lone_ones():
    """Nelder–Mead advanced in lockstep with others visits the same points as alone (the searches only share
    the evaluation)."""
    def f(x):
        return float(np.sum((x - np.arange(x.size)) ** 2) + np.sum(np.cos(3 * x)))
    starts = [np.zeros(4), np.full(4, 2.0), np.array([5.0, -1.0, 0.5, 3.0])]
    alone = [nm.minimise(f, x) for x in starts]
    together = nm.minimise_many(lambda reqs: [np.array([f(x) for x in pts]) for _, pts in reqs], starts)
    for a, b in zip(alone, together):
        assert np.array_equal(a, b)
    assert f(alone[0]) < f(starts[0])
