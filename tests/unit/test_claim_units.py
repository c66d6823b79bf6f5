"""Every lecture claim and every real-hardware row states its unit (issue 30: the Lecture page showed bare
values), and fmt_unit writes them as people do."""

import pytest

from tokenomy.formatting import fmt_unit
from tokenomy.lecture_claims.claim_units import CLAIM_UNITS
from tokenomy.lecture_claims.claims import CLAIMS


def test_every_claim_has_a_unit_and_lists_have_one_per_item():
    assert {c.id for c in CLAIMS} == set(CLAIM_UNITS)
    for c in CLAIMS:
        u = CLAIM_UNITS[c.id]
        if isinstance(u, tuple):
            assert isinstance(c.lecture_value, list) and len(u) == len(c.lecture_value), c.id


def test_every_real_row_has_a_unit():
    from tokenomy.answers import lecture

    rows = lecture(real=True).payload()
    assert rows and all(r["unit"] for r in rows), [r["quantity"] for r in rows if not r["unit"]]


@pytest.mark.parametrize("value, unit, text", [
    (0.0144, "s", "14.4 ms"), (2400, "sequences", "2,400 sequences"), (2.592e15, "tokens", "2.59×10^15 tokens"),
    (1666.67, "B/token", "1,667 B/token"), (0.4, "$/Mtok", "$0.4 per M tokens"), (11070.3, "x", "11,070×"),
    (3.51, "x", "3.51×"), ([5.0, 1.25, 0.1], ("$/Mtok", "x", "x"), "$5.00 per M tokens, 1.25×, 0.1×"),
    (640e9, "B", "640 GB"), ("flash, disk", "text", "flash, disk"), (None, "s", "-"), (0.5, "share", "50.0%"),
])
def test_values_read_with_their_units(value, unit, text):
    assert fmt_unit(value, unit) == text
