"""The prediction machinery: consistency with the engine, invariants, Little's law, capacity queueing, fitting."""

import numpy as np
import pytest

from tokenomy.catalog import loader
from tokenomy.core.roofline import HwCoeffs, step
from tokenomy.units import dtype_bytes
from tokenomy.validation import calibrate_fit as cf
from tokenomy.validation import run
from tokenomy.validation.predict import SCENARIO_CODE, decode_step, gather, predict_serving
from tokenomy.validation.prepare import _coeffs, quantized
from tokenomy.validation.terms import efficiency_at, tp_allreduce_s

SUBSET = ("trtllm-0.14-online", "nim-1.8-llama33-70b", "pope2022-esti", "rocm-vllm-0.10-mi300x")


@pytest.fixture(scope="module")
def prepared():
    return run.prepare(SUBSET)


@pytest.fixture(scope="module")
def rows(prepared):
    return run.rows(prepared)


def test_calibrated_is_never_faster_than_the_roofline(rows):
    for r in rows:
        if np.isfinite(r["calibrated_error"]) and np.isfinite(r["roofline_error"]):
            assert r["calibrated_error"] >= r["roofline_error"] - 1e-9, r["id"]


def test_roofline_bounds_the_measurements(rows):
    # A lower bound must be below every real measurement (Pope et al. 2022 section 3.7 caution).
    assert all(r["roofline_error"] <= 1e-9 for r in rows)


def test_decode_step_equals_the_engine_fed_through_eff_and_comms(prepared):
    s = prepared.serving
    i = next(k for k, c in enumerate(s.cases) if c.case.tp > 1 and c.case.scenario == "request_rate")
    c = s.cases[i].case
    terms = cf.START
    th = gather(s.chip, {ch: terms for ch in set(s.chip)})
    b = 8.0
    ours = decode_step(s.take([i]), th.take([i]), np.array([b]), np.array([0.0])).time_s[0]
    chip = loader.hardware(c.hardware).chip
    _, peak = chip.flops_for(c.weight_dtype)
    arch = loader.model(c.model)
    comms = tp_allreduce_s(c.tp, b, arch.hidden_size, arch.num_layers, chip.scale_up.bytes_per_s,
                           terms.link_fraction, terms.allreduce_latency_s)
    eng = step(quantized(_coeffs(c.model), c.weight_dtype), HwCoeffs(peak, chip.hbm_bytes_per_s, chip.hbm_bytes),
               b, c.isl + c.osl / 2, 1, c.chips, kv_bytes_per_elem=dtype_bytes(c.kv_dtype),
               eff=efficiency_at(terms, b), comms_s=comms)
    assert abs(ours / float(eng.step_s) - 1) < 1e-9


def test_request_rate_batch_satisfies_littles_law(prepared):
    s = prepared.serving
    th = gather(s.chip, {c: cf.START for c in set(s.chip)})
    pr = predict_serving(s, th)
    rr = np.flatnonzero(s.scenario == SCENARIO_CODE["request_rate"])
    assert rr.size
    # a request runs with the others present: batch = 1 + N, N = lambda * lifetime (N capped by the KV cache)
    for i in rr[:10]:
        assert pr.batch[i] >= 1.0
    low = rr[np.argmin(s.rate[rr])]
    assert pr.batch[low] < 1.0 + s.rate[low] * 60  # bounded by rate x a minute-long request


def test_concurrency_beyond_the_kv_cache_queues(prepared):
    s = prepared.serving
    th = gather(s.chip, {c: cf.START for c in set(s.chip)})
    pr = predict_serving(s, th)
    nim = [i for i, c in enumerate(s.cases) if c.source.id.startswith("nim") and c.case.metric == "ttft_s"
           and c.case.isl == 5000]
    conc = s.concurrency[nim]
    over = [i for i, cc in zip(nim, conc) if cc > s.bmax[i]]
    assert len(over) >= 2
    ttft = pr.value[over]
    assert np.all(np.diff(ttft[np.argsort(s.concurrency[over])]) > 0)  # TTFT grows with the queue
    assert np.all(pr.capacity_limited[over])


def test_fit_recovers_terms_that_generated_the_data(prepared):
    s = prepared.serving.take(prepared.serving.chip == "mi300x")
    truth = cf.START.model_copy(update=dict(hbm_fraction=0.55, step_overhead_s=4e-3, flops_fraction_max=0.5))
    synthetic = predict_serving(s, gather(s.chip, {"mi300x": truth})).value
    s.measured = synthetic
    fitted = cf.fit_serving(s, cf.START, 0.0)
    r = cf.log_residuals(s, fitted)
    assert np.median(np.abs(r)) < 0.01


def test_estimate_agrees_with_the_validation_predictor(prepared):
    """tokenomy estimate (what users see) and the validation predictor are the same model."""
    from tokenomy.validation import load
    from tokenomy.validation.estimate import calibrated_pass

    s = prepared.serving
    i = next(k for k, c in enumerate(s.cases) if c.source.id.startswith("rocm"))
    c = s.cases[i].case
    terms = load.efficiency_for(c.hardware).terms
    b = float(c.batch)
    ours = decode_step(s.take([i]), gather(s.chip[[i]], {c.hardware: terms}), np.array([b]),
                       np.array([0.0])).time_s[0]
    est = calibrated_pass(c.model, c.hardware, batch=b, context=c.isl + c.osl / 2, chips=c.chips, tp=c.tp,
                          weight_dtype=c.weight_dtype, kv_dtype=c.kv_dtype)
    assert abs(float(est["calibrated_step_s"]) / ours - 1) < 1e-9
    assert float(est["roofline_step_s"]) < float(est["calibrated_step_s"])
