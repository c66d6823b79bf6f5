"""η_hbm and α_AR are anchored, not fitted: each chip's efficiency file carries the measured streaming share and
all-reduce kernel latency of its microbenchmarks (catalog/efficiency/streaming.toml, allreduce.toml), and the fit
moves only the free terms."""

import numpy as np
import pytest

from tokenomy.validation import anchors, calibrate_fit as cf, load, run


def test_every_measurement_cites_a_source_and_is_a_share_of_the_datasheet():
    from tokenomy.catalog import loader

    data = loader.read_toml("efficiency", anchors.STREAMING)
    assert data
    for chip, e in data.items():
        assert e["source"].startswith("http"), chip
        assert 0.5 < e["measured_bytes_per_s"] / e["datasheet_bytes_per_s"] < 1.0, chip
        assert e["fraction"] == pytest.approx(e["measured_bytes_per_s"] / e["datasheet_bytes_per_s"], abs=0.01)


def test_every_all_reduce_measurement_cites_a_source_and_is_a_decode_sized_kernel():
    from tokenomy.catalog import loader

    data = loader.read_toml("efficiency", anchors.ALLREDUCE)
    assert {"h100-sxm", "h200"} <= set(data)
    for chip, e in data.items():
        assert e["source"].startswith("https://github.com/"), chip
        assert 1e-6 < e["latency_s"] < 2e-5, chip  # a few microseconds: the kernel alone
        assert e["message_bytes"] <= 64 * 1024 and e["world_size"] >= 2, chip


@pytest.mark.parametrize("chip", ["h100-sxm", "h200", "a100-80gb-sxm", "b200", "gb200", "mi300x", "pooled"])
def test_stored_terms_carry_the_anchor(chip):
    terms = load.efficiency_for(chip).terms
    assert terms.hbm_fraction == pytest.approx(anchors.anchored(chip)["hbm_fraction"])
    assert terms.allreduce_latency_s == pytest.approx(anchors.anchored(chip)["allreduce_latency_s"])


def test_a_chip_without_a_measurement_takes_the_mean_and_says_so():
    lat = anchors.allreduce_latencies()
    assert "a100-80gb-sxm" not in lat
    assert anchors.anchored("a100-80gb-sxm")["allreduce_latency_s"] == pytest.approx(sum(lat.values()) / len(lat))
    assert "derived" in anchors.provenance("a100-80gb-sxm") and "derived" not in anchors.provenance("h100-sxm")


def test_the_fit_holds_fixed_terms_and_moves_the_rest():
    p = run.prepare(("rocm-vllm-0.10-mi300x",))
    s = p.serving
    fixed = {"hbm_fraction": 0.61}
    out = cf.fit_serving(s, cf.START, cf.RIDGE_POOLED, fixed)
    assert out.hbm_fraction == 0.61
    moved = [f for f in cf.SERVING_FIELDS if f != "hbm_fraction" and
             not np.isclose(cf.term(out, f), cf.term(cf.START, f))]
    assert len(moved) >= 3, moved


def test_the_request_overhead_is_a_published_frontend_figure_held_for_every_chip():
    """o_req is the serving stack's, not the chip's: one cited figure (catalog/efficiency/frontend.toml) that the
    catalog fit holds for every chip, while a user's own calibration (anchors.ANCHORED_FIELDS) may still refit it."""
    from tokenomy.catalog import loader

    data = loader.read_toml("efficiency", anchors.FRONTEND)
    assert data["source"].startswith("https://github.com/") and 1e-4 < data["request_overhead_s"] < 2e-2
    held = {chip: anchors.anchored(chip)["request_overhead_s"] for chip in ("h100-sxm", "h200", "mi355x", "pooled")}
    assert set(held.values()) == {data["request_overhead_s"]}
    assert "request_overhead_s" in anchors.HELD_FIELDS and "request_overhead_s" not in anchors.ANCHORED_FIELDS


@pytest.mark.parametrize("chip", ["h100-sxm", "h200", "b200", "mi355x", "pooled"])
def test_stored_terms_carry_the_frontend_overhead(chip):
    """Before it was held, the fit had put it at 2-4 ms on H100/H200 and 28-32 ms on MI355X/B200 (standing in for
    slow MoE prefill), and at 46 ms on H100/H200 with the TensorRT-LLM 0.14 online table left out."""
    assert load.efficiency_for(chip).terms.request_overhead_s == pytest.approx(anchors.request_overhead_s())
