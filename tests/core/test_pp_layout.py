"""Uneven pipeline stages (core/pp_layout.py): Megatron-Core's layout strings, and the slowest rank over the
engine's even stage, on the catalog's real configs."""

import dataclasses

import pytest

from tokenomy.catalog import loader
from tokenomy.core.memory import TrainBytes
from tokenomy.core.pp_layout import imbalance, parse, stage_flops
from tokenomy.core.training import Lowering, TrainPlan, lower_step

DSV3 = "Et*4|(t*4|)*14tmL"  # Megatron-Bridge's DeepSeek-V3 layout for (pp, vp) = (16, 1), (8, 2), (4, 4)


def test_the_deepseek_v3_layout_is_15_stages_of_4_layers_and_a_last_of_one_with_mtp_and_loss():
    st = parse(DSV3)
    assert len(st) == 16 and [s.count("t") for s in st] == [4] * 15 + [1]
    assert st[0] == "Etttt" and st[-1] == "tmL"
    assert [s.count("t") for s in parse("Et|(tt|)*30mL")] == [1] + [2] * 30 + [0]


def test_the_slowest_rank_sets_the_factor_whatever_the_grouping():
    # Llama 3.1 8B, 32 layers, the head on the last stage. pp 4: rank 3 holds 8 layers + the head h, the engine's
    # stage 8/32 of (32 t + h): (8t + h) / (8t + h/4). pp 2 vp 2: rank 1 holds stages 1 and 3, 16 layers + h, over
    # (16t + h/2). One t and h (from the 4 stages' FLOPs) give both.
    m = loader.model("llama-3.1-8b")
    lay = "Et*8|t*8|t*8|t*8L"
    f = stage_flops(m, lay, 8192)
    h = f[3] - f[2]
    t = f[2] / 8
    assert h == pytest.approx(2 * m.hidden_size * m.vocab_size)
    assert imbalance(m, lay, 4, 1, 8192) == pytest.approx((8 * t + h) / (8 * t + h / 4))
    assert imbalance(m, lay, 2, 2, 8192) == pytest.approx((16 * t + h) / (16 * t + h / 2))
    assert imbalance(m, "", 4, 1, 8192) == 1.0


def test_deepseek_v3_pp16_last_rank_is_the_slowest():
    m = loader.model("deepseek-v3")
    f = stage_flops(m, DSV3, 4096)
    assert max(f) == f[-1] and f[-1] > f[5]  # 1 layer + MTP + two heads outweigh 4 MoE layers
    assert imbalance(m, DSV3, 16, 1, 4096) > imbalance(m, DSV3, 8, 2, 4096) > 1.0


def test_a_layout_that_does_not_match_the_model_or_the_stages_is_refused_naming_the_field():
    m = loader.model("llama-3.1-8b")
    with pytest.raises(ValueError, match=r"^pp_layout: .* 31 transformer layers"):
        stage_flops(m, "Et*8|t*8|t*8|t*7L", 4096)
    with pytest.raises(ValueError, match=r"^pp_layout: 4 stages; pp x virtual stages"):
        imbalance(m, "Et*8|t*8|t*8|t*8L", 8, 1, 4096)
    with pytest.raises(ValueError, match=r"^pp_layout: 'Ex\*8' is not a layout"):
        parse("Ex*8")


def test_a_stated_layout_paces_the_steps_compute_by_the_slowest_rank():
    # DeepSeek-V3 on 256 B200, PP16 EP8 (Megatron-Bridge's B200 preset, the recipe's (16, 1) layout): the lowered
    # step's forward, backward and recompute FLOPs time (dense and expert parts) grows by exactly the imbalance
    m, hw = loader.model("deepseek-v3"), loader.hardware("b200")
    plan = TrainPlan(dp=16, pp=16, ep=8, schedule="1f1b", recompute="selective", seq_len=4096, global_batch=2048,
                     recompute_modules=("mla_up_proj",))
    how = Lowering(compute_dtype="fp8", nbytes=TrainBytes(flash=True))
    even = lower_step(m, hw, plan, how).parts
    uneven = lower_step(m, hw, dataclasses.replace(plan, pp_layout=DSV3), how).parts
    compute = lambda p: float(p.dense_1_s + p.expert_1_s)  # noqa: E731
    assert compute(uneven) / compute(even) == pytest.approx(imbalance(m, DSV3, 16, 1, 4096), rel=1e-6)
    with pytest.raises(ValueError, match=r"^pp_layout: 16 stages; pp x virtual stages = 8 x 1"):
        lower_step(m, hw, dataclasses.replace(plan, pp=8, dp=32, pp_layout=DSV3), how)
