"""The lecture's MoE and pipelining conclusions, computed (shared/reference/lecture.md §2.7-2.8, §4.1 L16-L20, L26)."""

from dataclasses import replace

import numpy as np
import pytest

from tokenomy.catalog import loader
from tokenomy.core import engine, pipeline
from tokenomy.core.coeffs import shape_of
from tokenomy.core.deployment import Deployment
from tokenomy.core.layout import Layout as Plans
from tokenomy.parallel import moe
from tokenomy.parallel.topology import topology


def evaluate(shape, topo, peaks, plans, batch, context, len_pass=1, **kw):
    """The engine on the roofline set, at DeepSeek-V3's own (fp8) precision."""
    prec = Deployment(loader.model("deepseek-v3"), loader.hardware("gb200-nvl72")).precision
    return engine.evaluate(shape, topo, peaks, plans, prec, engine.Pass(batch, context, len_pass, **kw))


@pytest.fixture(scope="module")
def ds():
    return shape_of(loader.model("deepseek-v3"))


@pytest.fixture(scope="module")
def nvl72():
    hw = loader.hardware("gb200-nvl72")
    return topology(hw), Deployment(loader.model("deepseek-v3"), hw).peaks


@pytest.mark.parametrize("k, layers, expected", [(8, 1, 2.0), (2, 1, 0.5), (2, 2, 1.0)])
def test_l16_rack_hop_ratio(k, layers, expected):
    # L16: ratio = 2·k·ℓ/8 with scale-out 8x slower (lecture §2.8); need >= 1.
    assert pipeline.rack_hop_ratio(k, layers, up_bytes_per_s=8.0, out_bytes_per_s=1.0) == pytest.approx(expected)


def test_l16_scale_out_is_about_8x_slower_from_the_catalog():
    # §2.7 "typically about eight times slower": HGX H100 NVLink 450 GB/s vs one 400 Gb/s NIC per GPU = 9x.
    assert topology(loader.hardware("hgx-h100-8")).scale_out_ratio == pytest.approx(8, rel=0.2)


def test_l16_from_a_plan(ds, nvl72):
    # DeepSeek-V3 (k = 8) over 4 NVL72 racks: ratio = 2·8·(MoE layers per stage)·(50/900) >> 1: the hop is fine.
    topo, hw = nvl72
    r = evaluate(ds, topo, hw, Plans(ep=64, pp=4), 1024, 8192)
    moe_per_stage = np.ceil(58 * 16 / 61)  # 58 MoE layers of 61, a stage holds ceil(61/4) = 16 layers
    assert float(r.rack_hop_ratio) == pytest.approx(2 * 8 * moe_per_stage * 50e9 / 900e9)
    assert float(r.rack_hop_ratio) > 1


def test_l17_pipelining_shrinks_weights_not_kv(ds, nvl72):
    # L17: c_mem = N_total/(E·P) + b·len·bytes_tok/E with B = P·b: the weight term falls as 1/P, KV does not.
    w, kv = moe.lecture_memory_per_chip(1e12, micro_batch=64, context=8192, kv_bytes_per_token=70_272, ep=64,
                                        stages=np.array([1, 2, 4]))
    assert list(w * np.array([1, 2, 4])) == pytest.approx([1e12 / 64] * 3)
    assert list(kv) == pytest.approx([64 * 8192 * 70_272 / 64] * 3)
    # The plan engine agrees (DeepSeek-V3: 61 layers, so a stage holds ceil(61/P)/61 of them).
    topo, hw = nvl72
    P = np.array([1, 2, 4])
    r = evaluate(ds, topo, hw, Plans(ep=64, pp=P), 64 * P, 8192)
    f = np.ceil(61 / P) / 61
    assert list(r.kv_bytes_per_chip / (f * P)) == pytest.approx([64 * 8192 * 70_272 / 64] * 3)
    assert r.weight_bytes_per_chip[2] < 0.27 * r.weight_bytes_per_chip[0]


def test_l18_256_experts_on_a_72_gpu_rack():
    # L18: 256 experts on 64 of 72 GPUs -> 4 experts per GPU, 8 GPUs idle.
    p = moe.placement(256, topology(loader.hardware("gb200-nvl72")).domain_size)
    assert (p.ep, p.experts_per_chip, p.idle_chips) == (64, 4, 8)


def test_l19_hopper_scale_up_capacity():
    # L19: 8 x 80 GB Hopper = 640 GB.
    assert topology(loader.hardware("hgx-h100-8")).domain_hbm_bytes == pytest.approx(640e9)


def test_l20_four_stages_add_ten_ms():
    # L20: 4 stages, ~2.5 ms per hop -> +10 ms per token (20 -> 30 ms).
    assert pipeline.added_latency_per_token(4, 2.5e-3) == pytest.approx(10e-3)
    base = pipeline.DecodePipeline(stages=4, microbatches=4, stage_s=5e-3, hop_s=0.0).tpot_s
    hopped = pipeline.DecodePipeline(stages=4, microbatches=4, stage_s=5e-3, hop_s=2.5e-3).tpot_s
    assert (base, hopped) == (pytest.approx(20e-3), pytest.approx(30e-3))


def test_l20_from_a_plan(ds, nvl72):
    # The same on DeepSeek-V3, EP 64 per rack, 4 racks: TPOT grows by 4 x 2.5 ms when the hop costs 2.5 ms.
    topo, hw = nvl72
    fast = evaluate(ds, topo, hw, Plans(ep=64, pp=4), 1024, 8192, hop_latency_s=0.0)
    slow = evaluate(ds, topo, hw, Plans(ep=64, pp=4), 1024, 8192, hop_latency_s=2.5e-3)
    assert float(slow.step_s - fast.step_s) == pytest.approx(10e-3)
    assert int(slow.hops) == 4


def test_l26_bandwidth_not_capacity():
    # L26: 1 TB of weights: NVL72 (72 x 8 TB/s) -> 1.74 ms; 8 x H100 (8 x 3.35 TB/s) -> 37.3 ms (±5%).
    nvl, hgx = topology(loader.hardware("gb200-nvl72")), topology(loader.hardware("hgx-h100-8"))
    assert moe.latency_floor_s(1e12, nvl.domain_size, nvl.chip.hbm_bytes_per_s) == pytest.approx(1.74e-3, rel=0.05)
    assert moe.latency_floor_s(1e12, hgx.domain_size, hgx.chip.hbm_bytes_per_s) == pytest.approx(37.3e-3, rel=0.05)
    # Pipelining over 4 nodes gives capacity (4 x 640 GB) but not bandwidth: the floor does not move.
    assert moe.latency_floor_s(1e12, 8, 3.35e12, stages=4) == pytest.approx(moe.latency_floor_s(1e12, 8, 3.35e12))


def test_one_rack_bounds_an_expert_layer():
    # §2.7: spanning two racks sends half the tokens over scale-out, which then binds.
    topo = topology(loader.hardware("gb200-nvl72"))
    span = moe.rack_span(topo, tokens_per_chip=1024, experts_per_tok=8, hidden_size=7168, ep_per_domain=64)
    assert span.scale_out_share == pytest.approx(0.5)
    # bandwidth-bound (1024 tokens per chip): 900/50 = 18x slower links carry half the bytes vs 63/64: ~9x
    assert span.slowdown == pytest.approx(0.5 / 50e9 / (63 / 64 / 900e9), rel=0.05)
    assert span.slowdown > 5


def test_ep_over_two_racks_slows_the_step(ds, nvl72):
    # Step time of a DeepSeek-V3 decode step with the same tokens per chip: EP 64 on one rack vs 128 over two.
    topo, hw = nvl72
    t64 = replace(topo, scale_up=replace(topo.scale_up, chips=64.0))
    one = evaluate(ds, t64, hw, Plans(ep=64), 64 * 64, 4096)
    two = evaluate(ds, t64, hw, Plans(ep=128), 128 * 64, 4096)
    assert float(two.ep_comm_s) > 5 * float(one.ep_comm_s)
    assert float(two.step_s) > float(one.step_s)
