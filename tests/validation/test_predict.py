"""The prediction machinery: every step time is the engine's on the case's deployment; Little's law, capacity
queueing, fitting, the split."""

import numpy as np
import pytest

from tokenomy.catalog import loader
from tokenomy.core.deployment import Deployment
from tokenomy.core.layout import Layout
from tokenomy.units import CHECKPOINT
from tokenomy.validation import anchors
from tokenomy.validation import calibrate_fit as cf
from tokenomy.validation import load, run
from tokenomy.validation.predict import SCENARIO_CODE, predict_serving
from tokenomy.validation.theta import gather

SUBSET = ("trtllm-0.14-online", "nim-1.8-llama33-70b", "pope2022-esti", "rocm-vllm-0.10-mi300x",
          "trtllm-0.17-throughput")


@pytest.fixture(scope="module")
def prepared():
    return run.prepare(SUBSET)


@pytest.fixture(scope="module")
def rows(prepared):
    return run.rows(prepared)


@pytest.fixture(scope="module")
def calibrated(prepared):
    s = prepared.serving
    return predict_serving(s, gather(s.chip, run.stored_terms(s.chip)))


def _deployment(c) -> Deployment:
    """The case's deployment built here from the catalog, with the chip's calibrated set (not predict's code) and
    the per-sequence host time of its engine's runtime at the case's version (catalog/engines [host] runtimes)."""
    layout = Layout(tp=c.tp, dp=c.chips // c.tp, kv_batch=c.kv_batch)
    weights = None if c.weight_dtype == CHECKPOINT else c.weight_dtype  # the checkpoint's own (gpt-oss: mixed)
    eff = load.efficiency_set(c.hardware)
    runtime = loader.engine_file(c.engine).runtime_at(c.engine_version)
    o_seq = 0.0 if runtime is None else runtime.sequence_s
    return Deployment(loader.model(c.model), loader.hardware(c.hardware), layout, weights, c.kv_dtype,
                      eff.with_(sequence_overhead_s=eff.sequence_overhead_s + o_seq))


def _first(s, scenario, metric, pred=lambda c: True):
    return next(i for i, k in enumerate(s.cases) if k.case.scenario == scenario and k.case.metric == metric
                and pred(k.case))


def _mixed_step(d, c, n, p_heavy, share):
    """A decode step of n sequences as the serving model times it: a share of the steps carry p_heavy prefill
    tokens, the rest none (serving.steady: TPOT = f·t(n, P/f) + (1 − f)·t(n, 0)), here on the case's own
    Deployment."""
    t = lambda p: float(d.run(n, c.isl + c.osl / 2, prefill_tokens=p, prefill_context=c.isl / 2).step_s)  # noqa: E731 (no cache hit: half the prompt)
    return share * t(p_heavy) + (1 - share) * t(0.0)


def _close(a, b, rel=1e-9):
    assert np.isfinite(a) and abs(a / b - 1) < rel, (a, b)


def test_calibrated_is_never_faster_than_the_roofline(rows):
    for r in rows:
        if np.isfinite(r["calibrated_error"]) and np.isfinite(r["roofline_error"]):
            assert r["calibrated_error"] >= r["roofline_error"] - 1e-9, r["id"]


def test_roofline_bounds_the_measurements(rows):
    # A lower bound must be below every real measurement (Pope et al. 2022 section 3.7 caution). Capacity-limited
    # runs are left out: their batch comes from the catalog's HBM size (80e9 bytes stated, 80 GiB on the device;
    # docs/validation.md lists them), an input, not the bound.
    checked = [r for r in rows if np.isfinite(r["roofline_error"]) and not r["capacity_limited"]]
    assert len(checked) > 50
    assert all(r["roofline_error"] <= 1e-9 for r in checked), [r["id"] for r in checked if r["roofline_error"] > 0]


def test_static_batch_latency_is_the_engine_on_the_case_deployment(prepared, calibrated):
    s = prepared.serving
    i = _first(s, "static_batch", "latency_s")
    c = s.cases[i].case
    d = _deployment(c)
    prefill = d.run(c.batch, c.isl, c.isl).step_s
    step = d.run(c.batch, c.isl + c.osl / 2).step_s
    _close(calibrated.value[i], float(prefill + (c.osl - 1) * step))


def test_max_throughput_runs_the_capacity_batch_and_pays_every_prompt(prepared, calibrated):
    """trtllm-bench queues every request of its dataset at once (the perf overview's prompt count, protocol
    trtllm-bench): the running batch is those prompts, the scheduler cap or the KV capacity, and each step carries
    the prefill of the requests that replace finished ones (B·ISL over a request's steps)."""
    s = prepared.serving
    for model in ("mixtral-8x7b-v0.1", "llama-3.1-70b"):  # MoE (work not linear in tokens) and dense
        i = _first(s, "max_throughput", "throughput_per_chip",
                   lambda c: c.model == model and c.tp > 1 and c.protocol == "trtllm-bench" and bool(c.prompts))
        c = s.cases[i].case
        b = calibrated.batch[i]
        assert c.protocol == "trtllm-bench" and c.prompts and s.burst[i] == 1 and s.prompts[i] == c.prompts
        assert b == min(c.prompts, c.max_batch or 4096, s.bmax[i])
        steps = 1.0 + c.osl - 1.0  # TensorRT-LLM does not chunk: a whole prompt in one step (budget >= ISL + B)
        _close(calibrated.prefill_tokens[i], min(b * c.isl / steps, s.budget[i] - b * (c.osl - 1) / steps))
        # output tokens/s = B·OSL / lifetime, and a lifetime is at least its OSL - 1 decode steps
        d = _deployment(c)
        n = b * (c.osl - 1) / steps
        step_hi = float(d.run(np.ceil(n), c.isl + c.osl / 2, prefill_tokens=calibrated.prefill_tokens[i],
                              prefill_context=c.isl / 2).step_s)  # no cache hit: half the prompt
        assert calibrated.value[i] * c.chips <= b * c.osl / ((c.osl - 1) * step_hi * (1 - 0.05))


def test_concurrency_tpot_is_the_engine_step(prepared, calibrated):
    """Closed loop of C clients, whole prompts (TensorRT-LLM): B = min(C, B_kv) running, each request 1 prompt
    step of its OSL, so a share min(1, B/OSL) of the steps carry a prompt (P/share = ISL tokens), the other B − 1
    clients' in the steps a request decodes in (a share min(1, B/OSL)·(B − 1)/B), and the TPOT lies between the
    mixed steps at floor(n) and ceil(n) decodes, n = B·(OSL − 1)/OSL (at least 1)."""
    s = prepared.serving
    i = _first(s, "concurrency", "tpot_s")
    c = s.cases[i].case
    b = calibrated.batch[i]
    assert b == min(c.concurrency, s.bmax[i])
    n, share = max(b * (c.osl - 1) / c.osl, 1.0), min(1.0, b / c.osl)
    _close(calibrated.prefill_tokens[i], b * c.isl / c.osl)
    d = _deployment(c)
    lo, hi = (_mixed_step(d, c, x, calibrated.prefill_tokens[i] / share, share * (b - 1) / b)
              for x in (np.floor(n), np.ceil(n)))
    assert lo * (1 - 1e-9) <= calibrated.value[i] <= hi * (1 + 1e-9), (c.id, n, lo, calibrated.value[i], hi)


def test_request_rate_step_lies_between_the_whole_batches_around_it(prepared, calibrated):
    """A request-rate step runs n = B·(OSL − 1)/OSL decodes on average (whole prompts: one prefill step per
    request). A share f of the steps carries h = B·ISL/(OSL·f_B) prompt tokens, f_B = min(1, B/OSL) the running
    batch's share, so the mean step's prefill tokens are f·h; f is f_B where the engine is busy and less where it
    idles between requests (Poisson prompts come at the rate, steady_steps.arrival_share): its time lies between
    the mixed steps at floor(n) and ceil(n) with that share (dense models)."""
    s = prepared.serving
    rr = [i for i in np.flatnonzero(s.scenario == SCENARIO_CODE["request_rate"]) if s.cases[i].case.metric == "tpot_s"]
    assert rr
    for i in rr[:6]:
        c = s.cases[i].case
        b, p = calibrated.batch[i], calibrated.prefill_tokens[i]
        n, f_batch = max(b * (c.osl - 1) / c.osl, 1.0), min(1.0, b / c.osl)
        heavy = b * c.isl / c.osl / f_batch
        share = p / heavy
        assert 0.0 < share <= f_batch * (1 + 1e-9), (c.id, share, f_batch)
        d = _deployment(c)
        lo, hi = (_mixed_step(d, c, x, heavy, share) for x in (np.floor(n), np.ceil(n)))
        assert lo * (1 - 1e-9) <= calibrated.value[i] <= hi * (1 + 1e-9), (c.id, n, lo, calibrated.value[i], hi)


def test_request_rate_batch_satisfies_littles_law(prepared):
    """Open loop: the running batch is N = λ·(time a request spends in the engine), that time its TTFT less the
    request overhead outside the engine, less the half step an arrival waits, plus OSL − 1 steps (each workload's
    TTFT and TPOT cases read together; N capped by the KV cache, and at least the request itself); a run of a stated
    prompt count holds the finite run's λ·a·(1 − a/(3b)) instead (serving/finite_run.py), by hand here."""
    s = prepared.serving
    th = gather(s.chip, {c: cf.START for c in set(s.chip)})
    pr = predict_serving(s, th)
    ids = {c.case.id: i for i, c in enumerate(s.cases)}
    checked = 0
    for i in np.flatnonzero(s.scenario == SCENARIO_CODE["request_rate"]):
        c = s.cases[i].case
        j = ids.get(c.id.replace("-itl", "-ttft"))
        if c.metric != "tpot_s" or j is None or not np.isfinite(pr.value[j]):
            continue
        tpot, ttft = pr.value[i], pr.value[j]
        engine_life = ttft - cf.START.request_overhead_s + (c.osl - 1) * tpot
        R, L, N = c.request_rate, engine_life, s.prompts[i]
        a, b = min(N / R, L), max(N / R, L)
        held = R * a * (1.0 - a / (3.0 * b)) if np.isfinite(N) else R * L
        n = max(min(held, s.bmax[i]), 1.0)  # at least the request itself
        assert abs(pr.batch[i] - n) <= 0.01 * n + 0.01, (c.id, pr.batch[i], n)
        checked += 1
    assert checked >= 20


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
    truth = cf.START.model_copy(update=dict(hbm_fraction=0.55, kv_hbm_fraction=0.4, step_overhead_s=4e-3,
                                            flops_fraction_max=0.5))
    synthetic = predict_serving(s, gather(s.chip, {"mi300x": truth})).value
    s.measured = synthetic
    fitted = cf.fit_serving(s, cf.START, 0.0)
    r = cf.log_residuals(s, fitted)
    assert np.median(np.abs(r)) < 0.01


def test_held_out_measurements_cannot_move_the_fit(prepared):
    """The split is honoured: changing every held-out measurement leaves the fitted terms bit for bit."""
    p = run.prepare(("rocm-vllm-0.10-mi300x", "nim-1.8-llama33-70b"))  # closed loops: quick to refit twice
    train = cf.train_ids(p.cases)
    assert train and len(train) < len(p.cases)
    a = run.refit(p, train)
    test = np.array([c.id not in train for c in p.serving.cases])
    p.serving.measured = np.where(test, p.serving.measured * 3.0, p.serving.measured)
    b = run.refit(p, train)
    assert a.terms == b.terms and a.fitted_on == b.fitted_on
    assert all(load.split_of(i) == "train" or next(c for c in p.cases if c.id == i).split == "train"
               for ids in a.fitted_on.values() for i in ids)


# The refit (`tokenomy validate --refit`, about ten minutes) is the pooled fit on every chip's training cases, then
# each die's (the boards on one silicon: calibrate_fit.die_of) with the pooled one as its prior. Reproduced here: the
# dies whose fits take seconds, from the stored pooled terms, bit for bit; the pooled fit and the other dies' are held
# to be optima of their loss.
REPRODUCED = ("mi300x", "tpu-v4", "a100-80gb-sxm")
STEP, NO_BETTER_BY = 0.05, 1e-4  # a ±5% step of any free term (in the fit's units) lowers no stored loss by more
# than this (the stored fits: at most 4e-6 on a loss of 0.037; Nelder–Mead stops on its simplex's spread, 1e-7)
FITTED = [f for f in cf.SERVING_FIELDS if f not in anchors.HELD_FIELDS]


@pytest.fixture(scope="module")
def catalog(whole_catalog):
    p = whole_catalog
    train = cf.train_ids(p.cases)
    return p, np.array([c.id in train for c in p.serving.cases], dtype=bool)


def _dies(s, mask) -> dict[str, list[str]]:
    """die -> its chips with training cases."""
    out: dict[str, list[str]] = {}
    for c in sorted(set(s.chip[mask])):
        out.setdefault(cf.die_of(c), []).append(c)
    return out


def _lent(die: str) -> dict[str, float] | None:
    """The GEMM terms a die's fit holds at the stored ones of the die whose tensor cores it runs (B300: B200's)."""
    src = cf.tensor_cores_of(die)
    return cf.gemm_terms(load.efficiency_file(cf.die_of(src)).terms) if src else None


def test_refit_reproduces_the_stored_terms_of_the_declared_chips(catalog):
    """catalog/efficiency/<chip>.toml is what `tokenomy validate --refit` computes from the catalog (reproducible),
    for the chips of REPRODUCED (each its die's one board), from the stored pooled terms (their prior)."""
    p, mask = catalog
    s = p.serving
    pooled = load.efficiency_file("pooled").terms
    dies = _dies(s, mask)
    for chip in REPRODUCED:
        assert dies[cf.die_of(chip)] == [chip], chip
        stored = load.efficiency_file(chip)
        assert stored is not None, chip
        ours = [c.id for c, m in zip(s.cases, mask & (s.chip == chip)) if m]
        assert sorted(i for i in stored.fitted_on if i in {c.id for c in s.cases}) == sorted(ours), chip
        fit = cf.fit_problems(s, [cf.group_problem(s, mask, [chip], pooled)])[0]
        for k in FITTED:
            assert getattr(stored.terms, k) == pytest.approx(getattr(fit, k), rel=1e-6, abs=1e-12), (chip, k)
        for k, v in anchors.anchored(chip).items():
            assert getattr(stored.terms, k) == pytest.approx(v), (chip, k)


def test_stored_terms_are_optima_of_their_loss(catalog):
    """The pooled terms and every other die's: no step of STEP along a free term lowers the fit's loss on the
    catalog's training cases by more than NO_BETTER_BY (a stale fit, after the catalog or the model changed, would
    be improved)."""
    p, mask = catalog
    s = p.serving
    pooled = load.efficiency_file("pooled").terms
    every = np.flatnonzero(mask)
    probs = [cf.problem(every, cf.START, cf.RIDGE_POOLED, anchors.anchored("pooled"), pooled,
                        cf.case_anchors(s, every))]
    dies = {d: cs for d, cs in _dies(s, mask).items() if not set(cs) & set(REPRODUCED)}
    assert dies["h100-sxm"] == ["h100-sxm", "h200"], dies  # one GH100: one fit
    missing = [c for cs in dies.values() for c in cs if load.efficiency_file(c) is None]
    assert not missing, f"no fitted terms for {missing}: run tokenomy validate --refit"
    probs += [cf.group_problem(s, mask, cs, pooled, load.efficiency_file(cs[0]).terms, _lent(d))
              for d, cs in dies.items()]
    for prob in probs:
        z = prob.x0()
        steps = np.vstack([z] + [z + sign * STEP * e for e in np.eye(z.size) for sign in (1, -1)])
        v = cf.losses(s, [(prob, steps)])[0]
        assert v[0] - v[1:].min() <= NO_BETTER_BY, (prob.idx.size, v[0], v[1:].min())
