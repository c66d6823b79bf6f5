"""Batch economics: the lecture's closed forms (lecture.md §2.1-2.2) and engine invariants."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenomy.answers.economics import deployment_request, serving
from tokenomy.econ import batch as eb
from tokenomy.econ.cost import first_crossing, largest_whole, usd_per_mtok


def sv(model, hardware, kv_dtype="bf16", **kw):
    return serving(deployment_request(model, hardware, None, {"kv_dtype": kv_dtype, **kw}), [1], [8192])


@pytest.fixture(scope="module")
def llama_h100():
    return sv("llama-3.1-70b", "hgx-h100-8", "fp8", tp=8)


@pytest.fixture(scope="module")
def dsv3_rack():
    return sv("deepseek-v3", "gb200-nvl72", "fp8", ep=72, redundant_experts=32)


def test_lecture_ratio_h100_datasheet():
    # lecture.md §2.2 [I]: H100 SXM bf16 989 T / 3.35 TB/s -> 295
    assert eb.lecture_ratio(989.4e12, 2, 3.35e12) == pytest.approx(295.3, abs=0.1)


@given(R=st.floats(50, 1000), s=st.floats(1, 64))
def test_balance_batch_is_where_blackboard_terms_meet(R, s):
    # independent: t_compute(B*) = t_weights with FLOPs = R*mem_bw (lecture units)
    b = float(eb.balance_batch(R, s))
    bb = eb.blackboard(b, flops=R, mem_bw=1.0, total_bytes=s, active_bytes=1.0)
    assert bb.t_compute == pytest.approx(bb.t_weights, rel=1e-9)


@given(R=st.floats(50, 1000), s=st.floats(1, 64), c=st.floats(1, 1e6), kv=st.floats(1, 1e5))
def test_balance_with_kv_is_larger_or_infinite(R, s, c, kv):
    b0 = float(eb.balance_batch(R, s))
    b1 = float(eb.balance_batch_with_kv(R, s, c, kv, 1e11))
    assert b1 >= b0 * (1 - 1e-12)
    if np.isfinite(b1):  # weights + KV = compute there
        bb = eb.blackboard(b1, flops=R, mem_bw=1.0, total_bytes=s * 1e11, active_bytes=1e11, context=c,
                           bytes_per_token=kv)
        assert bb.t_compute == pytest.approx(bb.t_weights + bb.t_kv, rel=1e-6)


@given(R=st.floats(10, 1000), s=st.floats(1, 64))
def test_unbatched_penalty_is_R_times_sparsity(R, s):
    assert float(eb.unbatched_penalty(R, s)) == pytest.approx(R * s, rel=1e-9)


def test_usd_per_mtok_lecture_l27():
    # lecture.md §4.1 L27: 72 GPUs x $2/h, 20 ms, B = 2,000 -> $0.40 per M tokens
    assert usd_per_mtok(0.020, 2000, 72, 2.0) == pytest.approx(0.40)


def test_engine_balance_of_dense_bf16_model_is_R():
    # Dense model, weights at the compute dtype, tp 8 (8 KV heads: everything splits 8 ways): weight fetch = weight
    # matmul at B = R (lecture.md §2.2); the balance is a roofline quantity whatever the efficiency set. The engine
    # holds whole sequences (ceil), so the crossing lies between the whole batches around R.
    b = eb.engine_balance_batch(sv("llama-3.1-70b", "hgx-h100-8", tp=8), 2048, with_kv=False)
    R = 989.4e12 / 3.35e12
    assert np.floor(R) < b <= np.ceil(R)


def test_moe_balance_near_lecture_formula(dsv3_rack):
    # The even split (a bound, asked for by name): every expert is touched at the balance batch, so the engine lands
    # near R*sparsity (lecture.md §2.2)
    ideal = sv("deepseek-v3", "gb200-nvl72", "fp8", layout="ideal", efficiency="roofline")
    s = eb.summarize_batch(ideal, 8192)
    assert s.balance_batch == pytest.approx(s.lecture_balance_batch, rel=0.05)
    assert s.operating_batch == int(np.ceil(2 * s.balance_batch)) and not s.memory_binds
    # MoE at B=1 reads only k experts: the unbatched penalty is far below R*sparsity
    assert s.unbatched_penalty_no_kv < s.lecture_unbatched_penalty / 5
    # EP 72 with data-parallel attention: each chip reads all the dense weights for 1/72 of the tokens, so the real
    # layout needs a larger batch to balance than the even split
    assert eb.summarize_batch(dsv3_rack, 8192).balance_batch > 1.5 * s.balance_batch


def test_memory_binds_on_small_box(llama_h100):
    s = eb.summarize_batch(llama_h100, 8192)
    assert s.memory_binds and s.operating_batch == s.max_batch_fit


@settings(max_examples=25, deadline=None)
@given(ctx=st.sampled_from([1024, 8192, 32768]), lo=st.integers(1, 5000), hi=st.integers(1, 5000))
def test_cost_per_token_non_increasing_in_batch_until_memory_binds(dsv3_rack, ctx, lo, hi):
    lo, hi = sorted((lo, hi))
    t = dsv3_rack.terms(np.array([lo, hi], float), ctx)
    if t.fits[1]:
        assert t.usd_per_mtok[1] <= t.usd_per_mtok[0] * (1 + 1e-12)
        assert t.tokens_per_s_per_user[1] <= t.tokens_per_s_per_user[0] * (1 + 1e-12)


@settings(max_examples=15, deadline=None)
@given(ctx=st.integers(128, 200_000))
def test_max_batch_fit_is_the_edge(llama_h100, ctx):
    b = eb.max_batch_fit(llama_h100, ctx)
    r = llama_h100.terms(np.array([max(b, 1), b + 1], float), ctx)
    assert not r.fits[1]
    assert b == 0 or r.fits[0]


def test_step_is_at_least_each_term(dsv3_rack):
    t = dsv3_rack.terms(np.geomspace(1, 40000, 30), 8192)
    assert np.all(t.step_s >= t.compute_s) and np.all(t.step_s >= t.weights_s + t.kv_s)


def test_largest_whole():
    assert largest_whole(lambda x: x <= 37, 1000) == 37
    assert largest_whole(lambda x: x <= 0, 10) == 0 and largest_whole(lambda x: x > 0, 10) == 10


def test_first_crossing():
    assert first_crossing(lambda x: x - 37.0, 1, 1e6) == pytest.approx(37.0, rel=1e-9)
    assert first_crossing(lambda x: -np.ones_like(x), 1, 10) is None
    assert first_crossing(lambda x: np.ones_like(x), 1, 10) == 1.0


def test_batch_rows_mark_non_fitting_points(llama_h100):
    rows = eb.batch_rows(llama_h100.terms(np.array([1.0, 1e5]), 8192))
    assert rows[0]["fits"] and rows[0]["step_s"] > 0
    assert not rows[1]["fits"] and rows[1]["step_s"] is None and rows[1]["usd_per_mtok"] is None
    assert "per chip" in rows[1]["why"]
    assert rows[0]["roofline_step_s"] < rows[0]["step_s"]  # the calibrated estimate sits above its bound


def test_terms_read_the_engine(dsv3_rack):
    # the split terms add up to the engine's own: compute = matmuls + attention, memory = weights + KV + acts
    t = dsv3_rack.terms(np.array([1.0, 64.0, 4096.0]), 8192)
    r = dsv3_rack.run(np.array([1.0, 64.0, 4096.0]), 8192)
    assert np.allclose(t.matmul_s + t.attention_s, r.compute_s) and np.all(t.attention_s > 0)
    assert np.allclose(t.weights_s + t.kv_s + t.other_s, r.memory_s) and np.allclose(t.step_s, r.step_s)
