"""A router's measured load balance (arch/routing.py) in the engine's busiest EP rank, and the attention's dtype
(core/times.Peaks): expected values by hand from the catalog's cited points and the chips' datasheet peaks, not from
the engine's own path.

LMSYS (2025-05-05, figure 'Effects of Scale and EPLB to Balancedness') measured DeepSeek-V3's balancedness mean/max
tokens per GPU at 0.80 on 32 GPUs with EPLB and 0.55 without: the busiest of 32 ranks carries 1/0.80 = 1.25x the
mean, where balls in bins at a prefill's 16,384 tokens a rank gives 1.007x."""

from dataclasses import replace

import numpy as np
import pytest

from tokenomy.answers.resolve import deployment
from tokenomy.arch.routing import ExpertBalance
from tokenomy.catalog import loader
from tokenomy.core.deployment import Deployment
from tokenomy.core.layout import Layout

PREFILL = (128.0, 4096.0, 4096.0)  # 128 prompts of 4,096 tokens over EP 32: 16,384 tokens a rank


def _dep(model, layout, hardware="hgx-h100-8", kv_dtype="bf16"):
    m = loader.model(model) if isinstance(model, str) else model
    return Deployment(m, loader.hardware(hardware), layout, "fp8", kv_dtype)


def test_the_catalog_holds_deepseek_v3s_measured_curve_and_no_other_routers():
    b = loader.model("deepseek-v3").expert_balance
    assert b is not None and "lmsys.org" in b.source
    assert loader.model("deepseek-r1").expert_balance == replace(b, source=loader.model("deepseek-r1").expert_balance
                                                                 .source)
    assert loader.model("qwen3-235b-a22b").expert_balance is None  # unmeasured: balls in bins


def test_balance_interpolates_in_log_ep_and_holds_the_last_point():
    b = ExpertBalance(eplb=((8.0, 0.94), (32.0, 0.80)), default=((8.0, 0.67), (64.0, 0.48)))
    got = b.at(np.array([1.0, 8.0, 16.0, 32.0, 144.0, 16.0]), np.array([True, True, True, True, True, False]))
    # 16 lies halfway between 8 and 32 in log: (0.94 + 0.80)/2; between 8 and 64 a third of the way: 0.67 - 0.19/3
    assert got == pytest.approx([1.0, 0.94, 0.87, 0.80, 0.80, 0.67 - 0.19 / 3])
    # between 1 and the first point: from 1 at ep = 1, halfway in log at ep = sqrt(8)
    assert float(b.at(np.sqrt(8.0), True)) == pytest.approx((1.0 + 0.94) / 2)


@pytest.mark.parametrize("pts", [((8.0, 1.2),), ((1.0, 0.9),), ((16.0, 0.9), (8.0, 0.95)), ()])
def test_bad_points_are_refused(pts):
    with pytest.raises(ValueError, match="expert balance"):
        ExpertBalance(eplb=pts, default=((8.0, 0.5),))


@pytest.mark.parametrize("redundant,balance", [(32, 0.80), (0, 0.55)])
def test_the_busiest_rank_carries_the_measured_skew(redundant, balance):
    lay = Layout(ep=32, redundant_experts=redundant)
    skewed = _dep("deepseek-v3", lay).work(*PREFILL)
    uniform = _dep(replace(loader.model("deepseek-v3"), expert_balance=None), lay).work(*PREFILL)
    mu = 16384 * 8  # assignments a rank: 16,384 tokens x top-8 over 32 ranks, each rank's share of 32 x 16,384
    A = lambda w: float(w.expert_rows) * float(w.experts_read)  # noqa: E731
    assert A(skewed) == pytest.approx(mu / balance, rel=1e-9)
    assert A(uniform) == pytest.approx(mu + np.sqrt(2 * mu * np.log(32)), rel=1e-9)  # balls in bins: 1.007x
    # what the skew moves: the expert GEMMs' FLOPs and the dispatch + combine bytes, in proportion
    assert float(skewed.expert_flops) / float(uniform.expert_flops) == pytest.approx(A(skewed) / A(uniform))
    assert float(skewed.ep_bytes) / float(uniform.ep_bytes) == pytest.approx(A(skewed) / A(uniform))


def test_a_small_batch_keeps_the_balls_in_bins_extreme():
    # a decode of 1 sequence a rank: μ = 32·8/32 = 8 assignments, the Gaussian extreme 8 + sqrt(16·ln 32) = 15.4
    # exceeds the measured skew's 8/0.80 = 10
    w = _dep("deepseek-v3", Layout(ep=32, redundant_experts=32)).work(32.0, 4096.0)
    assert float(w.expert_rows) * float(w.experts_read) == pytest.approx(8 + np.sqrt(16 * np.log(32)))


def test_one_rank_has_no_skew():
    w = _dep("deepseek-v3", Layout(tp=8), "hgx-h200-8").work(*PREFILL)
    assert float(w.expert_rows) * float(w.experts_read) == pytest.approx(128 * 4096 * 8)


def test_attention_runs_at_the_kv_caches_dtype():
    # FP8 weights: the weight GEMMs at FP8's peak; q·k and p·v at BF16's with a BF16 cache (DeepSeek day 6: "core
    # MLA computations ... use the BF16 format"), at FP8's with an FP8 cache. H100 SXM: 989.4 and 1978.9 TFLOP/s
    chip = loader.hardware("hgx-h100-8").chip
    assert chip.flops_for("bf16")[1] == pytest.approx(989.4e12, rel=1e-3)
    lay = Layout(ep=32, redundant_experts=32)
    bf16, fp8 = _dep("deepseek-v3", lay).peaks, _dep("deepseek-v3", lay, kv_dtype="fp8").peaks
    assert bf16.flops_per_s == fp8.flops_per_s == pytest.approx(1978.9e12, rel=1e-3) and bf16.narrow
    assert bf16.attn_flops_per_s == pytest.approx(989.4e12, rel=1e-3) and not bf16.attn_narrow
    assert fp8.attn_flops_per_s == fp8.flops_per_s and fp8.attn_narrow
    # BF16 weights with an FP8 cache: widened in the kernel, never faster than the weight GEMMs
    wide = Deployment(loader.model("deepseek-v3"), loader.hardware("hgx-h100-8"), lay, "bf16", "fp8").peaks
    assert wide.attn_flops_per_s == wide.flops_per_s == pytest.approx(989.4e12, rel=1e-3)


def test_a_bf16_cache_slows_only_the_attention():
    # the same pass with a BF16 and an FP8 cache (KV bytes aside): the compute terms differ by the attention's
    # FLOPs over the two rates, each η_max·(ρ where narrow)·M'/(M' + M½) at the attention's balance rows
    lay = Layout(ep=32, redundant_experts=32)
    a, b = (deployment("deepseek-v3", "hgx-h100-8", layout=lay, weight_dtype="fp8", kv_dtype=kv)
            for kv in ("bf16", "fp8"))
    e, pk = a.eff, a.peaks
    assert e.gemm_half_tokens > 0 and e.narrow_flops_ratio < 1  # the calibrated H100 terms, not the roofline
    ra, rb = a.run(*PREFILL), b.run(*PREFILL)
    F = float(a.work(*PREFILL).attn_flops)

    def rate(peak, narrow, kv_bytes):
        eta = e.flops_fraction * (e.narrow_flops_ratio if narrow else 1.0)
        bal = peak * eta * kv_bytes / (2 * pk.hbm_bytes_per_s * e.kv_fraction)
        rows = max(4096 * 128 / 1.0, bal)  # S·H/K: 4,096 new tokens x 128 heads on MLA's one latent
        return peak * eta * rows / (rows + e.gemm_half_tokens)
    want = F / rate(pk.attn_flops_per_s, False, 2.0) - F / rate(pk.flops_per_s, True, 1.0)
    assert float(ra.compute_s) - float(rb.compute_s) == pytest.approx(want, rel=1e-6)
    assert want > 0
