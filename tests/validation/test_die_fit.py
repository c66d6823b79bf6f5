"""The serving terms are fitted per die (validation/calibrate_fit.fit_folds): boards on one silicon (chips/<name>.toml
same_die_as) share every fitted term, each keeping its own anchored ones; a die without cases in a fold is fitted on
its chip family's cases, not on every chip's."""

import tomllib

import numpy as np
import pytest

from tokenomy.catalog import loader
from tokenomy.validation import anchors
from tokenomy.validation import calibrate_fit as cf
from tokenomy.validation import run
from tokenomy.validation.theta import SERVING_FIELDS

EFF = loader.ROOT / "efficiency"
FITTED = [f for f in SERVING_FIELDS if f not in anchors.HELD_FIELDS]
BOARDS = [(c, loader.chip_file(c).same_die_as) for c in loader.chip_names() if loader.chip_file(c).same_die_as]


def _terms(chip: str) -> dict:
    return tomllib.loads((EFF / f"{chip}.toml").read_text())["terms"]


def test_the_boards_on_one_die_are_named():
    pairs = dict(BOARDS)
    assert pairs["gb300"] == "b300" and pairs["h200"] == "h100-sxm" and pairs["h800"] == "h100-sxm"
    assert all(die in loader.chip_names() and loader.chip_family(die) == loader.chip_family(c) for c, die in BOARDS)


LENT = [(c, loader.chip_file(c).tensor_cores_as) for c in loader.chip_names() if loader.chip_file(c).tensor_cores_as]


def test_a_chip_on_anothers_tensor_cores_names_another_die_of_its_family():
    pairs = dict(LENT)
    assert pairs["b300"] == "b200"
    for chip, src in LENT:
        assert src in loader.chip_names() and loader.chip_family(src) == loader.chip_family(chip), chip
        assert cf.die_of(src) != cf.die_of(chip), chip  # the same die shares every term already (same_die_as)
        assert not cf.tensor_cores_of(cf.die_of(src)), chip  # one step: the lender runs its own tensor cores
        peaks = loader.chip_file(chip).peak_flops_per_s, loader.chip_file(src).peak_flops_per_s
        assert peaks[0].fp8 == peaks[1].fp8 and peaks[0].bf16 == peaks[1].bf16, chip  # the rates lent are equal


@pytest.mark.parametrize("chip", [c for c in loader.chip_names()
                                  if cf.tensor_cores_of(cf.die_of(c)) and (EFF / f"{c}.toml").is_file()])
def test_stored_gemm_terms_are_the_lenders(chip):
    """B300's (and GB300's, its die) η_max, ρ and M_½ are B200's fitted ones; the rest are its own fit's."""
    src = cf.die_of(cf.tensor_cores_of(cf.die_of(chip)))
    mine, theirs = _terms(chip), _terms(src)
    assert {f: mine[f] for f in cf.GEMM_FIELDS} == {f: theirs[f] for f in cf.GEMM_FIELDS}
    assert any(mine[f] != theirs[f] for f in FITTED if f not in cf.GEMM_FIELDS)


@pytest.fixture(scope="module")
def dsr1_folds():
    """DeepSeek-R1 at batch 1 (B300 under SGLang; B200 and H200 under TensorRT-LLM) fitted on two folds of its TPOT
    cases in one call: every case (``with_b300``) and all but B300's (``without_b300``). fit_folds advances the
    folds' searches in lockstep, each visiting the points it visits alone (test_loso: lockstep searches), so each
    fold's fit is the one a call of its own returns, at one shared engine pass per step instead of two runs."""
    p = run.prepare(("inferencex-sglang-0.5.12-b300", "trtllm-issue-5929-dsr1"))
    folds = {"with_b300": {c.id for c in p.cases if c.metric == "tpot_s"},
             "without_b300": {c.id for c in p.cases if c.case.hardware != "b300" and c.metric == "tpot_s"}}
    fits = cf.fit_folds(p.serving, p.training, list(folds.values()))
    return p, {name: (keep, fit) for (name, keep), fit in zip(folds.items(), fits)}


# the two tests that read dsr1_folds (~70 CPU-s) run in one xdist worker (make test: --dist loadgroup), which fits once
@pytest.mark.xdist_group("dsr1_folds")
def test_a_die_on_anothers_tensor_cores_is_fitted_with_its_gemm_terms(dsr1_folds):
    """DeepSeek-R1 under SGLang on B300 (decode-bound TPOT rows) beside TensorRT-LLM's on B200: B300's fit holds
    B200's GEMM shares and moves its other terms on its own cases."""
    p, folds = dsr1_folds
    keep, fit = folds["with_b300"]
    b300, b200 = fit.terms["b300"], fit.terms["b200"]
    assert cf.gemm_terms(b300) == cf.gemm_terms(b200)
    assert fit.fitted_on["b300"] == sorted(c.id for c in p.cases if c.id in keep and c.case.hardware == "b300")
    assert any(getattr(b300, f) != getattr(b200, f) for f in FITTED if f not in cf.GEMM_FIELDS)


@pytest.mark.parametrize("chip,die", [(c, d) for c, d in BOARDS if (EFF / f"{c}.toml").is_file()])
def test_stored_terms_of_one_die_are_one_set(chip, die):
    """An H100 fitted apart from an H200 (one GH100) had taken its per-kernel floor and GEMM shares from its own
    sources alone: leaving vLLM's gpt-oss on 8 H100 out read +29% TPOT, +7% with the H200's cases beside them."""
    mine, theirs = _terms(chip), _terms(die)
    assert {f: mine[f] for f in FITTED} == {f: theirs[f] for f in FITTED}
    assert mine["hbm_fraction"] == pytest.approx(anchors.anchored(chip)["hbm_fraction"])  # its own anchor


@pytest.mark.xdist_group("dsr1_folds")
def test_a_die_without_cases_is_fitted_on_its_familys(dsr1_folds):
    # DeepSeek-R1 at batch 1: B300 under SGLang, B200 and H200 under TensorRT-LLM (two Blackwell dies, one Hopper)
    p, folds = dsr1_folds
    keep, fit = folds["without_b300"]
    b200 = sorted(c.id for c in p.cases if c.id in keep and c.case.hardware == "b200")
    assert b200 and fit.fitted_on["b300"] == b200  # the Blackwell family's cases, not the H200's
    assert fit.fitted_on["h200"] == sorted(c.id for c in p.cases if c.id in keep and c.case.hardware == "h200")
    b300, pooled = fit.terms["b300"], fit.terms["pooled"]
    assert any(getattr(b300, f) != getattr(pooled, f) for f in FITTED)
    assert b300.hbm_fraction == pytest.approx(anchors.anchored("b300")["hbm_fraction"])
    assert np.isfinite([getattr(b300, f) for f in FITTED]).all()


def test_a_fit_over_several_chips_holds_each_case_at_its_own_chips_anchors():
    """The loss of one set of terms over two chips' cases is the case-weighted mean of the two chips' losses, each
    with its own anchored terms (H100 and H200: one die, different measured streaming shares)."""
    p = run.prepare(("trtllm-0.9-static",))
    s = p.serving
    one = np.array([m == s.metric[0] for m in s.metric])  # one metric: every case weighs the same
    a, b = (np.flatnonzero(one & (s.chip == c)) for c in ("h100-sxm", "h200"))
    assert a.size and b.size and anchors.anchored("h100-sxm")["hbm_fraction"] != anchors.anchored("h200")["hbm_fraction"]
    prior = cf.START

    def loss(prob):
        return float(cf.losses(s, [(prob, prob.x0()[None])])[0][0])  # at the prior: no ridge
    alone = [loss(cf.problem(i, prior, cf.RIDGE_CHIP, anchors.anchored(c))) for i, c in ((a, "h100-sxm"), (b, "h200"))]
    both = np.concatenate([a, b])
    group = cf.problem(both, prior, cf.RIDGE_CHIP, anchors.anchored("pooled"), per_case=cf.case_anchors(s, both))
    assert loss(group) == pytest.approx((a.size * alone[0] + b.size * alone[1]) / both.size, rel=1e-9)
    pooled_anchors = cf.problem(both, prior, cf.RIDGE_CHIP, anchors.anchored("pooled"))
    assert loss(pooled_anchors) != pytest.approx(loss(group), rel=1e-6)  # the anchors matter here


def test_a_board_without_a_training_fit_of_its_own_takes_its_dies():
    """Training terms per chip (train_fit.fit_training) exist for the chips with cases in the fit; the H800 and the
    500 W HBM2e H100 of torchtitan's benchmarks run the H100's kernels (same_die_as), so leave-one-source-out and
    the refit give them the H100's η, as load.efficiency_for does for tokenomy train, not the pooled one."""
    values = {"h100-sxm": 0.49, "b200": 0.51, "pooled": 0.50}
    assert cf.per_chip_value(values, "h800") == 0.49
    assert cf.per_chip_value(values, "h100-sxm-96gb-500w") == 0.49
    assert cf.per_chip_value(values, "b200") == 0.51 and cf.per_chip_value(values, "tpu-v4") == 0.50
    assert _terms("h200")["train_flops_fraction"] == _terms("h100-sxm")["train_flops_fraction"]
