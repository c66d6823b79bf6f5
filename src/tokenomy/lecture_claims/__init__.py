"""The lecture regenerated claim by claim (reference/lecture.md §4.1), then re-asked on today's hardware.

    from tokenomy.lecture_claims import evaluate, real_hardware
    rows = [r.as_dict() for r in evaluate()]
"""

from __future__ import annotations

from dataclasses import dataclass

from tokenomy.lecture_claims.claims import CLAIMS, Claim


@dataclass(frozen=True)
class ClaimResult:
    id: str
    claim: str
    section: str
    lecture_value: object
    lecture_text: str
    computed_value: object
    tolerance: str
    ok: bool
    inputs: dict
    formula: str
    note: str
    seed: str

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def evaluate_claim(c: Claim) -> ClaimResult:
    """Compute one claim; a failure to compute (e.g. a missing catalog file) is reported, not raised."""
    try:
        value = c.compute(c.inputs)
        ok = c.tolerance.ok(value, c.lecture_value)
        note = c.note(c.inputs) if c.note else ""
    except (ValueError, KeyError, TypeError) as e:
        value, ok, note = None, False, f"could not compute: {e}"
    return ClaimResult(c.id, c.claim, c.section, c.lecture_value, c.lecture_text, value, c.tolerance.text(), ok,
                       c.inputs, c.formula, note, c.seed)


def evaluate(ids=None) -> list[ClaimResult]:
    """All claims L1-L28 (or those in ``ids``), in order."""
    want = None if ids is None else {i.upper() for i in ids}
    return [evaluate_claim(c) for c in CLAIMS if want is None or c.id in want]


def seed_corrections() -> list[dict]:
    """Where the seed summaries misstate the lecture (lecture.md §2.16), by claim."""
    return [{"id": c.id, "correction": c.seed} for c in CLAIMS if c.seed]


def real_hardware(serve):
    """The key claims re-evaluated on catalog hardware and models (see lecture/real.py for ``serve``)."""
    from tokenomy.lecture_claims.real import real_rows

    return real_rows(serve)


__all__ = ["CLAIMS", "Claim", "ClaimResult", "evaluate", "evaluate_claim", "real_hardware", "seed_corrections"]
