"""The routed experts' grouped GEMM pads each expert's tokens to its kernel's tile (core/times.expert_rows_padded,
catalog/engines [moe_kernel]): the tensor cores compute the padded rows, the weights are read once."""

from dataclasses import replace

import numpy as np
import pytest

from tokenomy.catalog import loader
from tokenomy.core.deployment import Deployment
from tokenomy.core.efficiency import ROOFLINE
from tokenomy.core.layout import Layout
from tokenomy.core.times import expert_rows_padded, kernel_terms
from tokenomy.serving.scheduler import profile_of


def test_padding_by_hand():
    rows = np.array([1.0, 16.0, 127.0, 300.0])
    # fewer tokens than a tile: the whole tile; many tiles: half a tile wasted on average
    assert np.allclose(expert_rows_padded(rows, 128.0), [128.0, 128.0, 191.0, 364.0])
    assert np.allclose(expert_rows_padded(rows, 16.0), [16.0, 24.0, 135.0, 308.0])
    assert expert_rows_padded(rows, 0.0) is rows  # the roofline: no padding


def _m3_b200():
    return Deployment(loader.model("minimax-m3"), loader.hardware("hgx-b200-8"), Layout(tp=8), "fp8", "bf16")


def test_deepgemm_tiles_multiply_the_expert_flops_not_the_bytes():
    d = _m3_b200()
    w = d.work(np.array([4.0, 64.0]), 1024.0)
    k = w.expert_rows  # tokens per expert read on a chip: about 1 at 4 users (16 assignments over ~15 experts)
    assert np.all(k > 1.0) and np.all(k < 3.0)
    plain = kernel_terms(w, d.peaks, ROOFLINE)
    tiled = kernel_terms(w, d.peaks, replace(ROOFLINE, expert_tile_rows=128.0))
    extra = w.expert_flops * (np.maximum(128.0, k + 64.0) / k - 1.0) / d.peaks.flops_per_s
    assert np.allclose(tiled[0] - plain[0], extra, rtol=1e-9)  # compute: the padded rows at the FP8 peak
    assert all(np.array_equal(a, b) for a, b in zip(tiled[1:], plain[1:]))  # weights, KV, activations: unchanged
    # a DeepGEMM step at 4 users computes ~100x the expert FLOPs its tokens need
    assert np.all(np.maximum(128.0, k + 64.0) / k > 40.0)


def test_the_engines_state_their_kernels_and_a_case_may_name_another():
    vllm, sglang, trt = (profile_of(loader.engine_file(e), 8) for e in ("vllm", "sglang", "trtllm"))
    assert vllm.expert_tile_rows() == 16.0 and sglang.expert_tile_rows() == 16.0  # Triton fused_moe, BLOCK_SIZE_M
    assert vllm.expert_tile_rows("deepgemm") == 128.0  # contiguous layout, 128-row expert segments
    assert trt.expert_tile_rows() == 0.0  # no tile stated: none charged
    assert vllm.on(ROOFLINE, "deepgemm").expert_tile_rows == 128.0
    with pytest.raises(ValueError, match="moe_kernel: 'cutlass' is not a MoE kernel of vllm"):
        vllm.expert_tile_rows("cutlass")


def test_the_minimax_m3_b200_rows_name_deepgemm_and_the_h200_rows_run_the_default():
    from tokenomy.validation.load import cases

    rows = [c.case for c in cases() if c.case.id.startswith("inferencex-vllm-minimaxm3-")]
    assert len(rows) == 40
    assert {c.moe_kernel for c in rows if c.hardware == "b200"} == {"deepgemm"}
    assert {c.moe_kernel for c in rows if c.hardware == "h200"} == {None}


def test_a_kernel_table_without_its_default_is_refused():
    from pydantic import ValidationError

    from tokenomy.catalog.schema.engines import EngineMoeKernel
    with pytest.raises(ValidationError, match="default: 'marlin' is not among kernels"):
        EngineMoeKernel(default="marlin", kernels={"triton": 16.0}, source="test", as_of="2026-12-05")


def test_the_tiles_are_a_floor_under_the_small_m_share_not_a_second_charge():
    d = _m3_b200()
    w = d.work(np.array([4.0, 64.0, 8192.0]), 1024.0)
    eff = replace(ROOFLINE, flops_fraction=0.5, gemm_half_tokens=96.0)
    plain = kernel_terms(w, d.peaks, eff)[0]
    k, pk = w.expert_rows, d.peaks
    bal = eff.balance_rows(pk.flops_per_s, pk.hbm_bytes_per_s, w.expert_w)
    # the small-M share: the experts' own rows at the share of no fewer than the balance rows
    small_m_s = w.expert_flops / (pk.flops_per_s * eff.gemm_fraction(np.maximum(k, bal)))
    for tile in (16.0, 128.0):
        tiles_s = w.expert_flops * np.maximum(tile, k + tile / 2) / k / (pk.flops_per_s * 0.5)  # at eta_max
        got = kernel_terms(w, d.peaks, replace(eff, expert_tile_rows=tile))[0]
        assert np.allclose(got - plain, np.maximum(small_m_s, tiles_s) - small_m_s, rtol=1e-9, atol=1e-15)
    # 8,192 users: ~256 tokens an expert, past the balance rows: the small-M share binds, 16-row tiles add nothing
    assert k[2] > bal and np.isclose(kernel_terms(w, d.peaks, replace(eff, expert_tile_rows=16.0))[0][2], plain[2])


def test_validation_times_each_case_at_its_kernels_tile():
    from tokenomy.validation.load import cases
    from tokenomy.validation.prepare import prepare_serving

    s = prepare_serving(cases(("inferencex-blog-minimax-m3-vllm",)))
    tiles = dict(zip(s.chip, s.expert_tile))
    assert tiles == {"b200": 128.0, "h200": 16.0}  # DeepGEMM as the source says, else vLLM's Triton default
