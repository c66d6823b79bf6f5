"""Catalog access, the one door the library reads the catalog through: a name, a path to a config.json, or a
directory holding one -> a validated spec.

Errors are ``CatalogError`` with one line naming the file and the field (or the allowed names). This module holds
each kind's named file and its list of names, the validation and error-band tables, and the facts taken from the
cache; the pieces live beside it by meaning and are re-exported here, so callers write ``loader.<name>`` alone:
files.py (where files live, name resolution, parsing and validation), hardware_specs.py (Hardware, PowerSpec),
model_configs.py (ModelArch from config.json files).

pydantic (catalog/schema/) is imported only where a file is validated: ``hardware()`` answers from the
validated-value cache (catalog/cache.py) when its files are unchanged, so a simple answer's start-up skips it.
"""

from __future__ import annotations

import tomllib
from functools import lru_cache
from typing import TYPE_CHECKING

from tokenomy.catalog import cache, files
from tokenomy.catalog.files import (  # noqa: F401  (re-exported: callers write loader.<name>)
    ROOT, SCHEMAS, CatalogError, _file, _index, _key, _load, _pick, _stems, _validate, catalog_path, catalog_stems,
    did_you_mean, inside_catalog, nearest, read_toml, read_user_toml, resolve)
from tokenomy.catalog.hardware_specs import (  # noqa: F401
    _chip_hardware, facility, facility_classes, hardware, power, what_if_hardware)
from tokenomy.catalog.model_configs import (  # noqa: F401
    MAX_CONFIG_BYTES, _model_index, catalog_model, catalog_name, config_dict, model, model_from_dict, model_names,
    model_sources)

if TYPE_CHECKING:
    from tokenomy.core.engine_terms import EngineTerms
    from tokenomy.catalog.schema import ApiPriceFile, ChipFile, EngineFile, EngineFlagsFile, KvTieringFile, ProtocolFile, StorageFile, SystemFile


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
            for field, policy in (("policy", c.policy), ("baseline_policy", c.baseline_policy or c.policy)):
                if policy not in allowed:
                    raise CatalogError(f"validation/kv_tiering/{f.source.id}: case {c.id}: {field} {policy!r}; "
                                       f"allowed: {', '.join(sorted(allowed))}")
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

@lru_cache(maxsize=None)
def engine_terms(name: str) -> "EngineTerms":
    """What a serving engine at its file's version sets on an efficiency set (EngineFile.terms_at: host and EP
    overlap, its kernels' SM shares, its runtime's o_seq, eager prompt launches, mixed prefill, its default MoE
    kernel's tile): what its calibrated efficiency set takes from it (answers/resolve.py), from the cache while the
    file is unchanged (no pydantic; another version: serving.engine_profile.profile_of)."""
    stem = _pick("engines", name).stem

    def build():
        f, raw = _file("engines", stem)
        return f.terms_at(), {ROOT / "engines" / f"{stem}.toml": raw}
    return cache.cached(("engine-terms", stem, str(ROOT)), build)


@lru_cache(maxsize=None)
def chip_family(name: str) -> str:
    """A chip's architecture family (chips/<name>.toml ``family``: hopper, blackwell, cdna3, ...; the chip's own
    name where the file gives none), from the cache while the file is unchanged."""
    stem = _pick("chips", name).stem

    def build():
        f, raw = _file("chips", stem)
        return (f.family or f.name), {files.ROOT / "chips" / f"{stem}.toml": raw}
    return cache.cached(("chip-family", stem, str(files.ROOT)), build)


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

