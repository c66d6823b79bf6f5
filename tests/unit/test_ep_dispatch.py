"""The MoE dispatch and combine as DeepEP's normal kernels run them (issue 25, deliverable 3): a token goes once to
each destination node over scale-out and once to each destination rank over NVLink, and DeepSeek-V3's router
(n_group 8, topk_group 4) keeps a token's experts on at most 4 of 8 groups. Bytes per token are checked against
closed forms written here, by hand, on the real DeepSeek-V3 config on 8-GPU H800 nodes (NVLink 200 GB/s, one
400 Gb/s NIC per GPU); the engine's own path is not used for the expected values.

Hand derivation (k = 8 picks, uniform routing, picks independent): of X units each holding an equal share of the
experts a token reaches X·(1 − (1 − 1/X)^k), at most topk_group·max(X/8, 1) where the 8 groups align with the
units. Over G nodes of 8 ranks: scale-out copies = nodes·(G − 1)/G (its own node is one of them with probability
nodes/G), NVLink copies = ranks·7/8 (the peer that received each node's copy, or the source at home, forwards it).
"""

import json
from pathlib import Path

import numpy as np
import pytest

from tokenomy.arch.hf import ConfigError, from_config
from tokenomy.catalog import loader
from tokenomy.core import collectives as col
from tokenomy.core.deployment import Deployment
from tokenomy.core.layout import Layout

CONFIG = Path(__file__).parents[2] / "src/tokenomy/catalog/models/deepseek-ai--DeepSeek-V3.json"
D, K = 7168, 8
FP8, BF16 = 1 + 4 / 128, 2.0  # bytes per hidden element: FP8 dispatch with a float32 scale per 128, BF16 combine
PREFILL = (32.0, 4096.0, 4096.0)  # batch, context, tokens per sequence: a prefill pass (the normal kernels)


def spread(X):
    return X * (1 - (1 - 1 / X) ** K)


# by hand, per token: (NVLink copies, scale-out copies) for DeepSeek-V3 at EP g over g/8 nodes of 8 H800
HAND = {
    8: (min(spread(8), 4) * 7 / 8, 0.0),  # one node; each rank holds one group: 4 ranks at most
    32: (spread(32) * 7 / 8, spread(4) * 3 / 4),  # 4 nodes of 2 groups: 3.60 nodes, the limit (4) does not bind
    72: (spread(72) * 7 / 8, spread(9) * 8 / 9),  # 9 nodes: 8 groups cannot sit on them whole, no node limit
    144: (spread(144) * 7 / 8, spread(18) * 17 / 18),  # 18 nodes: likewise
}


def _dep(model, ep, hardware="hgx-h800-8"):
    m = loader.model(model) if isinstance(model, str) else model
    # DeepSeek's EP 72 and 144 hold 32 redundant experts (288 slots: open-infra-index day 6, LMSYS 2025-05-05)
    return Deployment(m, loader.hardware(hardware), Layout(ep=ep, redundant_experts=32 if ep % 9 == 0 else 0))


@pytest.mark.parametrize("ep", sorted(HAND))
def test_dispatch_and_combine_bytes_per_token_by_hand(ep):
    up, out = HAND[ep]
    w = _dep("deepseek-v3", ep).work(*PREFILL)
    for width in (FP8, BF16):  # dispatch, combine: the same copies, each at its own width
        assert float(w.ep_out_share) * K * D * width == pytest.approx(out * D * width, rel=1e-12)
        assert float(w.ep_up_share) * K * D * width == pytest.approx(up * D * width, rel=1e-12)
    # the numbers: EP32 sends each FP8 token over InfiniBand 2.70 times (19.96 kB), not 6 (44.3 kB)
    if ep == 32:
        assert out * D * FP8 == pytest.approx(19_955, rel=1e-3)


def test_ep_time_of_a_prefill_by_hand():
    # EP 32 on 4 nodes, roofline: each MoE layer's dispatch + combine moves the busiest rank's A assignments' bytes
    # over both levels at once; InfiniBand binds: 2·58·(5 us + A·D·(FP8 + BF16)/2·(copies/k)/50 GB/s)
    d = _dep("deepseek-v3", 32)
    w, r = d.work(*PREFILL), d.run(*PREFILL)
    A = float(w.expert_rows) * float(w.experts_read)
    per_assignment = D * (FP8 + BF16) / 2
    out = 5e-6 + A * per_assignment * HAND[32][1] / K / 50e9
    nvlink = 3e-6 + A * per_assignment * HAND[32][0] / K / 200e9
    assert out > nvlink
    assert float(r.ep_comm_s) == pytest.approx(2 * 58 * out, rel=1e-9)
    # against charging every assignment: 6 of its 8 copies cross InfiniBand (the (g - g_in)/g share)
    assert float(r.ep_comm_s) / (2 * 58 * (5e-6 + A * per_assignment * 24 / 32 / 50e9)) == pytest.approx(
        HAND[32][1] / 6, rel=0.01)


def test_the_node_limit_binds_where_groups_sit_on_nodes():
    # EP 64 on 8 nodes, one group per node (DeepSeek-V3's training layout, DeepEP's EP64 benchmark): a token reaches
    # at most 4 nodes, 3.5 of them remote, against 5.25·7/8 = 4.59 unlimited
    w = _dep("deepseek-v3", 64).work(*PREFILL)
    assert float(w.ep_out_share) * K == pytest.approx(4 * 7 / 8, rel=1e-12)
    assert spread(8) * 7 / 8 == pytest.approx(4.595, rel=1e-3)
    # at EP 144 (18 nodes) 8 groups cannot sit on whole nodes: the uncapped 6.61 nodes, 6.24 remote
    w144 = _dep("deepseek-v3", 144).work(*PREFILL)
    assert float(w144.ep_out_share) * K == pytest.approx(spread(18) * 17 / 18, rel=1e-12)
    assert float(w144.ep_out_share) * K > 4


def test_a_model_without_topk_group_keeps_the_uncapped_expectation():
    cfg = json.loads(CONFIG.read_text())
    free = from_config({k: v for k, v in cfg.items() if k not in ("n_group", "topk_group")}, "ds-v3-free")
    assert free.layers[5].mlp.n_group == 1 and free.layers[5].mlp.topk_group == 1
    w = _dep(free, 64).work(*PREFILL)
    assert float(w.ep_out_share) * K == pytest.approx(spread(8) * 7 / 8, rel=1e-12)
    assert float(w.ep_up_share) * K == pytest.approx(spread(64) * 7 / 8, rel=1e-12)
    # "greedy" routing (DeepSeek-V2-Lite) ignores the groups
    greedy = from_config(cfg | {"topk_method": "greedy"}, "ds-v3-greedy")
    assert greedy.layers[5].mlp.topk_group == 1


def test_group_fields_are_checked():
    cfg = json.loads(CONFIG.read_text())
    with pytest.raises(ConfigError, match="topk_group"):
        from_config(cfg | {"topk_group": 9}, "bad")
    with pytest.raises(ConfigError, match="n_group"):
        from_config(cfg | {"n_group": 3}, "bad")


def test_a_decode_pass_sends_every_assignment():
    # decode (and the verify of 1 + drafts, ep_low_latency) runs the low-latency kernels: per expert copies, the
    # share of the group off each level: 24/32 over InfiniBand, 7/32 over NVLink at EP 32
    d = _dep("deepseek-v3", 32)
    for w in (d.work(256.0, 4096.0), d.work(256.0, 4096.0, 3.0, ep_low_latency=True)):
        assert float(w.ep_out_share) == pytest.approx(24 / 32) and float(w.ep_up_share) == pytest.approx(7 / 32)


def test_reached_broadcasts_and_is_at_most_k_and_the_units():
    X = np.array([1.0, 2.0, 8.0, 64.0, 1e4])[:, None]
    k = np.array([1.0, 8.0, 22.0])
    r = col.reached(X, k)
    assert r.shape == (5, 3)
    assert np.all(r <= np.minimum(X, k) + 1e-9) and np.allclose(r[0], 1.0) and np.allclose(r[:, 0], 1.0)


def test_experts_of_eight_bits_dispatch_in_fp8():
    """DeepSeek-V3's FP8 experts send FP8 tokens with their scales and get BF16 back (DeepEP README); the same model
    served in BF16 sends BF16 both ways: per assignment (FP8 + BF16) against 2·BF16 bytes per hidden element. The
    deployment says which (Precision.narrow_experts), from its dtypes; the engine never compares widths itself."""
    fp8 = _dep("deepseek-v3", 8)
    bf16 = Deployment(fp8.model, fp8.hardware, fp8.layout, weight_dtype="bf16")
    assert fp8.precision.narrow_experts and not bf16.precision.narrow_experts
    ratio = fp8.work(*PREFILL).ep_bytes / bf16.work(*PREFILL).ep_bytes
    assert float(np.max(np.abs(ratio - (FP8 + BF16) / (2 * BF16)))) < 1e-12
