"""Work a question no longer repeats (issue 27 items 4 and 9): a deployment lowers a pass at one context once and
``with_`` hands back the same copy; serve's layout choice checks the rest's KV capacity only when a stage reads it;
the searches that read memory or latency alone agree with the full terms they stand in for."""

from __future__ import annotations

import numpy as np

from tokenomy.answers import serve_layout
from tokenomy.answers.econ_serving import deployment_request, serving
from tokenomy.answers.resolve import deployment, hardware_of, model_of
from tokenomy.answers.workloads import serve
from tokenomy.core.layout import Layout
from tokenomy.econ import batch as eb
from tokenomy.econ import speculative as es


def _deployment():
    return deployment(model_of("llama-3.1-70b"), hardware_of("hgx-h100-8"), layout=Layout(tp=4))


def _serving(context: float):
    return serving(deployment_request("llama-3.1-70b", "hgx-h100-8", None, {}), [1.0], [context])


def test_a_pass_at_one_context_is_lowered_once_per_deployment_and_an_array_one_afresh():
    dep = _deployment()
    assert dep.lower(2048.0) is dep.lower(2048.0)
    assert dep.lower(2048.0) is not dep.lower(np.array(2048.0))  # a 0-d array lowers to arrays: its own key
    assert dep.lower(2048.0, 4, prefill_tokens=8.0) is not dep.lower(2048.0, 4)
    ctx = np.array([1024.0, 2048.0])
    assert dep.lower(ctx) is not dep.lower(ctx)
    copy = dep.with_(layout=Layout(tp=8))
    assert copy is dep.with_(layout=Layout(tp=8)) and copy.layout == Layout(tp=8)
    assert dep.with_(layout=Layout(tp=np.array([1, 2]))) is not dep.with_(layout=Layout(tp=np.array([1, 2])))


def test_serve_reads_the_rest_of_its_candidates_only_where_the_first_miss_a_point(monkeypatch):
    checked = []
    holds = serve_layout.holds_a_sequence

    def counted(dep, *a):
        checked.append(dep.layout.label())
        return holds(dep, *a)

    monkeypatch.setattr(serve_layout, "holds_a_sequence", counted)
    serve("deepseek-v3", "gb200-nvl72", concurrency=[16], chips=72, isl=2048, osl=512)
    easy = len(checked)
    assert 0 < easy < serve_layout.USABLE_CHECKS  # 9 of the 64 ranked: the first 8 usable and those in keep
    checked.clear()  # an SLO no layout meets: the best of the first misses, and the rest is checked and scored
    serve("deepseek-v3", "gb200-nvl72", concurrency=[16], chips=72, isl=2048, osl=512, tpot_slo=1e-6)
    assert len(checked) > easy


def test_the_largest_batch_found_fits_and_one_more_does_not():
    s = _serving(8192.0)
    fit = eb.max_batch_fit(s, 8192.0)
    t = s.terms(np.array([fit, fit + 1], float), 8192.0)
    assert fit > 0 and list(np.asarray(t.memory_per_chip_bytes <= t.hbm_bytes)) == [True, False]


def test_fast_modes_latency_is_speculates_round_per_expected_token():
    s = _serving(4096.0)
    b = np.array([1.0, 7.0, 64.0])
    sp = es.speculate(s, b, 4096.0, 3, 0.7, 0.05)
    assert np.allclose(es._latency_s(s, b, 4096.0, 3, 0.7, 0.05, None), sp.round_s / sp.tokens_per_step, rtol=0)
    assert np.allclose(es._latency_s(s, b, 4096.0, 0, 0.0, 0.0, None), sp.base_step_s, rtol=0)


def test_a_layout_whose_weights_fill_the_engines_share_holds_no_sequence_without_its_kv_capacity():
    from tokenomy.answers.requests import EngineRequest
    from tokenomy.serving.kv_capacity import kv_capacity, weights_leave_room
    eng = EngineRequest("vllm", None, None)
    for tp, room in ((1, False), (4, True)):  # 70B at bf16: 141 GB of weights; 85.5 GB per H100
        dep = _deployment().with_(layout=Layout(tp=tp))
        prof = eng.profile(tp)
        assert weights_leave_room(dep, prof) is room
        assert serve_layout.holds_a_sequence(dep, eng, 2048, 512) is room
        assert (float(kv_capacity(dep, prof, 2048, 512)[0]) >= 1) is room
