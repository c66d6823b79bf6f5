"""KV cache tiers: hold vs retrieve, break-even times, the drain-time rule (lecture.md §2.13)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenomy.catalog import loader
from tokenomy.econ import kv_tiers as kt
from tokenomy.answers.economics import deployment_request, serving

TIERS = [kt.Tier("hbm", "hbm", 80e9, 3.35e12, 2.69), kt.Tier("ddr", "ddr", 2e12, 921.6e9, 0.49),
         kt.Tier("flash", "local_flash", 7.68e12, 6.8e9, 0.023), kt.Tier("disk", "hdd", 24e12, 285e6, 0.011)]


def test_lecture_drain_rule_l24():
    # lecture.md §2.13: drain HBM ~20 ms, DDR ~1-10 s, flash ~1 min, disk ~1 h -> 5 min flash, 1 h disk
    names = ["hbm", "ddr", "flash", "disk"]
    assert kt.drain_rule_choice([300, 3600], [0.02, 3.0, 60.0, 3600.0], names) == ["flash", "disk"]


@given(size=st.floats(1e6, 1e11), t1=st.floats(0, 1e6), t2=st.floats(0, 1e6))
def test_cost_grows_with_hold_time(size, t1, t2):
    lo, hi = sorted((t1, t2))
    c = kt.tier_costs(size, [lo, hi], TIERS)
    assert np.all(c[:, 1] >= c[:, 0])


@given(size=st.floats(1e6, 1e11))
def test_break_even_equalises_costs(size):
    for a, b in zip(TIERS, TIERS[1:]):
        t = kt.break_even_s(size, a, b)
        if t is not None:
            ca, cb = kt.tier_costs(size, t, [a, b])[:, 0]
            assert ca == pytest.approx(cb, rel=1e-9)


def test_hbm_retrieve_is_free_and_max_hold_meets_remat():
    assert kt.retrieve_cost(1e9, TIERS[0]) == 0.0
    t = kt.max_hold_s(1e9, TIERS[2], remat_usd=1e-3)
    assert kt.tier_costs(1e9, t, [TIERS[2]])[0, 0] == pytest.approx(1e-3)


def test_envelope_is_contiguous_and_ends_cheap():
    segs = kt.envelope(1e9, TIERS, remat_usd=1e-2)
    assert segs[0]["from_s"] is None and segs[-1]["to_s"] is None
    for a, b in zip(segs, segs[1:]):
        assert a["to_s"] == b["from_s"]
        names, _ = kt.cheapest(1e9, [a["to_s"] * 0.99, a["to_s"] * 1.01], TIERS, 1e-2)
        assert names == [a["tier"], b["tier"]]


def test_catalog_tiers_and_remat():
    tiers = kt.tiers_from_catalog()
    kinds = [t.tier for t in tiers]
    assert kinds == sorted(kinds, key=kt.TIER_ORDER.index) and {"hbm", "ddr", "hdd"} <= set(kinds)
    sv = serving(deployment_request("deepseek-v3", "hgx-h200-8", None, {"kv_dtype": "fp8"}), [8], [32768], 32768)
    r = kt.remat_usd(sv, 32768, 8)
    t = sv.terms(8.0, 32768.0, 32768.0)
    assert r == pytest.approx(float(t.step_s) * 8 * 3.59 / 3600 / 8)
    d = kt.implied_discounts(32768 * 35136, 300, tiers, r)
    assert 0 < d.hit_fraction < 1 and d.write_premium_fraction > 0
    with pytest.raises(ValueError):
        kt.remat_usd(sv, 10_000_000, 64)


def test_stall_makes_retrieval_dearer():
    a = kt.retrieve_cost(1e9, TIERS[2])
    b = kt.retrieve_cost(1e9, TIERS[2], gpu_usd_per_s=0.01, stall=1.0)
    assert b == pytest.approx(a + 1e9 / 6.8e9 * 0.01)


def test_host_tier_is_read_at_its_link_not_its_dram():
    # Host DDR5 (~614 GB/s) reaches a GPU over PCIe Gen5 x16 (64 GB/s per direction): BW = min(memory, link)
    f = loader.storage_file("host-ddr5")
    (t,) = kt.tiers_from_catalog(["host-ddr5"])
    assert f.link.bytes_per_s_per_direction == 64e9 and f.read_bytes_per_s > 5 * f.link.bytes_per_s_per_direction
    assert t.read_bytes_per_s == 64e9 and t.memory_bytes_per_s == f.read_bytes_per_s and t.bound_by == "link"
    assert t.drain_s == pytest.approx(f.capacity_bytes / 64e9)
    assert kt.retrieve_cost(1e9, t) == pytest.approx(1e9 / 64e9 * f.usd_per_hour / 3600)
    # a link faster than the memory does not speed it up (CXL: module x8 36 GB/s behind a x16 port)
    (c,) = kt.tiers_from_catalog(["cxl-memory"])
    assert c.read_bytes_per_s == loader.storage_file("cxl-memory").read_bytes_per_s and c.bound_by == "memory"
    assert float(kt.effective_read_bytes_per_s(3.35e12)) == 3.35e12


def test_cache_answer_uses_the_link_capped_host_tier():
    from tokenomy.answers.economics import cache
    r = cache(model="deepseek-v3", hardware="hgx-h200-8", prefix_tokens=8192, hold=[300])
    row = {x["tier"]: x for x in r.extra["tiers"]}["host-ddr5"]
    assert row["read_bytes_per_s"] == 64e9 and row["bound_by"] == "link" and row["link"] == "PCIe Gen5 x16"
    assert row["retrieve_s"] == pytest.approx(r.extra["prefix_bytes"] / 64e9 + 1e-7)


def test_host_tier_follows_the_chips_host():
    # An HGX part's host memory is x86 DDR5 behind a PCIe Gen5 x16 port (64e9 B/s per direction); a GB200's is the
    # Grace LPDDR5X behind NVLink-C2C (450e9 per direction, NVIDIA's GB200 NVL72 page): 7x faster to drain.
    from tokenomy.econ.kv_tiers import tiers_from_catalog

    hgx = {t.name: t for t in tiers_from_catalog(chip="h200") if t.tier == "ddr"}
    gb = {t.name: t for t in tiers_from_catalog(chip="gb200") if t.tier == "ddr"}
    assert set(hgx) == {"host-ddr5"} and set(gb) == {"grace-lpddr5x"}
    assert hgx["host-ddr5"].read_bytes_per_s == 64e9 and gb["grace-lpddr5x"].read_bytes_per_s == 450e9
