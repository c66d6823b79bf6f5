"""core/attention_kernel.py: PyTorch SDPA's FlashAttention-2 (torchtitan) times core attention at 35% of the 16-bit
peak, outside η; the fused kernels of the other trainers keep it under η with the GEMMs."""

import numpy as np
import pytest

from tokenomy.catalog import loader
from tokenomy.core.attention_kernel import FA2_PEAK_SHARE, kernel_attention_s
from tokenomy.core.memory import TrainBytes
from tokenomy.core.train_time import TrainEfficiency, compute_s
from tokenomy.core.training import Lowering, TrainPlan, lower_step

L8, H100 = loader.model("llama-3.1-8b"), loader.hardware("h100-sxm")


def _parts(kernel, recompute="selective", dtype="fp8"):
    plan = TrainPlan(dp=8, zero=3, seq_len=32768, global_batch=8, recompute=recompute, attention_kernel=kernel)
    return lower_step(L8, H100, plan, Lowering(compute_dtype=dtype, nbytes=TrainBytes(flash=True))).parts


@pytest.mark.parametrize("recompute,passes", [("none", 3), ("selective", 4), ("full", 4)])
def test_fa2_moves_the_attention_out_of_the_gemms_at_its_own_rate(recompute, passes):
    """By hand: A_16 = att_share·total is the forward attention at the 16-bit peak; FA2 takes A_16·(3 + recompute)
    out of the η-timed dense part and adds it back divided by 0.35."""
    fused, fa2 = _parts("fused", recompute), _parts("fa2", recompute)
    a16 = float(fused.att_share) * (float(fused.dense_1_s) + float(fused.expert_1_s))
    assert float(fused.attention_kernel_s) == 0.0
    assert float(fused.dense_1_s) - float(fa2.dense_1_s) == pytest.approx(passes * a16, rel=1e-9)
    assert float(fa2.attention_kernel_s) == pytest.approx(passes * a16 / 0.35, rel=1e-9)


def test_fa2_is_slower_than_fused_attention_at_any_gemm_efficiency_above_its_share():
    """At η > 0.35 the FA2 step is slower, at η < 0.35 faster; the gap grows with the attention share (32k here)."""
    fused, fa2 = _parts("fused"), _parts("fa2")
    for eta, slower in ((0.5, True), (0.3, False)):
        e = TrainEfficiency(eta, 1.0)
        assert (float(compute_s(fa2, e)) > float(compute_s(fused, e))) == slower
    e = TrainEfficiency(FA2_PEAK_SHARE, 1.0)
    assert float(compute_s(fa2, e)) == pytest.approx(float(compute_s(fused, e)), rel=1e-9)


def test_an_unknown_attention_kernel_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="^attention_kernel: 'fa9'"):
        TrainPlan(attention_kernel="fa9")
    assert kernel_attention_s("fused", np.array([2.0]))[1][0] == 0.0
