"""The README's accuracy headline is the generated report's (docs/validation.md), copied by a script, not typed."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_quotes_the_generated_leave_one_source_out_line():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "readme_accuracy.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_report_writes_the_line_the_script_copies():
    from tokenomy.validation import report

    rows = [{"metric": "tpot_s", "calibrated_error": e, "source": s} for e, s in ((0.1, "a"), (-0.3, "b"))]
    line = report.loso_line(rows)
    assert line.startswith("Leave-one-source-out over 2 sources") and "20.0% (2 cases)" in line
