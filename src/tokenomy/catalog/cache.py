"""A cache of values built from validated catalog files, kept between processes (issue 14: CLI start-up).

Validating a catalog file goes through pydantic (catalog/schema/, validation/schema.py), whose import and model
building cost a simple answer ~70 ms of its ~230 ms start. The first process to build a value (a ``Hardware``, a
calibrated ``Efficiency``) validates as before and pickles the plain result, with the exact bytes of every file it
was built from, under ``$XDG_CACHE_HOME/tokenomy`` (else ``~/.cache/tokenomy``); a later process reads those files
again and uses the pickle only when every one is byte-for-byte unchanged. So:

- editing, adding or removing a catalog file is seen on the next call: a file recorded absent must still be absent;
- the code that builds the values (``CODE``, and pydantic's version file) is recorded the same way, so a changed
  loader or dataclass, or another pydantic, is never served an object pickled by the old one;
- pydantic stays the one validator: nothing is cached that it did not accept, and a bad file raises its
  ``CatalogError`` on every call (errors are never cached);
- a cache dir that cannot be read or written (or a corrupt entry) costs only the validation, silently.

Comparing bytes instead of hashes keeps hashlib out of the path and leaves no collision to reason about; the
files are a few kB each.
"""

from __future__ import annotations

import os
import pickle
import sys
import zlib
from pathlib import Path
from typing import Callable, Mapping, TypeVar

T = TypeVar("T")
PACKAGE = Path(__file__).resolve().parents[1]  # src/tokenomy
# the code whose output is pickled: the builders (loaders and schemas) and the classes pickled (specs, Efficiency)
CODE = tuple(PACKAGE / p for p in ("catalog/cache.py", "catalog/loader.py", "catalog/files.py",
                                   "catalog/hardware_specs.py", "catalog/model_configs.py", "specs.py",
                                   "overrides.py", "validation/load.py", "validation/schema.py",
                                   "validation/terms_schema.py",
                                   "core/efficiency.py", "core/engine_terms.py")) + tuple(
    sorted((PACKAGE / "catalog/schema").glob("*.py")))  # the catalog's schemas, one module per kind of file
FORMAT = 1  # bump when an entry's layout changes

Sources = Mapping[Path, "bytes | None"]  # file -> the bytes a value was built from (None: the file was absent)


def cache_dir() -> Path | None:
    """$XDG_CACHE_HOME/tokenomy, else ~/.cache/tokenomy; None where neither can be named (no home)."""
    base = os.environ.get("XDG_CACHE_HOME")
    try:
        root = Path(base) if base else Path.home() / ".cache"
    except (RuntimeError, KeyError):
        return None
    return root / "tokenomy"


def read_bytes(path: Path) -> bytes | None:
    """A file's bytes, or None where it does not exist (or cannot be read: then it cannot match a record)."""
    try:
        return path.read_bytes()
    except OSError:
        return None


def _entry_path(key: tuple[str, ...]) -> Path | None:
    d = cache_dir()
    if d is None:
        return None
    label = "-".join(k for k in key if "/" not in k and os.sep not in k)[:80]
    return d / f"{label}-{zlib.crc32(repr(key).encode()):08x}.pickle"  # the full key is stored and compared


def _fresh(entry: object, key: tuple[str, ...]) -> bool:
    if not (isinstance(entry, dict) and entry.get("format") == FORMAT and entry.get("key") == key
            and entry.get("python") == sys.version):
        return False
    return all(read_bytes(Path(p)) == b for p, b in entry["sources"].items())


def load(key: tuple[str, ...]) -> object | None:
    """The value stored under ``key`` if every file it was built from (and CODE) is unchanged, else None."""
    path = _entry_path(key)
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            entry = pickle.load(f)
    except Exception:  # missing, unreadable, truncated or from another layout: a miss
        return None
    return entry["value"] if _fresh(entry, key) else None


def store(key: tuple[str, ...], value: object, sources: Sources) -> None:
    """Write an entry atomically (a temporary file, then rename), so a concurrent reader sees the old entry or the
    new one, never half of one; any OSError (read-only or full disk, no home) is ignored."""
    path = _entry_path(key)
    if path is None:
        return
    code = {p: read_bytes(p) for p in (*CODE, *_validator_version())}
    entry = {"format": FORMAT, "key": key, "python": sys.version, "value": value,
             "sources": {str(p): b for p, b in {**code, **sources}.items()}}
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as f:
            pickle.dump(entry, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except (OSError, pickle.PicklingError):
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass


def _validator_version() -> list[Path]:
    """pydantic's version file, where this process imported pydantic (every build validates, so it has): another
    pydantic may accept or convert differently. Its path is taken from the module, so reading it back costs a
    later start no import."""
    mod = sys.modules.get("pydantic")
    path = getattr(mod, "__file__", None)
    return [Path(path).with_name("version.py")] if path else []


def cached(key: tuple[str, ...], build: Callable[[], tuple[T, Sources | None]]) -> T:
    """``build()``'s value, from the cache when fresh. ``build`` returns (value, the bytes of every file it read,
    as they were when it read them: the loaders hand back the bytes they validated), or (value, None) for a value
    that must not be cached."""
    hit = load(key)
    if hit is not None:
        return hit  # type: ignore[return-value]
    value, sources = build()
    if sources is not None:
        store(key, value, sources)
    return value
