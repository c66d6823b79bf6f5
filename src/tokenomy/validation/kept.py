"""The whole validation catalog, prepared, kept between processes (catalog/cache.py's store): lowering every case
(prepare.py, train_predict.py) costs ~8 CPU-seconds, which `tokenomy validate`, the docs' figures and each worker of
the test suite paid again for the same bytes.

An entry is recorded with the bytes of every file of the package, its code and its catalog alike, and served only
while each is unchanged: a key broader than what the lowering reads, on purpose, so that no list of what it depends
on has to be kept true. Reading the ~3 MB back costs ~50 ms; unpickling the prepared arrays (~16 MB) ~50 ms."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, TypeVar

from tokenomy.catalog import cache

T = TypeVar("T")


def package_files() -> tuple[Path, ...]:
    """Every file of the package (code, catalog, templates); compiled files left out."""
    return tuple(p for p in sorted(cache.PACKAGE.rglob("*"))
                 if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")


def package_bytes(paths: tuple[Path, ...] | None = None) -> dict[Path, bytes]:
    """The bytes of ``paths`` (default: package_files()) as they are now."""
    return {p: p.read_bytes() for p in (package_files() if paths is None else paths)}


def kept(name: str, build: Callable[[], T]) -> T:
    """``build()``, or its value from a process that built it on the same package: the same files (an added one is
    a miss too: the list is stored beside the value) with the same bytes, read before building, so that a file
    changed meanwhile makes the entry stale, never wrong."""
    key, files = (name, str(cache.PACKAGE)), package_files()
    hit = cache.load(key)
    if isinstance(hit, tuple) and hit[0] == files:
        return hit[1]
    now = package_bytes(files)
    value = build()
    cache.store(key, (files, value), now)
    return value
