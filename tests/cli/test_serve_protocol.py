"""tokenomy serve --protocol: a benchmark's run reproduced; a bad name is one line naming --protocol, exit 2."""

import json

from cli_runner import CliRunner

from tokenomy.cli import commands  # noqa: F401
from tokenomy.cli.app import app

R = CliRunner()
BASE = ["serve", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--tp", "1", "--engine", "trtllm", "--isl",
        "1024", "--osl", "128", "--concurrency", "8"]


def test_protocol_run_reports_the_tools_figures():
    steady = json.loads(R.invoke(app, BASE + ["--json"]).output)[0]
    r = R.invoke(app, BASE + ["--protocol", "trtllm-bench", "--requests", "80", "--json"])
    assert r.exit_code == 0, r.output
    row, = json.loads(r.output)
    assert row["protocol"] == "trtllm-bench" and row["sim_requests"] == 80
    assert row["ttft_s"] > 3 * steady["ttft_s"]  # the waves come back together: 8 prompts in one step


def test_bad_protocol_is_one_line_exit_2():
    r = R.invoke(app, BASE + ["--protocol", "locust"])
    assert r.exit_code == 2, r.output
    out = r.output.strip()
    assert len(out.splitlines()) == 1 and "--protocol" in out and "inferencex" in out and "steady" in out
