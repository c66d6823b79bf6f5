"""Every catalog file loads and validates; bad files fail with the file and the field named."""

import json
import tomllib

import pytest

from tokenomy.catalog import loader
from tokenomy.catalog.loader import ROOT, CatalogError, _validate
from tokenomy.catalog.schema import ChipFile

TOML_KINDS = ["chips", "systems", "storage", "prices", "kv_tiering"]


@pytest.mark.parametrize("kind", TOML_KINDS)
def test_every_toml_file_validates_and_cites(kind):
    files = sorted((ROOT / kind).glob("*.toml"))
    assert files, f"no {kind} files"
    get = {"chips": loader.chip_file, "systems": loader.system_file, "storage": loader.storage_file,
           "prices": loader.price_file, "kv_tiering": loader.kv_tiering}[kind]
    for f in files:
        obj = get(f.stem)
        assert obj.name == f.stem
        assert "source" in f.read_text()


def test_required_chips_and_systems_exist():
    need_chips = {"a100-80gb-sxm", "h100-sxm", "h200", "b200", "b300", "gb200", "gb300", "rubin", "mi300x", "mi355x",
                  "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-v7", "h800", "h20"}
    assert need_chips <= set(loader.chip_names())
    assert {"hgx-h100-8", "hgx-h200-8", "hgx-b200-8", "gb200-nvl72", "gb300-nvl72", "vr200-nvl144", "hgx-h800-8",
            "hgx-h20-8"} <= set(loader.system_names())
    assert loader.chip_file("rubin").preliminary


def test_sparse_figures_kept_apart_from_dense():
    # H100 SXM datasheet: bf16 989.4 TFLOPS dense, 1,979 with 2:4 sparsity (nvidia.com/en-us/data-center/h100).
    h = loader.chip_file("h100-sxm")
    assert h.peak_flops_per_s.bf16 == pytest.approx(989.4e12, rel=0.01)
    assert h.sparse_flops_per_s.bf16 == pytest.approx(2 * h.peak_flops_per_s.bf16, rel=0.01)


GiB = 2 ** 30


@pytest.mark.parametrize("chip,gib", [("tpu-v5p", 95), ("tpu-v6e", 32), ("tpu-v7", 192)])
def test_tpu_hbm_in_the_unit_googles_table_states(chip, gib):
    # docs.cloud.google.com/tpu/docs/tpu7x: "HBM capacity per chip (GiB) | 95 | 32 | 192" (v5p, v6e, TPU7x): one
    # table, one unit, so v6e and v7 are both binary (v6e was stored as a decimal 32e9).
    assert loader.chip_file(chip).hbm.bytes == pytest.approx(gib * GiB, rel=1e-3)


def test_datasheet_and_device_capacities_kept_beside_the_usable_one():
    h, b = loader.chip_file("h100-sxm").hbm, loader.chip_file("b200").hbm
    # H100: engine keeps the 80 GB datasheet figure; the device exposes 81,559 MiB (NVIDIA/nccl#1264)
    assert h.bytes == h.datasheet_bytes == 80e9 and h.device_bytes == pytest.approx(81559 * 2 ** 20, rel=1e-3)
    # B200: usable 180 GB (DGX B200 1,440 GB / 8) vs the 192 GB announced; nvidia-smi 183,359 MiB
    assert b.bytes == 180e9 and b.datasheet_bytes == 192e9
    assert b.device_bytes == pytest.approx(183359 * 2 ** 20, rel=1e-3)
    assert loader.hardware("b200").chip.hbm_bytes == 180e9  # the engine uses the usable capacity
    for n in loader.chip_names():
        m = loader.chip_file(n).hbm
        for other in (m.datasheet_bytes, m.device_bytes):
            assert other is None or m.bytes <= other * (1 + 1e-9), n  # usable never above what exists


def test_export_control_variants_differ_from_h100_where_the_rules_bite():
    h100, h800, h20 = (loader.hardware(n) for n in ("hgx-h100-8", "hgx-h800-8", "hgx-h20-8"))
    # H800: NVLink cut to 400 GB/s total = 200 per direction (DeepSeek, deepseek-ai/DeepEP#16) vs 450; compute and HBM kept
    assert h800.topology.scale_up.bytes_per_s == pytest.approx(200e9)
    assert h800.topology.scale_up.bytes_per_s < h100.topology.scale_up.bytes_per_s
    assert h800.chip.peak_flops_per_s == h100.chip.peak_flops_per_s and h800.chip.hbm_bytes == h100.chip.hbm_bytes
    # H20: compute cut (148 bf16 / 296 fp8 dense) but more and faster HBM (96 GB, 4.0 TB/s), full NVLink
    for dt in ("bf16", "fp8"):
        assert h20.chip.peak_flops_per_s[dt] < 0.2 * h100.chip.peak_flops_per_s[dt]
    assert h20.chip.peak_flops_per_s["bf16"] == pytest.approx(148e12)
    assert h20.chip.peak_flops_per_s["fp8"] == pytest.approx(296e12)
    assert h20.chip.hbm_bytes > h100.chip.hbm_bytes and h20.chip.hbm_bytes_per_s > h100.chip.hbm_bytes_per_s
    assert h20.topology.scale_up.bytes_per_s == h100.topology.scale_up.bytes_per_s
    for f in (loader.chip_file("h800"), loader.chip_file("h20")):
        assert "export" in f.model_dump_json().lower()  # the notes say why


def test_host_attached_tiers_state_their_link_into_the_gpu():
    for n in loader.storage_names():
        f = loader.storage_file(n)
        if f.tier in ("ddr", "cxl"):
            assert f.link is not None and f.link.source, n
            assert f.link.bytes_per_s_per_direction <= 1e12, n  # PCIe/C2C class, not a memory bandwidth
    assert "tomshardware" not in loader.storage_file("host-ddr5").source  # was a CXL article


def test_every_system_names_an_existing_chip_and_a_domain_that_fits():
    for s in loader.system_names():
        f = loader.system_file(s)
        assert f.chip in loader.chip_names(), s
        hw = loader.hardware(s)
        assert hw.chip.name == f.chip
        assert 1 <= hw.scale_up_domain_size <= hw.num_chips, s
        assert hw.num_chips % hw.scale_up_domain_size == 0, s  # whole scale-up domains


def test_every_model_config_loads_and_is_json():
    for p in sorted((ROOT / "models").glob("*.json")):
        json.loads(p.read_text())
    for n in loader.model_names():
        m = loader.model(n)
        assert m.num_layers > 0


def test_bad_chip_file_names_file_and_field(tmp_path):
    good = tomllib.loads((ROOT / "chips" / "h100-sxm.toml").read_text())
    good["hbm"]["bytes_per_s"] = -1
    bad = tmp_path / "broken.toml"
    bad.write_text(_toml(good))
    with pytest.raises(CatalogError, match=r"broken.toml: field 'hbm.bytes_per_s'"):
        _validate(bad, ChipFile)


def test_unknown_names_list_the_allowed_ones():
    with pytest.raises(CatalogError, match="allowed chips: .*h100-sxm"):
        loader.hardware("h1000")
    with pytest.raises(CatalogError, match="allowed: a catalog name"):
        loader.model("no-such-model")


def test_model_path_and_directory(tmp_path):
    src = ROOT / "models" / "meta-llama--Llama-3.1-8B.json"
    (tmp_path / "config.json").write_text(src.read_text())
    assert loader.model(str(tmp_path)).num_layers == 32
    assert loader.model(str(tmp_path / "config.json")).num_layers == 32


@pytest.mark.parametrize("mutate,msg", [
    (lambda d: d.pop("hidden_size"), "missing field 'hidden_size'"),
    (lambda d: d.update(num_hidden_layers=-2), "'num_hidden_layers' must be"),
    (lambda d: d.update(model_type="mamba"), "model_type 'mamba' not supported"),
])
def test_malformed_configs(tmp_path, mutate, msg):
    d = json.loads((ROOT / "models" / "meta-llama--Llama-3.1-8B.json").read_text())
    mutate(d)
    p = tmp_path / "config.json"
    p.write_text(json.dumps(d))
    with pytest.raises(CatalogError, match=msg):
        loader.model(str(p))


def test_not_json(tmp_path):
    p = tmp_path / "config.json"
    p.write_text("{not json")
    with pytest.raises(CatalogError, match="not valid JSON"):
        loader.model(str(p))


def _toml(d: dict, prefix: str = "") -> str:
    """A minimal TOML writer for the chip tables (scalars, dates and nested tables)."""
    import datetime as dt
    lines, tables = [], []
    for k, v in d.items():
        if isinstance(v, dict):
            tables.append((k, v))
        elif isinstance(v, str):
            lines.append(f"{k} = {json.dumps(v)}")
        elif isinstance(v, bool):
            lines.append(f"{k} = {str(v).lower()}")
        elif isinstance(v, dt.date):
            lines.append(f"{k} = {v.isoformat()}")
        else:
            lines.append(f"{k} = {v!r}")
    out = "\n".join(lines) + "\n"
    for k, v in tables:
        out += f"\n[{prefix}{k}]\n" + _toml(v, f"{prefix}{k}.")
    return out


def test_torchtitans_grand_teton_h100_is_the_part_its_page_states():
    """torchtitan docs/performance.md (2024-12): 96 GB HBM2e at 2.4 TB/s, the default 500 W limit, a peak "between
    SXM and NVL" (footnote 2): the catalog takes the midpoint, inside that bracket, on the H100's die."""
    g, sxm = loader.chip_file("h100-sxm-96gb-500w"), loader.chip_file("h100-sxm")
    assert g.hbm.bytes_per_s == 2.4e12 and g.hbm.bytes == 96e9 and g.power.tdp_w == 500
    assert g.same_die_as == "h100-sxm" and g.family == sxm.family
    nvl_bf16, nvl_fp8 = 1671e12 / 2, 3341e12 / 2  # NVIDIA's H100 NVL figures with sparsity, halved
    assert nvl_bf16 < g.peak_flops_per_s.bf16 < sxm.peak_flops_per_s.bf16
    assert nvl_fp8 < g.peak_flops_per_s.fp8 < sxm.peak_flops_per_s.fp8
    assert g.peak_flops_per_s.bf16 == pytest.approx((nvl_bf16 + sxm.peak_flops_per_s.bf16) / 2, rel=1e-3)
    assert loader.resolve("chips", "grand-teton-h100") == "h100-sxm-96gb-500w"
