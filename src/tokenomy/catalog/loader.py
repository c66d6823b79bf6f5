"""Catalog access: a name, a path to a config.json, or a directory holding one -> a validated spec.

Errors are ``CatalogError`` with one line naming the file and the field (or the allowed names).

pydantic (catalog/schema/) is imported only where a file is validated: ``hardware()`` answers from the
validated-value cache (catalog/cache.py) when its files are unchanged, so a simple answer's start-up skips it.
"""

from __future__ import annotations

import json
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from tokenomy.arch.hf import ConfigError, from_config
from tokenomy.arch.model import ModelArch
from tokenomy.catalog import cache
from tokenomy.specs import OVERRIDABLE, Chip, Hardware, Host, Level, LinkSpec, PowerSpec, Topology

if TYPE_CHECKING:
    from pydantic import BaseModel

    from tokenomy.catalog.schema import ApiPriceFile, ChipFile, EngineFile, EngineFlagsFile, KvTieringFile, ProtocolFile, StorageFile, SystemFile, WhatIfFile

ROOT = Path(__file__).parent
M = TypeVar("M", bound="BaseModel")
MAX_CONFIG_BYTES = 1_000_000  # real config.json files are a few kB
# catalog kind -> its class in catalog/schema/ (imported on first validation)
SCHEMAS = {"chips": "ChipFile", "systems": "SystemFile", "storage": "StorageFile", "prices": "ApiPriceFile",
           "engines": "EngineFile", "power": "PowerFile",
           "engines/flags": "EngineFlagsFile", "protocols": "ProtocolFile", "kv_tiering": "KvTieringFile",
           "validation/kv_tiering": "KvTierValidationFile", "validation/energy": "EnergyCaseFile",
           "validation/energy_claims": "EnergyClaimFile"}  # catalog kind -> its class in catalog/schema/ (first validation)


class CatalogError(ValueError):
    """Unknown name or invalid catalog file; the message is one line for the user."""


def catalog_path(kind: str, stem: str, ext: str = "toml") -> Path:
    """Where catalog/<kind>/<stem>.<ext> lives (for the refit, which writes fitted terms, and for cache keys)."""
    return ROOT / kind / f"{stem}.{ext}"


def _parse_toml(path: Path, raw: bytes | None = None) -> dict:
    try:
        return tomllib.loads(path.read_text() if raw is None else raw.decode())
    except tomllib.TOMLDecodeError as e:
        raise CatalogError(f"{path.name}: not valid TOML ({e})") from None


def inside_catalog(path) -> bool:
    """Whether ``path`` lies in the package catalog (user files, such as calibrated terms, are never written there)."""
    return Path(path).resolve().is_relative_to(ROOT.resolve())


def read_user_toml(path) -> dict:
    """A user's own TOML file as plain data (not the catalog: e.g. the terms `tokenomy calibrate --from` writes), for
    the layer that validates it against its own schema."""
    p = Path(path)
    if not p.is_file():
        raise CatalogError(f"no such file: {path}")
    return _parse_toml(p)


def read_toml(kind: str, stem: str, raw: bytes | None = None) -> dict:
    """catalog/<kind>/<stem>.toml as plain data (``raw``: its bytes, where the caller read them through the cache)
    for the layers that validate it against their own schema (validation cases, fitted terms, anchors, runs)."""
    path = catalog_path(kind, stem)
    if raw is None and not path.is_file():
        raise CatalogError(f"catalog/{kind}/{stem}.toml: no such file; allowed: {', '.join(catalog_stems(kind))}")
    return _parse_toml(path, raw)


def _validate(path: Path, schema: type[M], raw: bytes | None = None) -> M:
    """``path`` (its bytes ``raw`` where the caller read them already) validated against ``schema``."""
    from pydantic import ValidationError

    data = _parse_toml(path, raw)
    try:
        return schema.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err["loc"]) or "(top level)"
        raise CatalogError(f"{path.name}: field '{field}': {err['msg']}") from None


def catalog_stems(kind: str, ext: str = "toml") -> list[str]:
    """The files of catalog/<kind>, by stem, sorted."""
    return sorted(p.stem for p in (ROOT / kind).glob(f"*.{ext}"))


def _key(name: str) -> str:
    """A typed name as the catalog compares it: case, spaces and underscores do not matter ('TPU v5e' = 'tpu-v5e')."""
    return "-".join(str(name).strip().lower().replace("_", " ").split())


@lru_cache(maxsize=None)
def _index(kind: str) -> dict[str, str]:
    """Every name a chip/system/... answers to -> its file stem: the stem, then the file's ``aliases`` list (read
    with tomllib alone, no schema; only consulted when a name is not a stem)."""
    stems = catalog_stems(kind)
    index = {s: s for s in stems}
    for s in stems:
        try:
            aliases = tomllib.loads((ROOT / kind / f"{s}.toml").read_text()).get("aliases", [])
        except tomllib.TOMLDecodeError:
            continue  # reported with its file and field when the file itself is loaded
        for a in aliases if isinstance(aliases, list) else []:
            index.setdefault(_key(a), s)
    return index


def nearest(name: str, index: dict[str, str], n: int = 3) -> list[str]:
    """The n catalog names closest to a mistyped one (difflib ratio over names and aliases), best first."""
    import difflib  # only a mistyped name needs it

    out: list[str] = []
    for hit in difflib.get_close_matches(_key(name), list(index), n=len(index), cutoff=0.0):
        if index[hit] not in out:
            out.append(index[hit])
        if len(out) == n:
            break
    return out


def did_you_mean(name: str, index: dict[str, str]) -> str:
    return f"did you mean {', '.join(nearest(name, index))}?"


@lru_cache(maxsize=None)
def _stems(kind: str) -> frozenset[str]:
    return frozenset(catalog_stems(kind))


def resolve(kind: str, name: str) -> str | None:
    """The file stem a typed name means in ``kind`` ('H100' -> 'h100-sxm' in chips), or None."""
    key = _key(name)
    if key in _stems(kind):
        return key
    return _index(kind).get(key)


def _pick(kind: str, name: str) -> Path:
    stem = resolve(kind, name)
    if stem is None:
        raise CatalogError(f"unknown {kind[:-1]} {name!r}; {did_you_mean(name, _index(kind))} "
                           f"allowed: {', '.join(catalog_stems(kind))}")
    return ROOT / kind / f"{stem}.toml"


@lru_cache(maxsize=None)
def _file(kind: str, stem: str) -> tuple[BaseModel, bytes]:
    """The validated file ``kind/stem.toml`` and the bytes it was validated from (what the cache records)."""
    from tokenomy.catalog import schema

    path = ROOT / kind / f"{stem}.toml"
    raw = path.read_bytes()
    return _validate(path, getattr(schema, SCHEMAS[kind]), raw), raw


def _load(kind: str, name: str):
    return _file(kind, _pick(kind, name).stem)[0]


def chip_file(name: str) -> ChipFile:
    return _load("chips", name)


def system_file(name: str) -> SystemFile:
    return _load("systems", name)


def storage_file(name: str) -> StorageFile:
    return _load("storage", name)


def price_file(name: str) -> ApiPriceFile:
    return _load("prices", name)


def engine_file(name: str) -> EngineFile:
    """A serving-engine profile (catalog/engines/<name>.toml); unknown names list the allowed ones."""
    return _load("engines", name)


def engine_flags(name: str) -> EngineFlagsFile:
    """An engine's flag table (catalog/engines/flags/<name>.toml): each planned setting as its CLI spells it."""
    return _load("engines/flags", name)


def engine_flag_names() -> list[str]:
    """The engines (and orchestrators) tokenomy can write launch commands for."""
    return catalog_stems("engines/flags")


def hf_repo(model_name: str) -> str | None:
    """The Hugging Face repo id of a catalog model (models/SOURCES.toml ``hf_repo``), None for any other model."""
    hit = _model_index().get(str(model_name).strip().lower())
    return None if hit is None else model_sources().get(hit.stem, {}).get("hf_repo")


def protocol_file(name: str) -> ProtocolFile:
    """A benchmark tool's protocol (catalog/protocols/<name>.toml); unknown names list the allowed ones."""
    return _load("protocols", name)


def protocol_names() -> list[str]:
    return catalog_stems("protocols")


def kv_tiering(name: str) -> KvTieringFile:
    """A tiered-KV-cache policy (catalog/kv_tiering/<name>.toml: LMCache, HiCache, KVBM, Mooncake): which tiers it
    uses, its chunk, when it stores and how it loads; unknown names list the allowed ones."""
    return _load("kv_tiering", name)


def kv_tiering_names() -> list[str]:
    return catalog_stems("kv_tiering")


def kv_tier_validation() -> tuple:
    """Every published tiered-KV / prefix-routing measurement file (catalog/validation/kv_tiering/*.toml), validated;
    a case id appearing twice is refused."""
    files = tuple(_file("validation/kv_tiering", stem)[0] for stem in catalog_stems("validation/kv_tiering"))
    ids = [c.id for f in files for c in f.case]
    allowed = {"recompute", "hbm", *kv_tiering_names()}
    for f in files:
        for c in f.case:
            if c.policy not in allowed:
                raise CatalogError(f"validation/kv_tiering/{f.source.id}: case {c.id}: policy {c.policy!r}; allowed: "
                                   f"{', '.join(sorted(allowed))}")
            if catalog_model(c.model) is None or not (resolve("chips", c.hardware) or resolve("systems", c.hardware)):
                raise CatalogError(f"validation/kv_tiering/{f.source.id}: case {c.id}: model {c.model!r} or hardware "
                                   f"{c.hardware!r} is not in the catalog")
    if len(ids) != len(set(ids)):
        raise CatalogError(f"validation/kv_tiering: a case id appears twice: {sorted({i for i in ids if ids.count(i) > 1})}")
    return files


@lru_cache(maxsize=1)
def energy_validation() -> tuple:
    """Every published energy measurement file (catalog/validation/energy/*.toml), validated; case ids unique."""
    files = tuple(_file("validation/energy", stem)[0] for stem in catalog_stems("validation/energy"))
    ids = [c.id for f in files for c in f.case]
    if len(ids) != len(set(ids)):
        raise CatalogError(f"energy validation: a case id appears twice: {sorted(ids)}")
    return files


@lru_cache(maxsize=1)
def energy_claims() -> tuple:
    """Every vendors' energy claim file (catalog/validation/energy_claims/*.toml), validated; a scored claim names
    its model, lengths, interactivity and both sides."""
    files = tuple(_file("validation/energy_claims", stem)[0] for stem in catalog_stems("validation/energy_claims"))
    for f in files:
        for c in f.claim:
            if not c.unscored and None in (c.model, c.isl, c.osl, c.newer, c.older) or not (c.unscored or
                                                                                           c.interactivity):
                raise CatalogError(f"{f.source.id}.toml: claim {c.id}: a scored claim needs model, isl, osl, "
                                   "interactivity, newer and older (or unscored saying why not)")
    return files


def chip_names() -> list[str]:
    return catalog_stems("chips")


def system_names() -> list[str]:
    return catalog_stems("systems")


def storage_names() -> list[str]:
    return catalog_stems("storage")


def price_names() -> list[str]:
    return catalog_stems("prices")


def engine_names() -> list[str]:
    """The serving engines with a profile (catalog/engines/<name>.toml)."""
    return catalog_stems("engines")


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


@lru_cache(maxsize=None)
def engine_overlap(name: str) -> tuple[str, str | None, bool, tuple[float, float]]:
    """(version, host.overlap_since, overlap.two_batch_overlap, (overlap.sm_share_normal, sm_share_low_latency)) of a
    serving-engine profile: what its calibrated efficiency set takes from it (answers/resolve.py), from the cache
    while the file is unchanged (no pydantic)."""
    stem = _pick("engines", name).stem

    def build():
        f, raw = _file("engines", stem)
        o = f.overlap
        return ((f.version, f.host.overlap_since, o.two_batch_overlap, (o.sm_share_normal, o.sm_share_low_latency)),
                {ROOT / "engines" / f"{stem}.toml": raw})
    return cache.cached(("engine-overlap-sm", stem, str(ROOT)), build)


@lru_cache(maxsize=None)
def chip_family(name: str) -> str:
    """A chip's architecture family (chips/<name>.toml ``family``: hopper, blackwell, cdna3, ...; the chip's own
    name where the file gives none), from the cache while the file is unchanged."""
    stem = _pick("chips", name).stem

    def build():
        f, raw = _file("chips", stem)
        return (f.family or f.name), {ROOT / "chips" / f"{stem}.toml": raw}
    return cache.cached(("chip-family", stem, str(ROOT)), build)


ERROR_BANDS = ROOT / "efficiency" / "error_bands.toml"
BAND_FIELDS = {"n": int, "p10": float, "p50": float, "p90": float, "batch_min": float, "batch_max": float,
               "length_min": float, "length_max": float}


@lru_cache(maxsize=1)
def error_bands() -> tuple[dict, ...]:
    """The error bands by regime (efficiency/error_bands.toml, written by `tokenomy validate --loso`;
    validation/bands.py says what they are): one dict per ``[[band]]``; () where the file is absent."""
    raw = cache.read_bytes(ERROR_BANDS)
    if raw is None:
        return ()
    try:
        data = tomllib.loads(raw.decode())
    except tomllib.TOMLDecodeError as e:
        raise CatalogError(f"{ERROR_BANDS.name}: not valid TOML ({e})") from None
    out = []
    for i, b in enumerate(data.get("band", [])):
        for field, kind in BAND_FIELDS.items():
            if not isinstance(b.get(field), (int, float)) or isinstance(b.get(field), bool):
                raise CatalogError(f"{ERROR_BANDS.name}: field 'band.{i}.{field}': must be a number")
            b[field] = kind(b[field])
        out.append(b)
    return tuple(out)


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
    return hw, {ROOT / "systems" / f"{stem}.toml": s_raw, ROOT / "chips" / f"{chip_stem}.toml": c_raw}


def _chip_hardware(stem: str) -> tuple[Hardware, cache.Sources]:
    cf, raw = _file("chips", stem)
    chip = _chip(cf)
    topo = _topology(chip.name, chip, cf, 1, chip.scale_up.domain_size)
    hw = Hardware(chip.name, chip, 1, chip.scale_up.domain_size, chip.usd_per_hour, chip.preliminary, topo)
    return hw, {ROOT / "chips" / f"{stem}.toml": raw}


@lru_cache(maxsize=None)
def hardware(name: str) -> Hardware:
    """A chip name (one chip) or a system name (its chip count, scale-up domain and links); the name is resolved
    on every call, the Hardware comes from the cache while the files it was built from are unchanged."""
    if (key := resolve("systems", name)) is not None:
        return cache.cached(("hardware", "systems", key, str(ROOT)), lambda: _system_hardware(key))
    if (key := resolve("chips", name)) is not None:
        return cache.cached(("hardware", "chips", key, str(ROOT)), lambda: _chip_hardware(key))
    if str(name).endswith(".toml"):
        return what_if_hardware(Path(name))
    raise CatalogError(f"unknown hardware {name!r}; {did_you_mean(name, _index('chips') | _index('systems'))} "
                       f"allowed chips: {', '.join(chip_names())}; systems: {', '.join(system_names())}; or a what-if file "
                       "(a .toml naming a base and the fields it sets)")


def what_if_hardware(path: Path) -> Hardware:
    """A partial chip/system file (schema.WhatIfFile): its ``base`` catalog entry with the file's fields set
    (specs.Hardware.with_), each override carrying the file's ``source``; named by its ``name`` or its stem."""
    from tokenomy.catalog.schema import WhatIfFile

    if not path.is_file():
        raise CatalogError(f"no such file: {path}")
    f: WhatIfFile = _validate(path, WhatIfFile)
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

    path = ROOT / "power" / "facility.toml"
    raw = path.read_bytes()
    return _validate(path, FacilityFile, raw), raw


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
    return spec, {ROOT / "power" / f"{chip_stem}.toml": p_raw, ROOT / "chips" / f"{chip_stem}.toml": c_raw,
                  ROOT / "power" / "facility.toml": f_raw}


@lru_cache(maxsize=None)
def power(chip: str, facility_class: str | None = None) -> PowerSpec:
    """A chip's power and ownership spec (catalog/power/<chip>.toml with facility.toml) under a deployment class
    (None: the file's default); from the validated-value cache while the files are unchanged."""
    stem = _pick("chips", chip).stem
    if not (ROOT / "power" / f"{stem}.toml").exists():
        raise CatalogError(f"no power file for chip {stem!r} (catalog/power/); have: {', '.join(catalog_stems('power'))}")
    return cache.cached(("power", stem, str(facility_class), str(ROOT)), lambda: _power_spec(stem, facility_class))


# ---- models ---------------------------------------------------------------------------------------------


def _aliases(stem: str) -> set[str]:
    """'meta-llama--Llama-3.1-70B' -> {'meta-llama/llama-3.1-70b', 'llama-3.1-70b'}; '-instruct'/'-it' dropped too."""
    org, _, repo = stem.partition("--")
    repo = repo.lower()
    out = {f"{org.lower()}/{repo}", repo, stem.lower()}
    for suffix in ("-instruct", "-it", "-base", "-pt", "-v0.1"):
        if repo.endswith(suffix):
            out.add(repo[: -len(suffix)])
    return out


@lru_cache(maxsize=1)
def _model_index() -> dict[str, Path]:
    """Every name a model answers to: its repo name (with and without -instruct/-it/...), org/repo, and the
    ``aliases`` its entry in models/SOURCES.toml lists (names people type, e.g. llama-4-scout)."""
    index: dict[str, Path] = {}
    sources = model_sources()
    for p in sorted((ROOT / "models").glob("*.json")):
        for a in _aliases(p.stem) | {x.lower() for x in sources.get(p.stem, {}).get("aliases", [])}:
            index.setdefault(a, p)
    return index


@lru_cache(maxsize=1)
def model_sources() -> dict:
    """catalog/models/SOURCES.toml's entries by config stem: each vendored config's source, as_of and aliases."""
    return read_toml("models", "SOURCES").get("files", {})


def catalog_name(stem: str) -> str:
    """A vendored config's catalog name: the first alias its SOURCES.toml entry lists (the name people use, e.g.
    llama-4-scout for meta-llama--Llama-4-Scout-17B-16E-Instruct), else the repo part, lower-cased."""
    aliases = model_sources().get(stem, {}).get("aliases", [])
    return aliases[0].lower() if aliases else stem.partition("--")[2].lower()


def catalog_model(name: str) -> str | None:
    """The catalog name a typed model name means (any alias, any case), or None — never a path."""
    hit = _model_index().get(name.strip().lower())
    return None if hit is None else catalog_name(hit.stem)


def model_names() -> list[str]:
    """Catalog names (``catalog_name`` of every vendored config)."""
    return sorted({catalog_name(p.stem) for p in (ROOT / "models").glob("*.json")})


def _read_config(path: Path, label: str) -> ModelArch:
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise CatalogError(f"{label}: config.json larger than {MAX_CONFIG_BYTES} bytes")
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CatalogError(f"{label}: not valid JSON ({e})") from None
    try:
        return from_config(data, label)
    except ConfigError as e:
        raise CatalogError(f"{e} (file {path})") from None  # the field and the file it is in


def config_dict(name: str) -> dict:
    """A catalog model's config.json as published (any name ``model`` takes for it), for callers that derive a
    variant from it (PaLM with other heads, a shrunken config to run on a CPU)."""
    hit = _model_index().get(name.lower()) or _model_index().get(_key(name))
    if hit is None:
        raise CatalogError(f"unknown model {name!r}; allowed: {', '.join(model_names())}")
    return json.loads(hit.read_text())


def model_from_dict(data: object, label: str = "uploaded config.json") -> ModelArch:
    try:
        return from_config(data, label)
    except ConfigError as e:
        raise CatalogError(str(e)) from None


@lru_cache(maxsize=None)
def model(name: str) -> ModelArch:
    """A catalog name ('deepseek-v3', 'meta-llama/Llama-3.1-70B'), a config.json path, or a directory with one."""
    hit = _model_index().get(name.lower()) or _model_index().get(_key(name))
    if hit is not None:
        return _read_config(hit, catalog_name(hit.stem))
    path = Path(name)
    if path.is_dir():
        path = path / "config.json"
        if not path.is_file():
            raise CatalogError(f"model directory {name!r} holds no config.json")
    if path.is_file():
        return _read_config(path, path.parent.name if path.name == "config.json" else path.stem)
    if "/" in name or "\\" in name or name.lower().endswith(".json"):
        raise CatalogError(f"no such file: {name}")
    short = {a: p.stem.partition("--")[2].lower() for a, p in _model_index().items()}
    raise CatalogError(f"unknown model {name!r}; {did_you_mean(name, short)} allowed: a catalog name "
                       f"({', '.join(model_names())}), a path to a config.json, or a directory holding one")
