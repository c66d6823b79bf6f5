"""The KV-tier schema (issue 28): a system's ``[host]`` table (DRAM, NVMe, the chip's read path per node) and the
tiered-KV-cache policies of catalog/kv_tiering/; bad files name the file and the field."""

import tomllib

import pytest

from tokenomy.catalog import loader
from tokenomy.catalog.loader import ROOT, CatalogError, _validate
from tokenomy.catalog.schema import TIER_KEYS, KvTieringFile, SystemFile
from tokenomy.econ.kv_tiers import TIER_ORDER


def _toml(d: dict) -> str:
    import json

    lines, tables = [], []
    for k, v in d.items():
        (tables if isinstance(v, dict) else lines).append((k, v))
    out = [f"{k} = {json.dumps(v) if not hasattr(v, 'isoformat') else v.isoformat()}" for k, v in lines]
    for name, t in tables:
        out.append(f"[{name}]")
        out += [f"{k} = {json.dumps(v) if not hasattr(v, 'isoformat') else v.isoformat()}" for k, v in t.items()]
    return "\n".join(out) + "\n"


def test_tier_keys_are_the_economics_tier_order():
    assert TIER_KEYS == TIER_ORDER


def test_host_reaches_the_hardware_a_system_resolves_to():
    """DGX H100: 2 TB DDR5, eight 3.84 TB U.2 NVMe, PCIe Gen5 x16 per GPU (NVIDIA BasePOD reference architecture);
    GB200 NVL72: a tray of 4 GPUs, 2 x 480 GB LPDDR5X, each Grace shared by 2 GPUs: 256e9 B/s per GPU when both read
    (18.4 TB/s / 36 Graces / 2 GPUs, under NVLink-C2C's 450e9 per direction)."""
    h100, gb200 = loader.hardware("hgx-h100-8").host, loader.hardware("gb200-nvl72").host
    assert h100.chips_per_node == 8 and h100.dram_bytes == pytest.approx(2.199e12)
    assert h100.nvme_bytes == pytest.approx(8 * 3.84e12) and h100.dram_to_chip_bytes_per_s == 64e9
    assert gb200.chips_per_node == 4 and gb200.dram_bytes == 960e9 and gb200.dram_to_chip_bytes_per_s == 256e9
    assert loader.hardware("h100-sxm").host is None  # a bare chip has no host in the catalog


def test_every_policy_uses_known_tiers_hbm_first():
    for name in loader.kv_tiering_names():
        f = loader.kv_tiering(name)
        assert f.tiers[0] == "hbm" and all(t in TIER_ORDER for t in f.tiers)
        assert set(f.engines) <= set(loader.engine_names()) | {"dynamo", "mooncake"}


def test_host_that_does_not_divide_the_system_names_the_field(tmp_path):
    d = tomllib.loads((ROOT / "systems" / "hgx-h100-8.toml").read_text())
    d["host"]["chips_per_node"] = 3
    bad = tmp_path / "broken.toml"
    bad.write_text(_toml(d))
    with pytest.raises(CatalogError, match=r"broken.toml: .*chips_per_node 3 does not divide"):
        _validate(bad, SystemFile)
    d["host"]["chips_per_node"], d["host"]["dram_bytes"] = 8, -1
    bad.write_text(_toml(d))
    with pytest.raises(CatalogError, match=r"field 'host.dram_bytes'"):
        _validate(bad, SystemFile)


@pytest.mark.parametrize("field,value,msg", [("tiers", ["ddr", "hbm"], "must start with 'hbm'"),
                                             ("tiers", ["hbm", "tape"], "field 'tiers.1'"),
                                             ("store", "lazy", "field 'store'"),
                                             ("chunk_tokens", 0, "field 'chunk_tokens'")])
def test_bad_policy_names_the_field(tmp_path, field, value, msg):
    d = tomllib.loads((ROOT / "kv_tiering" / "lmcache.toml").read_text())
    d[field] = value
    bad = tmp_path / "broken.toml"
    bad.write_text(_toml(d))
    with pytest.raises(CatalogError, match=msg):
        _validate(bad, KvTieringFile)
