"""Pope et al. 2022, "Efficiently Scaling Transformer Inference" (arXiv 2211.05102), reproduced.

Sources: Table 1 (max context, PaLM 540B on 64 TPU v4, 30% of HBM for KV) and §3.3 layouts, as quoted in
shared/reference/lecture.md §3.3-3.4 and the validation fixtures of §4.2 (P11-P15).
"""

import numpy as np
import pytest

from tokenomy.arch.params import kv_bytes_at_context, weight_bytes
from tokenomy.parallel import pope

E = 18_432  # PaLM 540B d_model (lecture.md §3.1)
F = 73_728  # d_ff = 4 E


def test_table1_max_context_within_1p5_percent():
    # P11: Table 1 of Pope et al. 2022: 1,320 / 330; 660 / 165; 43,000 / 10,700.
    paper = {("multihead", 128): 1320, ("multihead", 512): 330, ("baseline multiquery", 128): 660,
             ("baseline multiquery", 512): 165, ("optimized multiquery", 128): 43_000,
             ("optimized multiquery", 512): 10_700}
    rows = pope.table1()
    assert {(r.variant, r.batch) for r in rows} == set(paper)
    for r in rows:
        assert r.max_context == pytest.approx(paper[(r.variant, r.batch)], rel=0.015), r


def test_table1_batch_sharding_is_64x_head_sharding():
    # §3.4: batch-sharding the single K/V head splits the cache over all 64 chips instead of replicating it.
    rows = {(r.variant, r.batch): r.max_context for r in pope.table1()}
    for B in (128, 512):
        assert rows[("optimized multiquery", B)] / rows[("baseline multiquery", B)] == pytest.approx(64)


def test_p12_multihead_kv_is_three_times_the_weights():
    # P12: 48 heads x 128, 118 layers, batch 512, context 2048, bf16: KV = 3.04 TB vs 1.08 TB of weights.
    mh = pope.palm_variant(48, 48, 128)
    kv = 512 * kv_bytes_at_context(mh, 2048)
    assert kv == pytest.approx(3.04e12, rel=0.02)
    assert kv / weight_bytes(mh) == pytest.approx(3.0, rel=0.1)


@pytest.mark.parametrize("n, expected", [(16, 2.0), (64, 1.0), (256, 0.5)])
def test_p13_2d_weight_stationary_comm(n, expected):
    # P13: 2D WS comm / (B·L·E) = 8/sqrt(n) at F = 4E; 1D stays 2.0.
    assert pope.ws2d_elems(1, 1, E, F, n) / E == pytest.approx(expected)
    assert pope.ws1d_elems(1, 1, E, F, n) / E == pytest.approx(2.0)


def test_p14_2d_split_on_64_chips():
    # P14: n = 64, F = 4E -> X = 4, YZ = 16.
    X, YZ = pope.ws2d_split(64, E, F)
    assert (X, YZ) == (pytest.approx(4.0), pytest.approx(16.0))


def test_p15_weight_gathered_optimum():
    # P15: B·L = 512 x 2048, n = 64, F = 73,728 -> N_opt = sqrt(BL·n/F) = 30.2.
    assert pope.wg_best_n(512, 2048, F, 64) == pytest.approx(30.2, abs=0.05)
    # At the optimum the cost is 4·E·sqrt(B·L·F/n) (lecture.md §3.3).
    N = pope.wg_best_n(512, 2048, F, 64)
    assert pope.wg_elems(512, 2048, E, F, 64, N) == pytest.approx(4 * E * np.sqrt(512 * 2048 * F / 64))


def test_layout_rule_2d_beats_1d_beyond_16_chips():
    # §3.3: 2D WS beats 1D WS when n > 16 for F = 4E; they tie at 16.
    assert pope.crossover_n(E, F) == 16
    n = np.array([4, 8, 16, 32, 64, 256])
    two, one = pope.ws2d_elems(1, 1, E, F, n), pope.ws1d_elems(1, 1, E, F, n)
    assert list(two < one) == [False, False, False, True, True, True]
    assert two[2] == pytest.approx(one[2])


def test_layout_rule_weight_gathered_wins_at_large_tokens_per_batch():
    # §3.3 rule: decode (tokens per batch = B, small) uses 2D WS; batch-512 prefill of 2048 tokens uses WG.
    names = [pope.LAYOUTS[i] for i in pope.best_layout(np.array([1, 64, 512, 512 * 2048]), 1, E, F)]
    assert names[:3] == ["2D weight-stationary"] * 3
    assert names[3].endswith("weight-gathered")
    # lecture.md §3.3 [I]: with the torus's discrete choices, XY (16) comes out ~7% cheaper than XYZ (64).
    c = pope.layout_elems(512 * 2048, 1, E, F)
    assert c[4] / c[3] == pytest.approx(1.07, abs=0.01)
    assert 1e3 < pope.wg_crossover_tokens(E, F) < 512 * 2048
