"""Context length: crossover, MFU, sparse attention, Goldilocks, the inverse problem (lecture.md §2.5, §2.11)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenomy.arch.params import count_params
from tokenomy.answers.economics import deployment_request, serving
from tokenomy.econ import context as ec

POS = st.floats(1e-3, 1e12, allow_nan=False)


def sv(model, hardware, kv_dtype="bf16", **kw):
    return serving(deployment_request(model, hardware, None, {"kv_dtype": kv_dtype, **kw}), [1], [8192])


@pytest.fixture(scope="module")
def llama():
    return sv("llama-3.1-70b", "hgx-h100-8", "fp8", tp=8)


@given(n=st.floats(1e8, 1e13), R=st.floats(10, 1000), b=st.floats(1, 1e6), k=st.floats(1.1, 100))
def test_crossover_inversely_proportional_to_kv_bytes(n, R, b, k):
    assert ec.crossover_context(n, R, b * k) == pytest.approx(ec.crossover_context(n, R, b) / k, rel=1e-9)


@given(n=st.floats(1e8, 1e13), R=st.floats(10, 1000), c=st.floats(1e2, 1e8))
def test_inverse_problem_round_trips(n, R, c):
    b = ec.implied_kv_bytes_per_token(n, R, c)
    assert ec.crossover_context(n, R, b) == pytest.approx(c, rel=1e-9)


def test_lecture_l8_and_l10():
    # lecture.md §4.1 L8: 100e9 / (300 * 200e3) = 1,666.7 B; L10: MFU at 200k with len* = 100k is 50 %
    assert ec.implied_kv_bytes_per_token(100e9, 300, 200e3) == pytest.approx(1666.67, abs=0.01)
    assert ec.mfu_at_context(200e3, 100e3) == 0.5
    assert ec.kv_bytes_per_token_formula(1, 8, 128, 1) == 2048


@given(c1=POS, c2=POS, x=st.floats(1, 1e7), w=st.floats(0, 10))
def test_mfu_non_increasing_in_context(c1, c2, x, w):
    lo, hi = sorted((c1, c2))
    assert ec.mfu_at_context(hi, x, w) <= ec.mfu_at_context(lo, x, w)


@given(n=st.floats(1e9, 1e12), tot=st.floats(1, 30), R=st.floats(100, 600), b=st.floats(100, 1e5),
       B1=st.floats(1, 1e5), B2=st.floats(1, 1e5))
def test_crossover_at_batch_grows_to_the_large_batch_limit(n, tot, R, b, B1, B2):
    lo, hi = sorted((B1, B2))
    big = ec.crossover_context(n, R, b)
    a, c = ec.crossover_context_at_batch([lo, hi], n, n * tot, R, b)
    assert np.isnan(a) or (a <= c * (1 + 1e-9) and c <= big * (1 + 1e-9))


@given(c=st.floats(1, 1e9), k=st.floats(1, 1000))
def test_sparse_fraction_at_most_one(c, k):
    f = float(ec.sparse_kv_fraction(c, k))
    assert 0 < f <= 1
    assert f == pytest.approx(min(c, k * c ** 0.5) / c)


def test_engine_crossover_matches_closed_form_for_dense_gqa(llama):
    # Large-batch crossover from the op list vs 2*N_matmul*bw/(peak*bytes_tok) with attention added to compute;
    # tp 8 over 8 KV heads splits every term 8 ways, so the per-sequence balance is the single-chip one
    c = llama.shape.coeffs
    peak, bw = llama.hardware.chip.flops_for("bf16")[1], llama.hardware.hbm_bytes_per_s
    kv = float(c.kv_elems_per_token)  # fp8: 1 byte per element
    # per sequence: (2N + a*C)/peak = (kv*C + kv + act)/bw  ->  C = (2N/peak - (kv+act)/bw) / (kv/bw - a/peak)
    act = c.act_elems_per_token * 2
    want = (c.matmul_flops_per_token / peak - (kv + act) / bw) / (kv / bw - float(c.attn_score_absorbed.sum()) / peak)
    assert ec.engine_crossover(llama) == pytest.approx(want, rel=1e-6)


def test_engine_crossover_falls_when_kv_grows(llama):
    bf16 = llama.with_(kv_dtype="bf16")
    assert ec.engine_crossover(bf16) < ec.engine_crossover(llama)


def test_sparse_attention_moves_the_crossover_out():
    rack = sv("deepseek-v3", "gb200-nvl72", "fp8", ep=72, redundant_experts=32)
    dense, sparse = ec.engine_crossover(rack), ec.engine_crossover(rack, None, 16.0)
    assert sparse > 2 * dense


def test_crossover_at_small_batch_is_none(llama):
    assert ec.engine_crossover(llama, batch=1) is None  # memory-bound at every context


@settings(max_examples=10, deadline=None)
@given(b=st.integers(1, 256))
def test_max_context_fit_is_the_edge(llama, b):
    c = ec.max_context_fit(llama, b)
    assert c > 0
    assert llama.terms(b, c).fits and not llama.terms(b, c + 1).fits


def test_goldilocks_band():
    ctx = np.array([1, 2, 4, 8, 16, 32.0])
    lo, hi = ec.goldilocks(ctx, np.full(6, 4.0), ctx, band=2)
    assert (lo, hi) == (2.0, 8.0)
    assert ec.goldilocks(ctx, np.full(6, 1e6), ctx) == (None, None)


def test_summary_and_inverse_rows(llama):
    s = ec.summarize_context(llama, 512)
    assert s.crossover_at_batch is not None and s.crossover_at_batch < s.crossover_large_batch
    assert s.goldilocks_lo <= s.crossover_at_batch <= s.goldilocks_hi
    assert s.attention_10pct_context < s.attention_equal_context
    rows = ec.inverse_rows(llama, 200e3)
    by = {r["architecture"]: r for r in rows}
    n = count_params(llama.model).matmul_active
    assert by["llama-3.1-70b"]["implied_kv_bytes_per_token"] == pytest.approx(
        2 * n * 3.35e12 / (989.4e12 * 200e3), rel=1e-9)
    assert by["llama-3.1-70b"]["kv_bytes_per_token"] == 80 * 2 * 8 * 128
    assert by["deepseek-v3"]["kv_bytes_per_token"] == 61 * 576


def test_max_context_needs_a_layout_that_runs_the_batch():
    # tp8 x dp9 over 72 chips cannot run one sequence (fewer sequences than replicas): no context fits at batch 1,
    # while 9 sequences (one per replica) fit a long context (found by the context comparison: it said 1.31M).
    s = sv("llama-3.1-405b", "gb200-nvl72", tp=8, dp=9)
    assert ec.max_context_fit(s, 1) == 0
    assert ec.max_context_fit(s, 9) > 100_000
