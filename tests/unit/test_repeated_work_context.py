"""Work /context-compare no longer repeats (issue 27 item 9): the largest-context search's check that a layout runs
a batch at all reads the engine's own pass (Serving.engine_pass), not the full terms, which built a second model
shape without attention (Serving.matmul_shape) for every chip count it probed; that shape is built once per model
(cost.matmul_shape_of), not once per Serving (each layout search's result and its roofline copy)."""

from __future__ import annotations

import numpy as np

from tokenomy.answers import architectures
from tokenomy.answers.econ_serving import deployment_request, serving
from tokenomy.econ import cost


def test_the_largest_context_search_builds_no_matmul_shape(monkeypatch):
    sv = serving(deployment_request("llama-3.1-70b", "gb200-nvl72", None, {}), [1.0], [8192.0])
    built = []
    shape = cost.coefficients

    def counted(model, *a, **kw):
        built.append(model.name)
        return shape(model, *a, **kw)

    monkeypatch.setattr(cost, "coefficients", counted)
    cost.matmul_shape_of.cache_clear()
    context, chips = architectures._max_context(sv, 1)  # a dense model at batch 1 on 72 chips: fewer chips
    assert context > 0 and chips < 72
    assert built == []
    assert sv.terms(1.0, 8192.0).mfu is not None and built == ["llama-3.1-70b"]  # the full terms do build it
    sv.roofline().terms(1.0, 8192.0)  # a roofline copy (the balance search's) and another chip count reuse it
    serving(deployment_request("llama-3.1-70b", "gb200-nvl72", 8, {}), [1.0], [8192.0]).terms(4.0, 8192.0)
    assert built == ["llama-3.1-70b"]


def test_the_engine_pass_is_the_terms_own_pass():
    sv = serving(deployment_request("llama-3.1-70b", "hgx-h100-8", None, {}), [1.0], [8192.0])
    for batch, context in [(1.0, 1.0), (64.0, 8192.0), (4096.0, 131072.0)]:
        own, full = sv.engine_pass(batch, context), sv.terms(batch, context).passes
        assert np.array_equal(np.ravel(own.reason), np.ravel(full.reason))
        assert np.array_equal(np.ravel(own.memory_per_chip_bytes), np.ravel(full.memory_per_chip_bytes))


def test_the_curve_searches_its_largest_batches_together(monkeypatch):
    from tokenomy.econ import batch as eb
    sv = serving(deployment_request("deepseek-v3", "gb200-nvl72", None, {}), [1.0], [8192.0])
    contexts = architectures.CURVE
    calls = []
    fits = cost.Serving.memory_fits

    def counted(self, b, c):
        calls.append(np.shape(b))
        return fits(self, b, c)

    monkeypatch.setattr(cost.Serving, "memory_fits", counted)
    each = [eb.max_batch_fit(sv, C) for C in contexts]
    alone = len(calls)
    calls.clear()
    assert eb.max_batch_fits(sv, contexts) == each and each[0] > each[-1] > 0
    assert len(calls) * len(contexts) <= alone + len(contexts)  # one round for all contexts, not one per context


def test_largest_whole_each_is_the_largest_true_per_column():
    edges = np.array([0, 1, 7, 1000, 4096])  # ok(x) = x <= edge: 0 none, 4096 all of [1, 4096]
    got = cost.largest_whole_each(lambda x: x <= edges, 4096, edges.size)
    assert list(got) == [0, 1, 7, 1000, 4096]
    assert [cost.largest_whole(lambda x, e=e: x <= e, 4096) for e in edges] == [0, 1, 7, 1000, 4096]


def test_the_curve_times_its_operating_points_in_one_pass(monkeypatch):
    sv = serving(deployment_request("deepseek-v3.2", "hgx-h100-8", None, {"kv_dtype": "fp8"}), [1.0], [8192.0])
    passes = []
    terms = cost.Serving.terms

    def counted(self, b, c, *a, **kw):
        passes.append(np.shape(c))
        return terms(self, b, c, *a, **kw)

    monkeypatch.setattr(cost.Serving, "terms", counted)
    curve = architectures._curve(sv, architectures.CURVE, 64)
    assert passes == [(len(architectures.CURVE),)]
    assert curve[0]["step_s"] is not None
    for p in curve[::3]:  # each point as its own pass gives the same numbers (MLA and a sparse index: per point)
        t = terms(sv, float(max(p["batch"], 1)), float(p["context"]))
        assert p["step_s"] == (float(np.ravel(t.step_s)[0]) if p["step_s"] is not None else None)
        assert p["mfu"] == (float(np.ravel(t.mfu)[0]) if p["mfu"] is not None else None)
