"""The report writes the leave-one-source-out line that the README quotes (docs/numbers.py copies it from
docs/validation.md; tests/docs/test_numbers.py checks the README holds it)."""


def test_the_report_writes_the_line_the_readme_quotes():
    from tokenomy.validation import report

    rows = [{"metric": "tpot_s", "calibrated_error": e, "source": s} for e, s in ((0.1, "a"), (-0.3, "b"))]
    line = report.loso_line(rows)
    assert line.startswith("Leave-one-source-out over 2 sources") and "20.0% (2 cases)" in line
