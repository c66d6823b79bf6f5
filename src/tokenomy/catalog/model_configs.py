"""Model architectures from the catalog's vendored config.json files (catalog/models/, their names and sources in
models/SOURCES.toml), from a user's config.json path or directory, or from an uploaded config's data."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from tokenomy.arch.hf import ConfigError, from_config
from tokenomy.arch.model import ModelArch
from tokenomy.arch.routing import ExpertBalance
from tokenomy.catalog import files
from tokenomy.catalog.files import CatalogError, _key, did_you_mean, read_toml

MAX_CONFIG_BYTES = 1_000_000  # real config.json files are a few kB


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
    for p in sorted((files.ROOT / "models").glob("*.json")):
        for a in _aliases(p.stem) | {x.lower() for x in sources.get(p.stem, {}).get("aliases", [])}:
            index.setdefault(a, p)
    return index


@lru_cache(maxsize=1)
def model_sources() -> dict:
    """catalog/models/SOURCES.toml's entries by config stem: each vendored config's source, as_of and aliases."""
    return read_toml("models", "SOURCES").get("files", {})


def expert_balance(stem: str) -> ExpertBalance | None:
    """The measured routing balance of the vendored config ``stem`` (catalog/models/routing.toml), or None."""
    entry = _routing().get(stem)
    if entry is None:
        return None
    try:
        return ExpertBalance(*(tuple((float(e), float(b)) for e, b in entry[k]) for k in ("eplb", "default")),
                             source=str(entry["source"]))
    except (KeyError, TypeError, ValueError) as e:
        raise CatalogError(f"routing.toml: files.{stem}: fields 'eplb', 'default' ([ep, balance] pairs) and "
                           f"'source' required ({e})") from None


@lru_cache(maxsize=1)
def _routing() -> dict:
    return read_toml("models", "routing").get("files", {})


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
    return sorted({catalog_name(p.stem) for p in (files.ROOT / "models").glob("*.json")})


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
        m = _read_config(hit, catalog_name(hit.stem))
        balance = expert_balance(hit.stem)
        return m if balance is None else replace(m, expert_balance=balance)
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