"""MI300X's ring all-reduce share is RCCL's own ceiling on a fully connected Infinity Fabric mesh (catalog/efficiency/
busbw.toml [mi300x]): no in-switch reduction, so a GPU sends on its 7 peer links at once, each 48 GB/s per direction
usable of the 64 GB/s datasheet rate (ROCm/rccl issue 1210; rccl src/graph/topo.h GFX94X_XGMI_WIDTH). Without the
entry MI300X took the mean of the NVIDIA systems' shares, set by NVLS runs (0.97 of the link): a 64 MiB all-reduce on
8 MI300X then ran at ~436 GB/s bus bandwidth, above what RCCL can reach."""

import pytest

from tokenomy.catalog import loader
from tokenomy.core import collectives as col
from tokenomy.core.times import _calibrated
from tokenomy.validation import anchors, load

XGMI_USABLE_BYTES_PER_S = 48e9  # per link and direction, gfx94 (ROCm/rccl issue 1210)


def test_the_mi300x_entry_is_seven_usable_peer_links():
    chip = loader.hardware("mi300x").chip
    peers = chip.scale_up.domain_size - 1
    busbw = loader.read_toml("efficiency", anchors.BUSBW)["mi300x"]["busbw_bytes_per_s"]
    assert peers == 7 and busbw == pytest.approx(peers * XGMI_USABLE_BYTES_PER_S)
    assert anchors.nccl_link_fractions()["mi300x"] == pytest.approx(0.75)
    assert anchors.nccl_link_fractions()["mi300x"] < min(v for c, v in anchors.nccl_link_fractions().items()
                                                          if c != "mi300x")


def test_a_large_all_reduce_on_eight_mi300x_stays_under_the_rccl_ceiling():
    hw = loader.hardware("mi300x")
    eff = load.efficiency_set("mi300x")
    ring_share = eff.nccl_link_fraction / eff.link_fraction
    size = 64 * 2**20
    t = float(col.all_reduce_cost(_calibrated(hw.topology, eff), 8, ring_share=ring_share)(size))
    busbw = 2 * 7 / 8 * size / t
    assert 0.9 * 336e9 < busbw <= 336e9
