"""Hardware and power specs built from the catalog's files: a chip or system name (or a what-if file) -> ``Hardware``;
a chip and deployment class -> ``PowerSpec``; each from the validated-value cache (cache.py) while its files are
unchanged."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from tokenomy.catalog import cache, files
from tokenomy.catalog.files import CatalogError, _file, _index, _key, _pick, catalog_stems, did_you_mean, resolve
from tokenomy.specs import OVERRIDABLE, Chip, Hardware, Host, Level, LinkSpec, PowerSpec, Topology

if TYPE_CHECKING:
    from tokenomy.catalog.schema import ChipFile, WhatIfFile


def _chip(f: ChipFile) -> Chip:
    link = lambda s: LinkSpec(s.bytes_per_s_per_direction, s.latency_s, s.domain_size)  # noqa: E731
    return Chip(f.name, f.display_name, f.peak_flops_per_s.by_dtype(), f.hbm.bytes, f.hbm.bytes_per_s,
                link(f.scale_up), link(f.scale_out), f.power.tdp_w, f.price.usd_per_hour, f.preliminary,
                f.hbm.device_bytes)


def _level(name: str, link, chips: float) -> Level:
    return Level(name, chips, link.bytes_per_s_per_direction, link.latency_s, link.technology)


def _topology(name: str, chip: Chip, cf: ChipFile, num_chips: int, domain: int, up=None, out=None) -> Topology:
    """Scale-up domain and scale-out network of a chip or system; a system's own links override its chip's."""
    return Topology(name, chip, _level("scale-up", up or cf.scale_up, float(domain)),
                    _level("scale-out", out or cf.scale_out, float("inf")), max(num_chips, 1))

def _system_hardware(stem: str) -> tuple[Hardware, cache.Sources | None]:
    """A system's Hardware and the bytes of its files (None: not cacheable, its chip named by an alias, whose
    meaning depends on every chip file)."""
    s, s_raw = _file("systems", stem)
    chip_stem = _pick("chips", s.chip).stem
    cf, c_raw = _file("chips", chip_stem)
    chip = _chip(cf)
    usd = s.price.usd_per_hour if s.price else chip.usd_per_hour
    topo = _topology(s.name, chip, cf, s.num_chips, s.scale_up_domain_size, s.scale_up, s.scale_out)
    host = None if s.host is None else Host(s.host.chips_per_node, s.host.dram_bytes, s.host.dram_to_chip_bytes_per_s,
                                            s.host.nvme_bytes, s.host.nvme_read_bytes_per_s, s.host.source)
    hw = Hardware(s.name, chip, s.num_chips, s.scale_up_domain_size, usd, s.preliminary or chip.preliminary, topo,
                  host=host)
    if _key(s.chip) != chip_stem:
        return hw, None
    return hw, {files.ROOT / "systems" / f"{stem}.toml": s_raw, files.ROOT / "chips" / f"{chip_stem}.toml": c_raw}


def _chip_hardware(stem: str) -> tuple[Hardware, cache.Sources]:
    cf, raw = _file("chips", stem)
    chip = _chip(cf)
    topo = _topology(chip.name, chip, cf, 1, chip.scale_up.domain_size)
    hw = Hardware(chip.name, chip, 1, chip.scale_up.domain_size, chip.usd_per_hour, chip.preliminary, topo)
    return hw, {files.ROOT / "chips" / f"{stem}.toml": raw}


@lru_cache(maxsize=None)
def hardware(name: str) -> Hardware:
    """A chip name (one chip) or a system name (its chip count, scale-up domain and links); the name is resolved
    on every call, the Hardware comes from the cache while the files it was built from are unchanged."""
    if (key := resolve("systems", name)) is not None:
        return cache.cached(("hardware", "systems", key, str(files.ROOT)), lambda: _system_hardware(key))
    if (key := resolve("chips", name)) is not None:
        return cache.cached(("hardware", "chips", key, str(files.ROOT)), lambda: _chip_hardware(key))
    if str(name).endswith(".toml"):
        return what_if_hardware(Path(name))
    raise CatalogError(f"unknown hardware {name!r}; {did_you_mean(name, _index('chips') | _index('systems'))} "
                       f"allowed chips: {', '.join(catalog_stems('chips'))}; systems: {', '.join(catalog_stems('systems'))}; or a what-if file "
                       "(a .toml naming a base and the fields it sets)")


def what_if_hardware(path: Path) -> Hardware:
    """A partial chip/system file (schema.WhatIfFile): its ``base`` catalog entry with the file's fields set
    (specs.Hardware.with_), each override carrying the file's ``source``; named by its ``name`` or its stem."""
    from tokenomy.catalog.schema import WhatIfFile

    if not path.is_file():
        raise CatalogError(f"no such file: {path}")
    f: WhatIfFile = files._validate(path, WhatIfFile)
    if not f.fields():
        raise CatalogError(f"{path.name}: sets no field; add e.g. hbm_bytes_per_s = \"x2\" (allowed: "
                           f"{', '.join(OVERRIDABLE)})")
    try:
        base = hardware(f.base)
    except CatalogError as e:
        raise CatalogError(f"{path.name}: field 'base': {e}") from None
    try:
        return base.with_(source=f"{f.source} (base {base.name}, {path.name}, as of {f.as_of})",
                          name=f.name or path.stem, **f.fields())
    except ValueError as e:
        raise CatalogError(f"{path.name}: field {str(e).partition(':')[0]!r}:{str(e).partition(':')[2]}") from None


# ---- power ---------------------------------------------------------------------------------------------


def facility_classes() -> list[str]:
    """The deployment classes catalog/power/facility.toml names (each with its PUE)."""
    return list(_facility()[0].classes)


def facility():
    """catalog/power/facility.toml, validated (schema.FacilityFile): the classes, electricity, ownership, split."""
    return _facility()[0]


@lru_cache(maxsize=1)
def _facility():
    from tokenomy.catalog.schema import FacilityFile

    path = files.ROOT / "power" / "facility.toml"
    raw = path.read_bytes()
    return files._validate(path, FacilityFile, raw), raw


def _power_spec(chip_stem: str, facility_class: str | None) -> tuple[PowerSpec, cache.Sources]:
    pf, p_raw = _file("power", chip_stem)
    cf, c_raw = _file("chips", chip_stem)
    fac, f_raw = _facility()
    cls = fac.default_class if facility_class is None else facility_class
    if cls not in fac.classes:
        raise CatalogError(f"unknown facility class {cls!r}; allowed: {', '.join(fac.classes)}")
    sp = fac.split
    spec = PowerSpec(chip_stem, pf.board.idle_w, cf.power.tdp_w, pf.host.host_w, pf.host.network_w,
                     pf.capex.usd_per_chip, pf.capex.estimate, pf.reference.w_per_chip if pf.reference else None,
                     cls, fac.classes[cls].pue, fac.electricity.usd_per_kwh, fac.ownership.amortisation_years,
                     fac.ownership.hosting_usd_per_kw_month, cf.hbm.bytes_per_s, sp.compute, sp.hbm_j_per_byte,
                     sp.link)
    root = files.ROOT
    return spec, {root / "power" / f"{chip_stem}.toml": p_raw, root / "chips" / f"{chip_stem}.toml": c_raw,
                  root / "power" / "facility.toml": f_raw}


@lru_cache(maxsize=None)
def power(chip: str, facility_class: str | None = None) -> PowerSpec:
    """A chip's power and ownership spec (catalog/power/<chip>.toml with facility.toml) under a deployment class
    (None: the file's default); from the validated-value cache while the files are unchanged."""
    stem = _pick("chips", chip).stem
    if not (files.ROOT / "power" / f"{stem}.toml").exists():
        raise CatalogError(f"no power file for chip {stem!r} (catalog/power/); have: {', '.join(catalog_stems('power'))}")
    key = ("power", stem, str(facility_class), str(files.ROOT))
    return cache.cached(key, lambda: _power_spec(stem, facility_class))
