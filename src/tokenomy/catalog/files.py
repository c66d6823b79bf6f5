"""The catalog's files: where they live, how a typed name finds one, and how a file is parsed and validated.

Every read of catalog/ goes through here (loader.py, hardware_specs.py and model_configs.py build on it). Errors are
``CatalogError`` with one line naming the file and the field (or the allowed names). pydantic (catalog/schema/) is
imported only where a file is validated.
"""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from pydantic import BaseModel

ROOT = Path(__file__).parent
M = TypeVar("M", bound="BaseModel")
# catalog kind -> its class in catalog/schema/ (imported on first validation)
SCHEMAS = {"chips": "ChipFile", "systems": "SystemFile", "storage": "StorageFile", "prices": "ApiPriceFile",
           "engines": "EngineFile", "power": "PowerFile",
           "engines/flags": "EngineFlagsFile", "protocols": "ProtocolFile", "kv_tiering": "KvTieringFile",
           "validation/kv_tiering": "KvTierValidationFile", "validation/energy": "EnergyCaseFile",
           "validation/energy_claims": "EnergyClaimFile"}


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
        what = kind.rsplit("/", 1)[-1]  # chips -> chip, kv_tiering and storage as they are
        raise CatalogError(f"unknown {what[:-1] if what.endswith('s') else what} {name!r}; "
                           f"{did_you_mean(name, _index(kind))} "
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
