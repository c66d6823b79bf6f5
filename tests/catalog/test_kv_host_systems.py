"""Golden: the [host] tables of the systems beside hgx-h100-8 and gb200-nvl72 (issue 28), each as its source states
it, and the tiered-KV policies of SGLang HiCache, Dynamo KVBM and Mooncake as their docs describe them."""

import pytest

from tokenomy.catalog import loader

PCIE_GEN5_X16 = 64e9  # B/s per direction (128 GB/s bidirectional)
NVLINK_C2C_SHARED = 256e9  # B/s per GPU: one Grace's 512e9 LPDDR5X shared by its 2 GPUs (< C2C 450e9 per direction)


@pytest.mark.parametrize("system,per_node,dram,link,nvme", [
    # DGX H100/H200 user guide: 2 TB (32 x 64 GiB), 8 x 3.84 TB U.2; MLPerf v4.1 H200 system: PCIe Gen5 x16
    ("hgx-h200-8", 8, 32 * 2**36, PCIE_GEN5_X16, 8 * 3.84e12),
    # DGX B200 user guide: 2 TB base, 8 x 3.84 TB U.2
    ("hgx-b200-8", 8, 2.0e12, PCIE_GEN5_X16, 8 * 3.84e12),
    # GB300 NVL72 tray: 2 Grace x 480 GB LPDDR5X over NVLink-C2C, 4 E1.S drives (3.84 TB each, estimated)
    ("gb300-nvl72", 4, 2 * 480e9, NVLINK_C2C_SHARED, 4 * 3.84e12),
    # AMD's MLPerf v4.1 MI300X node: 1.5 TiB, 2 data NVMe drives
    ("mi300x-8", 8, 1.5 * 2**40, PCIE_GEN5_X16, 2 * 3.84e12),
    # Crusoe's MLPerf v6.1 MI355X nodes: 3000 GB DDR5, 8 x 3.84 TB NVMe
    ("mi355x-8", 8, 3.0e12, PCIE_GEN5_X16, 8 * 3.84e12),
])
def test_host_as_published(system, per_node, dram, link, nvme):
    h = loader.hardware(system).host
    assert h.chips_per_node == per_node
    assert h.dram_bytes == pytest.approx(dram, rel=2e-3)
    assert h.dram_to_chip_bytes_per_s == link
    assert h.nvme_bytes == pytest.approx(nvme)


def test_policies_as_their_docs_describe_them():
    hicache, kvbm, mooncake = (loader.kv_tiering(n) for n in ("hicache", "kvbm", "mooncake"))
    # HiCache: L2 loaded layer by layer under the prefill; write_through is ServerArgs' default policy
    assert (hicache.load, hicache.store, hicache.tiers[:2]) == ("layerwise-overlapped", "write-through", ["hbm", "ddr"])
    # KVBM: 'a write-through cache', G1 -> G2 -> G3 -> G4, vLLM's 16-token blocks
    assert (kvbm.store, kvbm.tiers, kvbm.chunk_tokens) == ("write-through", ["hbm", "ddr", "local_flash", "object"], 16)
    # Mooncake: layer-wise load/store in the prefill, 512-token blocks of its released traces
    assert (mooncake.load, mooncake.chunk_tokens) == ("layerwise-overlapped", 512)
