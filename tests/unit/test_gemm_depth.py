"""GEMM efficiency by contraction depth K (catalog/efficiency/gemm_depth.toml, core.efficiency.gemm_half_depth,
arch/gemm_depth.py): each output tile's K-loop pays c steps of fill and epilogue, so a GEMM of depth K reaches
K/(K + c·k_tile) of a deep one's rate, and tensor parallelism, which splits a row-parallel GEMM's K, makes the routed
experts' down-projection shallow (DeepSeek-R1 at TP8: K = 256)."""

from dataclasses import replace

import numpy as np
import pytest

from tokenomy.catalog import loader
from tokenomy.core.deployment import Deployment
from tokenomy.core.efficiency import ROOFLINE, Efficiency
from tokenomy.core.layout import Layout
from tokenomy.core.times import kernel_terms
from tokenomy.validation import load
from tokenomy.validation.anchors import gemm_fill_steps

R1_HIDDEN, R1_EXPERT_WIDTH = 7168, 2048  # deepseek-ai/DeepSeek-R1 config.json: hidden_size, moe_intermediate_size


def _anchors():
    data = loader.read_toml("efficiency", "gemm_depth")
    return (np.array([a["k"] for a in data["anchor"]], float), np.array([a["tflops"] for a in data["anchor"]], float))


def _fit(k, tflops):
    """(K_½, η_max, residuals): log least squares of η_max·K/(K + K_½) over a 1-element grid of K_½ (η_max in closed
    form: the mean log ratio)."""
    best = None
    for half in np.arange(0.0, 4096.0, 1.0):
        share = k / (k + half)
        peak = np.exp(np.mean(np.log(tflops / share)))
        res = peak * share / tflops - 1.0
        if best is None or np.sum(np.log1p(res) ** 2) < best[0]:
            best = (np.sum(np.log1p(res) ** 2), half, peak, res)
    return best[1:]


def test_the_catalogs_fill_steps_are_the_fit_of_its_anchor_points():
    k, tflops = _anchors()
    half, peak, res = _fit(k, tflops)
    assert half / 128.0 == pytest.approx(gemm_fill_steps(), abs=0.05)  # K_½ = c·128 at FP8 (DeepGEMM's BLOCK_K)
    assert np.all(np.abs(res) < 0.07)  # each anchor within 7% of the curve
    assert 1300.0 < peak < 1500.0  # the deep-K rate, TFLOPS of the H800's 1979 FP8 peak
    # the table shows the depth: a curve without it (K_½ = 0) misses the K = 512 point by more than 40%
    flat = np.exp(np.mean(np.log(tflops)))
    assert flat / tflops[k == 512][0] - 1.0 > 0.4


def test_the_curve_through_the_engine_gives_the_tables_ratios():
    eff = Efficiency(gemm_fill_steps=gemm_fill_steps())
    half = eff.gemm_half_depth(True)
    assert half == pytest.approx(448.0)
    assert eff.gemm_half_depth(False) == pytest.approx(224.0)  # 16-bit: 64-element steps, the same 128 bytes
    share = lambda k: k / (k + half)  # noqa: E731
    k, tflops = _anchors()
    deep = tflops[k == 16384][0]
    for depth in (512.0, 1536.0, 2048.0):  # DeepGEMM H800 rows at M = 4096 (catalog/efficiency/gemm_depth.toml)
        measured = tflops[k == depth].mean() / deep
        assert share(depth) / share(16384.0) == pytest.approx(measured, rel=0.07)
    assert ROOFLINE.gemm_half_depth(True) == 0.0  # the roofline pays no fill
    assert load.efficiency_set("h200").gemm_fill_steps == gemm_fill_steps()  # every calibrated set carries c
    with pytest.raises(ValueError, match="gemm_fill_steps"):
        Efficiency(gemm_fill_steps=-1.0)


def _r1(layout):
    return Deployment(loader.model("deepseek-r1"), loader.hardware("hgx-h200-8"), layout, "fp8", "fp8")


def test_tensor_parallelism_splits_the_down_projections_depth():
    c = _r1(Layout(tp=8)).shape.coeffs
    assert c.expert_depth_whole == 2 * R1_EXPERT_WIDTH and c.expert_depth_split == R1_HIDDEN
    # FLOP-weighted mean 1/K of an expert: up/gate (2/3 of its FLOPs) at K = 7168, down (1/3) at K = 2048/tp
    for layout, down_k in ((Layout(tp=8), R1_EXPERT_WIDTH / 8), (Layout(ep=8, attn_dp=False), R1_EXPERT_WIDTH)):
        w = _r1(layout).work(1.0, 8192.0, 8192.0)
        assert float(w.expert_flops_per_k / w.expert_flops) == pytest.approx(2 / 3 / R1_HIDDEN + 1 / 3 / down_k)
    # Llama-3.1-70B at TP8: the dense down-projection runs K = 28672/8 = 3584, the attention's o_proj 8192/8
    llama = Deployment(loader.model("llama-3.1-70b"), loader.hardware("hgx-h200-8"), Layout(tp=8), "fp8", "fp8")
    w = llama.work(1.0, 2048.0, 2048.0)
    assert 1.0 / float(w.dense_flops_per_k / w.dense_flops) > 2000.0  # deep: the fill costs it little


def test_the_fill_is_charged_per_depth_flop_and_ignoring_k_would_fail():
    d = _r1(Layout(tp=8))
    w = d.work(1.0, 8192.0, 8192.0)
    plain = kernel_terms(w, d.peaks, ROOFLINE)[0]
    filled = kernel_terms(w, d.peaks, replace(ROOFLINE, gemm_fill_steps=3.5))[0]
    extra = 448.0 * (w.dense_flops_per_k + w.expert_flops_per_k) / d.peaks.flops_per_s
    assert float(filled - plain) == pytest.approx(float(extra), rel=1e-9)
    # the experts' K = 256 down-projection makes TP8 pay more fill than EP8 (K = 2048) on the same tokens
    ep = _r1(Layout(ep=8, attn_dp=False))
    we = ep.work(1.0, 8192.0, 8192.0)
    assert float(w.expert_flops_per_k / w.expert_flops) > 3.0 * float(we.expert_flops_per_k / we.expert_flops)


def test_a_memory_bound_decode_step_is_not_moved():
    d = _r1(Layout(tp=8))
    eff = load.efficiency_set("h200")
    batch = np.array([1.0, 8.0, 64.0])
    with_fill, without = d.run(batch, 2048.0, eff=eff), d.run(batch, 2048.0, eff=replace(eff, gemm_fill_steps=0.0))
    assert np.all(with_fill.compute_s < with_fill.memory_s)
    assert np.allclose(with_fill.step_s, without.step_s, rtol=0.01)
