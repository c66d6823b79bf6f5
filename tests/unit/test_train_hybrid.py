"""Nemotron-3-Super's training mechanisms: the Mamba-2 mixers' chunked scan (core/ssd_scan.py) and the NVFP4
recipe's BF16 tail layers (core/training.bf16_tail)."""

from dataclasses import replace

import numpy as np
import pytest

from tokenomy.catalog import loader
from tokenomy.core.memory import TrainBytes
from tokenomy.core.ssd_scan import SSD_FLOPS_PER_S, scan_flops_per_token, scan_s
from tokenomy.core.train_time import TrainEfficiency, timeline
from tokenomy.core.training import Lowering, TrainPlan, lower_step

NEMO = loader.model("nemotron-3-super-120b-a12b")
B300 = loader.hardware("b300")
PLAN = TrainPlan(dp=64, ep=8, seq_len=8192, global_batch=512, micro_batch=1)


def _parts(plan, dtype):
    return lower_step(NEMO, B300, plan, Lowering(compute_dtype=dtype, nbytes=TrainBytes(flash=True))).parts


def test_ssd_scan_flops_hand_checked_from_the_config():
    """2·(G·Q·N + H·Q·P + 2·H·P·N) per Mamba-2 layer: G 8, Q 128 (chunk_size), N 128, H 128, P 64; 40 of the 88
    layers are Mamba-2 mixers (hybrid_override_pattern's M); no other model in the catalog has one."""
    per_layer = 2 * (8 * 128 * 128 + 128 * 128 * 64 + 2 * 128 * 64 * 128)
    assert per_layer == 6_553_600
    assert scan_flops_per_token(NEMO) == 40 * per_layer
    assert scan_flops_per_token(loader.model("llama-3.1-70b")) == 0
    assert SSD_FLOPS_PER_S == pytest.approx(28.1e12, rel=0.01)  # 150 TFLOP/s x 49,152 / 262,144


def test_scan_time_is_its_flops_at_the_kernels_rate_per_chip():
    """Forward + backward (2x) on each chip's tokens: 8 micro-batches of 8,192 tokens; TP splits the heads,
    a full recompute runs the forward once more."""
    tokens = 512 * 8192 / 64
    assert float(scan_s(NEMO, PLAN)) == pytest.approx(40 * 6_553_600 * tokens * 3 / SSD_FLOPS_PER_S)
    tp2 = replace(PLAN, dp=32, tp=2)  # same chips, twice the micro-batches per DP rank, half the heads
    assert float(scan_s(NEMO, tp2)) == pytest.approx(float(scan_s(NEMO, PLAN)))
    full = replace(PLAN, recompute="full")
    assert float(scan_s(NEMO, full)) == pytest.approx(float(scan_s(NEMO, PLAN)) * 4 / 3)
    assert float(scan_s(loader.model("llama-3.1-8b"), PLAN)) == 0.0


def test_the_scan_is_not_timed_under_eta():
    """The scan's kernels run at their own rate: a faster or slower GEMM share leaves its seconds as they are."""
    p = _parts(PLAN, "fp8")
    assert float(p.scan_s) > 1.0  # ~1.8 s of a ~9 s step (the published B300 MXFP8 step is 9.35 s)
    for eta in (0.3, 0.7):
        e = TrainEfficiency(eta)
        with_scan, without = timeline(p, e)["compute_s"], timeline(replace(p, scan_s=0.0), e)["compute_s"]
        assert float(with_scan - without) == pytest.approx(float(p.scan_s))


def test_bf16_tail_moves_its_share_of_the_gemms_to_the_16_bit_peak():
    """14 of 88 layers: τ = 14/88 of the GEMMs' roofline time at the 4-bit peak moves out, and takes
    peak4/peak16 times as long at η·ω16 instead of η·ρ4; nothing moves under BF16 GEMMs."""
    plain, tail = _parts(PLAN, "nvfp4"), _parts(replace(PLAN, bf16_layers_at_end=14), "nvfp4")
    moved = float(tail.dense16_1_s + tail.expert16_1_s)
    assert float(plain.dense16_1_s + plain.expert16_1_s) == 0.0
    assert float(tail.dense_1_s + tail.expert_1_s) + moved == pytest.approx(float(plain.dense_1_s + plain.expert_1_s))
    assert float(tail.expert16_1_s) == pytest.approx(14 / 88 * float(plain.expert_1_s))
    ratio = B300.chip.flops_for("nvfp4")[1] / B300.chip.flops_for("bf16")[1]
    assert float(tail.tail16_ratio) == pytest.approx(ratio) and ratio >= 2
    e = TrainEfficiency(0.5, fp4_flops_ratio=0.6, wide_flops_ratio=1.2)
    slower = float(timeline(tail, e)["compute_s"] - timeline(plain, e)["compute_s"])
    dense16, exp16 = float(tail.dense16_1_s), float(tail.expert16_1_s)
    assert slower == pytest.approx((dense16 + exp16) * (ratio / 0.6 - 1 / 0.3), rel=1e-6)
    assert slower > 0
    bf16 = _parts(replace(PLAN, bf16_layers_at_end=14), "bf16")
    assert float(bf16.dense16_1_s + bf16.expert16_1_s) == 0.0


def test_bf16_tail_sits_on_the_last_pipeline_stage():
    """With pp stages the tail's layers crowd the last stage, which sets the step: τ = min(n/ceil(L/pp), 1)."""
    pp4 = _parts(replace(PLAN, dp=16, pp=4, bf16_layers_at_end=14), "nvfp4")
    share = float(pp4.expert16_1_s / (pp4.expert16_1_s + pp4.expert_1_s))
    assert share == pytest.approx(14 / 22)  # 88 blocks over 4 stages
    all_of_it = _parts(replace(PLAN, dp=8, pp=8, bf16_layers_at_end=14), "nvfp4")
    assert float(all_of_it.expert_1_s) == pytest.approx(0.0, abs=1e-12)


def test_bad_bf16_tail_is_an_error_naming_the_field():
    with pytest.raises(ValueError, match="^bf16_layers_at_end"):
        TrainPlan(bf16_layers_at_end=-1)
    with pytest.raises(ValueError, match="^bf16_layers_at_end"):
        TrainPlan(bf16_layers_at_end=2.5)
