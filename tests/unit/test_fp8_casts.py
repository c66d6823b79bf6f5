"""core/fp8_casts.py: torchao's tensorwise FP8 casts as HBM traffic, by hand for Llama 3.1 8B (torchtitan Table 1)."""

import pytest

from tokenomy.catalog import loader
from tokenomy.core.fp8_casts import fp8_cast_s, linear_elems
from tokenomy.core.memory import TrainBytes
from tokenomy.core.training import Lowering, TrainPlan, lower_step

L8 = loader.model("llama-3.1-8b")  # D 4096, 32 heads of 128, 8 KV heads, F 14336, 32 layers, gated
G = loader.hardware("h100-sxm-96gb-500w")  # 2.4 TB/s


def test_the_elements_cast_per_token_and_the_weights_by_hand():
    D, F, kv = 4096, 14336, 2 * 8 * 128
    inputs = D + D + D + F  # x to q/k/v, attention output, x to gate/up, SwiGLU output
    grads = D + kv + D + 2 * F + D  # dq, dk, dv, d(o out), d(gate), d(up), d(down out)
    weights = D * D + D * kv + D * D + 3 * D * F  # q, k, v, o, gate, up, down
    per_token, w = linear_elems(L8)
    assert per_token == 32 * (inputs + grads) and w == 32 * weights


def test_one_step_of_table_1_by_hand():
    """8 GPUs, FSDP, local batch 2 x 8192 (one micro-batch per step): 4 B per element of 16,384 tokens' casts and
    8 B per weight, at 0.92 x 2.4 TB/s."""
    plan = TrainPlan(dp=8, zero=3, seq_len=8192, micro_batch=2, global_batch=16, fp8_scaling="tensorwise")
    per_token, w = linear_elems(L8)
    want = (4 * per_token * 16384 + 8 * w) / (0.92 * 2.4e12)
    assert float(fp8_cast_s(L8, plan, "fp8", 2.4e12)) == pytest.approx(want, rel=1e-12)
    assert 0.05 < want < 0.15  # about 5% of the 1.92 s step torchtitan measured
    assert float(fp8_cast_s(L8, plan, "bf16", 2.4e12)) == 0.0  # BF16 GEMMs cast nothing
    fused = TrainPlan(dp=8, zero=3, seq_len=8192, micro_batch=2, global_batch=16)
    assert float(fp8_cast_s(L8, fused, "fp8", 2.4e12)) == 0.0  # Transformer Engine's casts are in its kernels


def test_the_step_carries_the_casts_beside_the_gemms():
    how = Lowering(compute_dtype="fp8", nbytes=TrainBytes(flash=True))
    plan = TrainPlan(dp=8, zero=3, seq_len=8192, micro_batch=2, global_batch=16, recompute="selective")
    torchao = TrainPlan(**{**plan.__dict__, "fp8_scaling": "tensorwise"})
    te, ao = lower_step(L8, G, plan, how).parts, lower_step(L8, G, torchao, how).parts
    assert float(te.cast_s) == 0.0 and float(ao.dense_1_s) == float(te.dense_1_s)
    assert float(ao.cast_s) == pytest.approx(float(fp8_cast_s(L8, torchao, "fp8", 2.4e12)), rel=1e-12)


def test_an_unknown_scaling_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="^fp8_scaling: 'rowwise'"):
        TrainPlan(fp8_scaling="rowwise")
