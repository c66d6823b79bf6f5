"""Serving's letters follow docs/notation.md (issue 27): C is the context and R the lecture's FLOP/byte ratio, so a
workload's clients are U, its open-loop rate λ and the scheduler's receive interval r_recv. Each pattern below is a
way the old letters were written in serving's formulas; none may come back into serving, the answers that build its
requests, or validation's predictions."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "tokenomy"
OLD = {
    "C for the clients": r"\bC (clients|users|sessions)\b|concurrency\W{1,3}C\b|\bC = (np\.\w+\()*.*\bconcurrency\b",
    "R for the rate": r"\bR requests/s|\brate R\b|\bR/dp\b|\bR < mu|min\(R, mu|\bR = (np\.\w+\()*.*\brate\b"
                      r"|\bR·(lifetime|L\b|L\(|a·|t\(|c\b|I\b)|N/R\b|\bcome at R\b|exp\(−R·",
    "R for the receive interval": r"\bR-th\b|\(R − 1\)/2|--scheduler-recv-interval R\b",
}


def serving_sources():
    return sorted([*(SRC / "serving").glob("*.py"), *(SRC / "answers").glob("*.py"), *(SRC / "validation").glob("*.py")])


def test_no_old_serving_letters():
    found = [f"{p.relative_to(SRC)}:{i}: {what}: {line.strip()[:90]}"
             for p in serving_sources() for i, line in enumerate(p.read_text().splitlines(), 1)
             for what, pattern in OLD.items() if re.search(pattern, line)]
    assert not found, "\n".join(found)


def test_the_patterns_catch_what_they_name():
    """Each pattern refuses the spelling it was written against (a pattern that matches nothing checks nothing)."""
    samples = {"C for the clients": "closed loop of C clients", "R for the rate": "Poisson arrivals at R requests/s",
               "R for the receive interval": "receives every R-th decode step"}
    for what, text in samples.items():
        assert re.search(OLD[what], text), what
    for text in ("open loop: B = R·lifetime", "a = min(N/R, lifetime)",  # the finite run's formula, as once written
                 "busy with chance 1 − exp(−R·L)", "a = R·c", "arrivals come at R whether"):  # the idle engine's, as once
        assert re.search(OLD["R for the rate"], text), text
    assert not any(re.search(p, "U clients at λ requests/s, every r_recv-th step") for p in OLD.values())


def test_notation_names_the_serving_letters():
    notation = (SRC.parents[1] / "docs" / "notation.md").read_text()
    for row in ("| `concurrency` | U |", "| `rate` | λ |", "| `recv_interval` | r_recv |", "| `think_s` | θ |"):
        assert row in notation, row
