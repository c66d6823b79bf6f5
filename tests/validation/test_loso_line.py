"""The report writes the leave-one-source-out line that the README quotes (docs/numbers.py copies it from
docs/validation.md; tests/docs/test_numbers.py checks the README holds it)."""


def test_the_report_writes_the_line_the_readme_quotes():
    from tokenomy.validation import report

    rows = [{"metric": "tpot_s", "calibrated_error": e, "source": s} for e, s in ((0.1, "a"), (-0.3, "b"))]
    line = report.loso_line(rows)
    assert line.startswith("Leave-one-source-out over 2 sources") and "20.0% (2 cases)" in line


def test_the_load_bands_split_at_8_32_and_128_users_and_print_in_load_order():
    from tokenomy.validation import report

    assert [report.load_band(u) for u in (1, 8, 9, 32, 33, 128, 129)] == ["<= 8", "<= 8", "9-32", "9-32", "33-128",
                                                                         "33-128", "> 128"]
    rows = [{"metric": "ttft_s", "calibrated_error": e, "roofline_error": -0.5, "source": "a", "users": u}
            for e, u in ((0.5, 256), (0.1, 2), (-0.2, 16), (0.3, 64), (float("nan"), 4))]
    lines = report.load_band_lines(rows + [{"metric": "train_step_s", "calibrated_error": 0.1, "roofline_error": 0.0,
                                            "source": "t"}])
    body = [ln for ln in lines if ln.startswith("| ttft_s")]
    assert [ln.split(" | ")[1] for ln in body] == ["<= 8", "9-32", "33-128", "> 128"]
    assert "| 50% |" in body[-1] and not any("train_step_s" in ln for ln in lines)
