"""core/train_time.py: a step's time from its parts under training terms; tokenomy train's default terms."""

import numpy as np
import pytest

from tokenomy.answers.training import train
from tokenomy.catalog import loader
from tokenomy.core.train_time import (ROOFLINE_TRAIN, TrainEfficiency, grouped_gemm_fraction, implied_flops_fraction,
                                      step_s, timeline)
from tokenomy.core.memory import TrainBytes
from tokenomy.core.training import Lowering, TrainPlan, lower_step

L70, H100 = loader.model("llama-3.1-70b"), loader.hardware("h100-sxm")
Q30 = loader.model("qwen3-30b-a3b")


def _parts(m, plan, compute_dtype="bf16"):
    return lower_step(m, H100, plan, Lowering(compute_dtype=compute_dtype, nbytes=TrainBytes(flash=True))).parts


def test_grouped_gemm_fraction_halves_at_the_half_width():
    assert float(grouped_gemm_fraction(768, 768)) == pytest.approx(0.5)
    assert float(grouped_gemm_fraction(0, 768)) == 1.0  # a dense model has no routed experts to slow
    assert float(grouped_gemm_fraction(2048, 0)) == 1.0


def test_tp_overlap_hides_tp_collectives_under_compute():
    plan = TrainPlan(dp=2, tp=8, pp=4, seq_len=8192, global_batch=64, schedule="interleaved", virtual_stages=5)
    exposed = _parts(L70, plan)
    hidden = _parts(L70, TrainPlan(**{**plan.__dict__, "tp_overlap": 1.0}))
    assert float(exposed.tp_s) > 0
    e = TrainEfficiency(0.5, 0.3)
    assert float(step_s(hidden, e)) < float(step_s(exposed, e))
    t = timeline(hidden, e)
    assert float(t["tp_exposed_s"]) == pytest.approx(max(float(hidden.tp_s) - float(t["compute_s"]), 0.0))


def test_non_gemm_time_does_not_speed_up_with_fp8():
    """t_other scales the step's activation traffic: an FP8 step's GEMMs halve, its non-GEMM time does not."""
    plan = TrainPlan(dp=8, seq_len=8192, global_batch=64)
    p16 = _parts(L70, plan, compute_dtype="bf16")
    p8 = _parts(L70, plan, compute_dtype="fp8")
    assert float(p8.act_1_s) == pytest.approx(float(p16.act_1_s))
    assert float(p8.dense_1_s) < 0.6 * float(p16.dense_1_s)
    e = TrainEfficiency(0.5, 10.0)
    other = timeline(p8, e)["compute_s"] - float(p8.dense_1_s) / 0.5
    assert float(other) == pytest.approx(10.0 * float(p8.act_1_s))


def test_non_gemm_traffic_per_flop_falls_with_model_width():
    """Memory-bound ops move ~T·D bytes per layer while the GEMMs do ~T·D² FLOPs: Llama 3.1 8B (D 4096) spends
    about twice the activation traffic per GEMM second that 70B (D 8192) does, which a FLOP share cannot say."""
    plan = TrainPlan(dp=8, seq_len=8192, global_batch=64)
    p8b, p70 = _parts(loader.model("llama-3.1-8b"), plan), _parts(L70, plan)
    ratio = (float(p8b.act_1_s) / float(p8b.dense_1_s)) / (float(p70.act_1_s) / float(p70.dense_1_s))
    assert 1.6 < ratio < 2.6


def test_fused_moe_kernels_take_their_own_term_and_no_width_loss():
    plan = TrainPlan(dp=8, ep=8, seq_len=4096, global_batch=64)
    unfused, fused = _parts(Q30, plan), _parts(Q30, TrainPlan(**{**plan.__dict__, "moe_kernels": "fused"}))
    assert float(unfused.fused) == 0 and float(fused.fused) == 1
    e = TrainEfficiency(0.5, 1.0, 20.0, 768.0, 5.0)
    c_unfused, c_fused = timeline(unfused, e)["compute_s"], timeline(fused, e)["compute_s"]
    assert float(c_unfused) == pytest.approx(float(unfused.dense_1_s) / 0.5 + float(unfused.expert_1_s) / 0.25
                                             + 20.0 * float(unfused.act_1_s))
    assert float(c_fused) == pytest.approx(float(fused.dense_1_s) / 0.5 + float(fused.expert_1_s) / 0.5
                                           + 5.0 * float(fused.act_1_s))
    with pytest.raises(ValueError, match="moe_kernels"):
        TrainPlan(moe_kernels="handwritten")


def test_expert_width_slows_only_the_routed_experts():
    plan = TrainPlan(dp=8, ep=8, seq_len=4096, global_batch=64, micro_batch=1)
    p = _parts(Q30, plan)
    assert float(p.expert_width) == 768 and float(p.expert_1_s) > 0
    narrow = TrainEfficiency(0.5, 0.0, 0.0, 768.0)
    wide = TrainEfficiency(0.5, 0.0, 0.0, 0.0)
    gap = timeline(p, narrow)["compute_s"] - timeline(p, wide)["compute_s"]
    assert float(gap) == pytest.approx(float(p.expert_1_s) / 0.5)  # 1/(η·½) − 1/η = 1/η more


def test_implied_flops_fraction_inverts_the_step():
    p = _parts(L70, TrainPlan(dp=4, tp=8, pp=2, seq_len=8192, global_batch=64, tp_overlap=1.0))
    e = TrainEfficiency(0.37, 0.2)
    assert float(implied_flops_fraction(p, e, step_s(p, e))) == pytest.approx(0.37, rel=1e-6)


def test_train_defaults_to_the_chips_fitted_terms_with_the_roofline_beside():
    kw = dict(model="llama-3.1-70b", hardware="h100-sxm", chips=64, tp=4, pp=4, seq_len=8192, global_batch=[128])
    cal = train(**kw).rows()[0]
    roof = train(**kw, efficiency="roofline").rows()[0]
    assert cal["efficiency"].startswith("calibrated")
    assert cal["step_s"] > cal["roofline_step_s"] == pytest.approx(roof["step_s"])
    assert train(**kw, flops_fraction=1.0, efficiency="roofline").rows()[0]["step_s"] == pytest.approx(roof["step_s"])
    with pytest.raises(ValueError, match="efficiency"):
        train(**kw, efficiency="fast")
    with pytest.raises(ValueError, match="tp_overlap"):
        train(**kw, tp_overlap=2.0)


def test_metas_405b_layout_fits_the_allocatable_hbm():
    """Llama 3 405B as Meta ran it (TP8 PP16 on 16,384 H100, 16M-token batches): 82.3 GB fits the 85.5e9 bytes a
    program can allocate (specs.Chip.exposed_hbm_bytes), the rule decode and serve use."""
    r = train(model="llama-3.1-405b", hardware="h100-sxm", chips=16384, tp=8, pp=16, seq_len=8192,
              global_batch=[2048], flash_attention=True, schedule="interleaved", virtual_stages=7).rows()[0]
    assert r["fits"] and 80e9 < r["memory_per_chip_bytes"] <= H100.chip.exposed_hbm_bytes
    assert np.isfinite(r["step_s"])


def test_host_synchronised_dispatch_waits_once_per_moe_layer_forward():
    """core/moe_host.py: all-to-all and DeepEP dispatch wait for the host once per MoE layer forward and
    micro-batch on the busiest stage (48 MoE layers over pp 2: 24); HybridEP, token-drop and fused kernels do not."""
    plan = dict(dp=8, ep=8, pp=2, seq_len=4096, global_batch=64, micro_batch=2)  # 64 / (8·2) = 4 micro-batches
    e = TrainEfficiency(0.5, 0.0, 0.0, 0.0, moe_sync_s=3e-3)
    waits = _parts(Q30, TrainPlan(**plan, moe_dispatcher="alltoall"))
    assert float(waits.sync_passes) == 4 * 24
    assert float(_parts(Q30, TrainPlan(**plan, moe_dispatcher="deepep")).sync_passes) == 4 * 24
    for quiet in (TrainPlan(**plan), TrainPlan(**plan, moe_dispatcher="token_drop"),
                  TrainPlan(**plan, moe_dispatcher="alltoall", moe_kernels="fused")):
        assert float(_parts(Q30, quiet).sync_passes) == 0
    base = timeline(waits, TrainEfficiency(0.5, 0.0, 0.0, 0.0))
    assert float(timeline(waits, e)["host_sync_s"]) == pytest.approx(4 * 24 * 3e-3)
    # every stage waits, so the wait is inside the chain the bubble stretches
    assert float(step_s(waits, e) - base["step_s"]) == pytest.approx(4 * 24 * 3e-3 / (1 - float(waits.bubble)))
    assert float(_parts(L70, TrainPlan(dp=8, seq_len=4096, global_batch=64, moe_dispatcher="alltoall")).sync_passes) == 0
    with pytest.raises(ValueError, match="moe_dispatcher"):
        TrainPlan(moe_dispatcher="allgather")


def test_moe_layer_fixed_time_favours_fewer_larger_micro_batches():
    """t_layer per unfused MoE layer and micro-batch: the same tokens in 4x fewer micro-batches cost 4x less of it
    (Qwen3-30B-A3B on 8 B200: 18,066 tokens/s/GPU at micro-batch 1, 26,695 at 4); dense layers carry none."""
    e = TrainEfficiency(0.5, 0.0, 0.0, 0.0, moe_layer_s=2e-3)
    small, large = (_parts(Q30, TrainPlan(dp=8, ep=8, seq_len=4096, global_batch=64, micro_batch=b)) for b in (1, 4))
    assert float(small.layer_passes) == 8 * 48 and float(large.layer_passes) == 2 * 48
    gpu = TrainEfficiency(0.5, 0.0, 0.0, 0.0)
    extra = [float(timeline(p, e)["compute_s"] - timeline(p, gpu)["compute_s"]) for p in (small, large)]
    assert extra == pytest.approx([8 * 48 * 2e-3, 2 * 48 * 2e-3])
    assert float(_parts(L70, TrainPlan(dp=8, seq_len=4096, global_batch=64)).layer_passes) == 0


def test_narrow_and_wide_gemms_take_their_share_of_eta():
    """η is measured on FP8 GEMMs: NVFP4 GEMMs reach ρ4·η of the 4-bit peak, BF16 ones ω16·η (at most 1) of the
    16-bit peak; the FP8 step is untouched by either."""
    m = loader.model("llama-3.1-8b")
    plan = TrainPlan(dp=8, seq_len=4096, global_batch=64)
    gb200 = loader.hardware("gb200")
    fp4, fp8, bf16 = (lower_step(m, gb200, plan, Lowering(compute_dtype=d, nbytes=TrainBytes(flash=True))).parts
                      for d in ("nvfp4", "fp8", "bf16"))
    assert (float(fp4.fp4), float(fp8.fp4), float(bf16.wide), float(fp8.wide)) == (1, 0, 1, 0)
    e = TrainEfficiency(0.5, fp4_flops_ratio=0.6, wide_flops_ratio=1.25)
    plain = TrainEfficiency(0.5)
    gemm = lambda p: float(p.dense_1_s + p.expert_1_s)  # noqa: E731
    assert float(timeline(fp4, e)["compute_s"]) == pytest.approx(gemm(fp4) / (0.5 * 0.6))
    assert float(timeline(bf16, e)["compute_s"]) == pytest.approx(gemm(bf16) / (0.5 * 1.25))
    assert float(timeline(fp8, e)["compute_s"]) == float(timeline(fp8, plain)["compute_s"])
    capped = TrainEfficiency(0.9, wide_flops_ratio=1.5)  # a GEMM reaches at most its peak
    assert float(timeline(bf16, capped)["compute_s"]) == pytest.approx(gemm(bf16))
    with pytest.raises(ValueError, match="wide_flops_ratio"):
        TrainEfficiency(0.5, wide_flops_ratio=0.9)


def test_core_attention_runs_at_the_16_bit_peak_whatever_the_gemms():
    """FP8 training halves the GEMMs' roofline time, not the attention's (fp8_dot_product_attention off)."""
    m = loader.model("llama-3.1-8b")
    plan = TrainPlan(dp=8, seq_len=8192, global_batch=64)
    low = {d: _parts(m, plan, d) for d in ("bf16", "fp8")}
    att = {d: float(p.att_share * (p.dense_1_s + p.expert_1_s)) for d, p in low.items()}  # one forward's
    assert att["fp8"] == pytest.approx(att["bf16"], rel=1e-9)
    # forward, backward (2x) and selective recompute (+1): 4 attention forwards in the step
    gemm = {d: float(p.dense_1_s + p.expert_1_s) - 4 * att[d] for d, p in low.items()}
    assert gemm["fp8"] == pytest.approx(gemm["bf16"] / 2, rel=1e-3)
