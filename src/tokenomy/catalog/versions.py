"""Engine versions in order: the one reading of '0.5.12' as (0, 5, 12).

Its own module (no pydantic): the serving engine orders versions on every answer ([host] overlap_since,
[prefill_launch] since), and a cached answer's start must not import the catalog's schemas
(tests/catalog/test_cache.py)."""

from __future__ import annotations

import re


def release(version: str) -> tuple[int, ...]:
    """'0.5.12' -> (0, 5, 12): a version's numeric release parts (the first three), for ordering."""
    return tuple(int(x) for x in re.findall(r"\d+", version)[:3])
