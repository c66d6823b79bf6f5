"""The benchmark scripts keep running as the API under them changes (benchmarks/search.py crashed on a changed
helper signature and no test saw it). Each runs in --smoke mode as a process: the test checks that it finishes and
prints its figures, never what they are (speed is the benchmarks' business, not a test's)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.parametrize("script, expect", [("search.py", ("vectorised search:", "one at a time:", "ratio:"))])
def test_benchmark_runs_in_smoke_mode(script, expect):
    r = subprocess.run([sys.executable, str(BENCH / script), "--smoke"], capture_output=True, text=True, timeout=600,
                       cwd=BENCH)
    assert r.returncode == 0, r.stderr[-2000:]
    for line in expect:
        assert line in r.stdout, r.stdout
