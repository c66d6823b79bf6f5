"""Training cases predicted through core.training.lower_step and core.train_time (the model tokenomy train runs)."""

import numpy as np
import pytest

from tokenomy.validation import run
from tokenomy.validation.train_fit import START, fit_training, ranges
from tokenomy.validation.train_predict import TRAIN_FIELDS, case_plan, predict_training



@pytest.fixture(scope="module")
def training(whole_catalog):
    """The whole catalog's training cases, prepared (the suite's one prepared catalog: conftest.whole_catalog)."""
    return whole_catalog.training


@pytest.fixture(scope="module")
def split_fit(training):
    """The training terms fitted on the catalog's train split (train_fit.fit_training), for the tests that read it."""
    return fit_training(training, np.array([c.split == "train" for c in training.cases]))


def test_every_case_runs_its_published_layout(training):
    for c in training.cases:
        p = case_plan(c.case)
        assert int(p.chips) == c.case.chips
        assert (p.schedule == "interleaved") == (c.case.vp > 1) and p.zero == (3 if c.case.fsdp else 1)
    assert training.moe.any() and (~training.moe).any()
    # the roofline is a bound every published step respects (Nemotron-3-Super's EP64 over InfiniBand on B200 was
    # not, until its latent-MoE dispatch moved the latent width: ModelShape.dispatch_size)
    assert {c.id for c, r, m in zip(training.cases, training.roofline_s, training.measured) if r >= m} == set()


def _predict(training, per, shared):
    g = lambda f: np.array([per[f].get(c, per[f]["pooled"]) for c in training.chip])  # noqa: E731
    return predict_training(training, {f: g(f) if f in per else shared[f] for f in TRAIN_FIELDS})


def test_fit_beats_the_roofline_on_held_out_cases(training, split_fit):
    mask = np.array([c.split == "train" for c in training.cases])
    pred = _predict(training, *split_fit)
    for kind in (~training.moe, training.moe):
        held = ~mask & kind
        err = np.abs(np.log(pred / training.measured))[held]
        roof = np.abs(np.log(training.roofline_s / training.measured))[held]
        assert held.sum() >= 5 and np.median(err) < np.median(roof)
        assert np.median(err) < np.log(1.2)


def test_every_fitted_term_stays_in_its_range(split_fit):
    per, shared = split_fit
    for f, v in [*((f, x) for f, d in per.items() for x in d.values()), *shared.items()]:
        lo, hi = ranges()[f]
        assert lo <= v <= hi, (f, v)


def test_gemm_efficiency_comes_from_the_dense_cases_alone(training):
    """Two stages: η per chip on the dense cases; the MoE cases then fit only what routing adds."""
    dense_only, _ = fit_training(training, ~training.moe)
    everything, _ = fit_training(training, np.ones(len(training.cases), dtype=bool))
    assert dense_only["train_flops_fraction"] == pytest.approx(everything["train_flops_fraction"], rel=1e-9)


def test_a_dense_only_split_keeps_the_moe_terms_at_their_start(training):
    """Terms the split cannot see stay put (a flat direction would let the simplex wander)."""
    per, shared = fit_training(training, ~training.moe)
    assert per["train_other_moe"] == {"pooled": pytest.approx(START["train_other_moe"], rel=1e-12)}
    assert shared["train_expert_half_width"] == pytest.approx(START["train_expert_half_width"], rel=1e-12)
    assert shared["train_other_moe_fused"] == pytest.approx(START["train_other_moe_fused"], rel=1e-12)


@pytest.fixture(scope="module")
def loso_rows(whole_catalog) -> list[dict]:
    """Each training source predicted by terms fitted on every other (run.leave_one_source_out_training), computed
    once for the tests that read it."""
    return run.leave_one_source_out_training(whole_catalog)


@pytest.mark.xdist_group("train_loso_rows")  # one worker computes loso_rows (~10 CPU-s) for both
def test_training_leave_one_source_out_within_the_targets(training, loso_rows):
    """Issue 31's bar: each source predicted by terms fitted on every other source: median |error| at most 10%, dense
    and MoE reported apart, no source above 15%. Measured with 14 sources (241 cases): all 6.5%, dense 4.9%, MoE
    7.8%; the 11 Megatron-Bridge / NeMo / PaLM sources at most 8.9% (nemo-24.07); AMD's MLPerf Training v5.1 MI355X
    case -4.6% on terms no AMD case set; deepseek-v3-2024-training +8.8% (DualPipe stated: 42% slow as 1F1B without
    its overlap); torchtitan-2024-12 12.2% fast (31% as the 700 W
    h100-sxm with GEMM-class attention and no FP8 casts: the 500 W HBM2e chip, SDPA's FlashAttention-2 and torchao's
    tensorwise casts took 18 points; its file names what is left: ring attention at CP 4-8, AsyncTP's hidden share)."""
    rows = loso_rows
    moe = {c.id for c, m in zip(training.cases, training.moe) if m}
    err = {k: [abs(r["calibrated_error"]) for r in rows if (r["id"] in moe) == k] for k in (False, True)}
    assert len(rows) == len(training.cases)
    assert np.median(err[False] + err[True]) <= 0.07
    assert np.median(err[False]) <= 0.05 and np.median(err[True]) <= 0.10
    by_src = {s: [r["calibrated_error"] for r in rows if r["source"] == s] for s in {r["source"] for r in rows}}
    for src, e in by_src.items():
        assert np.median(np.abs(e)) <= (0.15 if src == "torchtitan-2024-12" else 0.12), src
    assert abs(by_src["deepseek-v3-2024-training"][0]) < 0.10
    # torchtitan's residual is one-sided (its CP and AsyncTP rows fast): a change of sign means a mechanism moved
    assert all(x < 0.05 for x in by_src["torchtitan-2024-12"])


def test_deepseek_v3s_case_runs_dualpipe_and_its_overlap_is_what_closes_it(training, split_fit):
    """DeepSeek-V3 report §3.2.1: DualPipe's bubble (P/2-1)·2 against M·3 = 14/374 at PP 16, 120 micro-batches, and
    each chunk's all-to-alls hidden under the paired chunk; recorded as 1F1B without that overlap the case read 44%
    slow. By hand on the lowered parts: the bubble, no exposed EP time, and the two mechanisms' shares."""
    from dataclasses import replace

    (k,) = [i for i, c in enumerate(training.cases) if c.source.id == "deepseek-v3-2024-training"]
    c = training.cases[k].case
    assert case_plan(c).schedule == "dualpipe" and c.recompute == "modules"
    p = training.parts.take([k])
    assert float(p.bubble[0]) == pytest.approx(14 / 374) and float(p.ep_overlap[0]) == 1.0
    t = training.take([k])
    per, shared = split_fit
    terms = {f: per[f]["h100-sxm"] if f in per else shared[f] for f in TRAIN_FIELDS}  # the H800 is the H100's die
    dual = float(predict_training(t, terms)[0])
    no_overlap = float(predict_training(replace(t, parts=replace(p, ep_overlap=p.ep_overlap * 0)), terms)[0])
    as_1f1b = float(predict_training(replace(t, parts=replace(p, ep_overlap=p.ep_overlap * 0, bubble=p.bubble * 0
                                                                + 15 / 135)), terms)[0])
    assert abs(dual / c.value - 1) < 0.10
    assert no_overlap / dual > 1.2 and as_1f1b / c.value - 1 > 0.35


def test_the_recipes_that_overlap_ep_all_to_alls_hide_them(training, split_fit):
    """Megatron-Bridge's DeepSeek-V3 recipes with moe_a2a_overlap=True (Megatron-Core's combined 1F1B: one
    micro-batch's dispatch and combine under another's compute; scripts/performance/configs/deepseek/
    deepseek_workload_base_configs.py, the H100 base and B200 FP8_MX V2 presets) run with no exposed EP time; without
    the overlap the B200 EP32-over-InfiniBand case read 60% slow and the H100 one 34% slow, with it within 25%."""
    from dataclasses import replace

    ids = ["mbridge2509-deepseek-v3-h100-sxm-1024gpu-fp8", "mbridge260401-deepseek-v3-b200-256gpu-mxfp8"]
    assert {c.id for c in training.cases if c.case.ep_comm_overlap} == set(ids)
    k = [i for i, c in enumerate(training.cases) if c.id in ids]
    t = training.take(k)
    assert np.all(np.asarray(t.parts.ep_overlap) == 1.0) and np.all(np.asarray(t.parts.ep_s) > 5.0)
    per, shared = split_fit
    g = lambda f: np.array([per[f].get(c, per[f]["pooled"]) for c in t.chip])  # noqa: E731
    terms = {f: g(f) if f in per else shared[f] for f in TRAIN_FIELDS}
    hidden = predict_training(t, terms) / t.measured - 1
    exposed = predict_training(replace(t, parts=replace(t.parts, ep_overlap=0.0 * t.parts.ep_overlap)), terms)
    assert np.all(np.abs(hidden) < 0.25) and np.all(exposed / t.measured - 1 > 0.3)


def test_dropless_regression_cases_run_a_dispatcher_that_waits(training):
    """Megatron-Bridge issue #1998: Qwen3-30B-A3B on DGX-B200 and DGX-H100 ran 2x slower dropless in 25.11 than
    token-drop in 25.09; the recipes then ran Megatron-Core's all-to-all (25.11, 26.02 B200) or DeepEP (26.02
    H100) dispatcher, which waits for the host (core/moe_host.py), and HybridEP from 26.02.01."""
    disp = {c.id: c.case.moe_dispatcher for c in training.cases}
    assert disp["mbridge2509-qwen3-30b-a3b-b200-8gpu-fp8"] == "token_drop"
    assert disp["mbridge2511-qwen3-30b-a3b-b200-8gpu-fp8-mx"] == "alltoall"
    assert disp["mbridge2511-qwen3-30b-a3b-h100-sxm-16gpu-fp8-cs"] == "alltoall"
    assert disp["mbridge2602-qwen3-30b-a3b-h100-sxm-16gpu-fp8"] == "deepep"
    assert disp["mbridge260201-qwen3-30b-a3b-b200-8gpu-mxfp8"] == "hybridep"


@pytest.mark.xdist_group("train_loso_rows")  # one worker computes loso_rows (~10 CPU-s) for both
def test_the_host_wait_explains_the_dropless_regression(training, split_fit, loso_rows):
    """The four #1998 cases (Qwen3-30B-A3B, B200 and H100, 25.11 and 26.02): with the wait taken out of the fit's
    terms every one is predicted 35-50% fast; held out by source with it, the B200 pair comes within 20% and the
    four's median error falls by more than 40% (the H100 pair stays 30-45% fast: its recipes' moe_a2a_overlap,
    PR #1760's "CPU overhead", is not modelled)."""
    rows = {r["id"]: r for r in loso_rows}
    ids = ["mbridge2511-qwen3-30b-a3b-b200-8gpu-fp8-mx", "mbridge2602-qwen3-30b-a3b-b200-8gpu-mxfp8",
           "mbridge2511-qwen3-30b-a3b-h100-sxm-16gpu-fp8-cs", "mbridge2602-qwen3-30b-a3b-h100-sxm-16gpu-fp8"]
    with_wait = np.array([rows[i]["calibrated_error"] for i in ids])
    per, shared = split_fit
    order = {c.id: k for k, c in enumerate(training.cases)}
    no_wait = (_predict(training, per, {**shared, "train_moe_sync_s": 0.0}) / training.measured - 1)
    no_wait = no_wait[[order[i] for i in ids]]
    assert np.all(no_wait < -0.35)
    assert np.all(np.abs(with_wait[:2]) < 0.2)
    assert np.median(np.abs(with_wait)) < 0.6 * np.median(np.abs(no_wait))


def test_the_ssd_scan_and_the_bf16_tail_explain_nemotron_3_supers_miss(training, split_fit):
    """Nemotron-3-Super on B300 and GB300 (16 cases): without its Mamba-2 mixers' chunked scan (core/ssd_scan.py)
    and its NVFP4 recipe's 14 BF16 tail layers (core/training.bf16_tail) the fitted terms predict every one more
    than 15% fast; with them, within 20% and a median |error| under 10%."""
    from dataclasses import replace

    per, shared = split_fit
    ids = np.array(["nemotron-3-super" in c.id and ("-b300-" in c.id or "-gb300-" in c.id) for c in training.cases])
    assert ids.sum() == 16 and sum(c.case.bf16_layers_at_end == 14 for c in np.array(training.cases)[ids]) == 8
    with_them = (_predict(training, per, shared) / training.measured - 1)[ids]
    p = training.parts
    bare = replace(p, scan_s=0.0 * p.scan_s, dense_1_s=p.dense_1_s + p.dense16_1_s,
                   expert_1_s=p.expert_1_s + p.expert16_1_s, dense16_1_s=0.0 * p.dense16_1_s,
                   expert16_1_s=0.0 * p.expert16_1_s)
    g = lambda f: np.array([per[f].get(c, per[f]["pooled"]) for c in training.chip])  # noqa: E731
    terms = {f: g(f) if f in per else shared[f] for f in TRAIN_FIELDS}
    without = (predict_training(replace(training, parts=bare), terms) / training.measured - 1)[ids]
    assert np.all(without < -0.15)
    assert np.all(np.abs(with_them) < 0.20) and np.median(np.abs(with_them)) < 0.10
