"""Terms the fit does not move: each chip's measured HBM streaming share, from a cited microbenchmark.

A decode step streams its weights at what a STREAM-like copy reaches on the chip (η_hbm = measured / datasheet
bytes/s, catalog/efficiency/streaming.toml, each entry with its source). Fitting η_hbm instead lets it stand in
for the per-layer kernel floor and the KV gathers (a fit gave 0.68 on H200 and 0.40 on B200 against ~0.9
measured), which fits one set of cases and misses the next. A chip without a measurement takes the mean share of
the chips that have one (stated as derived in its efficiency file's note).
"""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path

STREAMING = Path(__file__).resolve().parents[1] / "catalog" / "efficiency" / "streaming.toml"
ANCHORED_FIELDS = ("hbm_fraction",)


@lru_cache(maxsize=1)
def streaming_fractions() -> dict[str, float]:
    """chip -> measured streaming bandwidth / datasheet bandwidth, for the chips with a cited measurement."""
    data = tomllib.loads(STREAMING.read_text())
    out = {chip: float(entry["measured_bytes_per_s"]) / float(entry["datasheet_bytes_per_s"])
           for chip, entry in data.items()}
    bad = [c for c, f in out.items() if not 0.0 < f < 1.0]
    if bad:  # a share of 1 or more is a typo, and the fit's logit of it would be infinite
        raise ValueError(f"{STREAMING.name}: {', '.join(bad)}: measured_bytes_per_s must be below datasheet_bytes_per_s")
    return out


def pooled_fraction() -> float:
    """The mean measured share over the chips that have one: the anchor of a chip without a measurement."""
    f = streaming_fractions()
    return sum(f.values()) / len(f)


def anchored(chip: str) -> dict[str, float]:
    """The anchored terms of ``chip`` ("pooled" for the prior every chip's fit starts from)."""
    return {"hbm_fraction": streaming_fractions().get(chip, pooled_fraction())}


def provenance(chip: str) -> str:
    """One line for the efficiency file: where the anchored η_hbm came from."""
    f = streaming_fractions()
    if chip in f:
        return f"hbm_fraction {f[chip]:.3f} anchored: measured streaming bandwidth (catalog/efficiency/streaming.toml)"
    return (f"hbm_fraction {pooled_fraction():.3f} anchored: derived, the mean measured streaming share of "
            f"{', '.join(sorted(f))} (no measurement of {chip} in catalog/efficiency/streaming.toml)")
