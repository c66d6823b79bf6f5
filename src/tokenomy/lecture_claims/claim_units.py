"""The unit of each lecture claim's value (lecture.md §4.1), so a page or a table can say "2,400 sequences",
"14.4 ms" or "$0.40 per M tokens" rather than a bare number. A claim whose value is a list has one unit per item
where they differ (L23: a price and two ratios). Units are formatting.fmt_unit's: s, B, B/token, tok/s, tokens,
sequences, experts/GPU, FLOP/B, $/Mtok, share (a fraction shown as a percentage), x (a ratio), text."""

from __future__ import annotations

CLAIM_UNITS: dict[str, str | tuple[str, ...]] = {
    "L1": "sequences", "L2": "sequences", "L3": "sequences", "L4": "tok/s", "L5": "share", "L6": "s", "L7": "s",
    "L8": "B/token", "L9": "B/token", "L10": "share", "L11": "tokens", "L12": "tokens", "L13": "tokens",
    "L14": "x", "L15": "x", "L16": "x", "L17": "x", "L18": "experts/GPU", "L19": "B", "L20": "s", "L21": "x",
    "L22": "x", "L23": ("$/Mtok", "x", "x"), "L24": "text", "L25": "x", "L26": "s", "L27": "$/Mtok", "L28": "x",
}


def unit_of_claim(claim_id: str) -> str | tuple[str, ...]:
    """The unit of a claim's value; KeyError for a claim without one (a test holds every claim to having one)."""
    return CLAIM_UNITS[claim_id]
