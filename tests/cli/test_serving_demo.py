"""tokenomy demo: the lecture table and the HTML report."""

from cli_runner import CliRunner

import tokenomy.cli.commands  # noqa: F401
from tokenomy.cli import app


def test_demo_prints_the_table_and_writes_the_report(tmp_path):
    out = tmp_path / "report.html"
    r = CliRunner().invoke(app, ["demo", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "28/28 within the lecture's tolerance" in r.stdout and "report written to" in r.stdout
    assert out.stat().st_size > 100_000  # plotly.js is inlined
