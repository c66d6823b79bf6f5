"""Engine versions in order: the one reading of '0.5.12' as (0, 5, 12).

Its own module (no pydantic): the serving engine orders versions on every answer ([host] overlap_since,
[prefill_launch] since), and a cached answer's start must not import the catalog's schemas
(tests/catalog/test_cache.py)."""

from __future__ import annotations

import re

PARTS = 3  # major, minor, patch: what orders a release ('1.1.0rc2.post2' reads as 1.1.0)


def release(version: str, field: str = "version") -> tuple[int, ...]:
    """'0.5.12' -> (0, 5, 12): a version's numeric release parts, the first three padded with zeros ('1' ==
    '1.0' == '1.0.0'), for ordering. A string with no digits ('not stated', '') is a ValueError naming ``field``."""
    parts = [int(x) for x in re.findall(r"\d+", version)[:PARTS]]
    if not parts:
        raise ValueError(f"{field}: {version!r} is not a version; allowed: numbers separated by dots (0.5.12, 1.0)")
    return tuple(parts + [0] * (PARTS - len(parts)))
