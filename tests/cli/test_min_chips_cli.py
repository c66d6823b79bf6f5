"""tokenomy min-chips (issue 30): the CLI door of answers.sizing.min_chips — the same rows as the answer, people's
headers in the table, bad input one line naming the flag with exit 2."""

import json

from cli_runner import CliRunner

import tokenomy.cli.commands  # noqa: F401  (registers the commands)
from tokenomy.answers.sizing import min_chips
from tokenomy.cli.app import app

ARGS = ["min-chips", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--use-case", "chat,rag", "--max-chips", "8"]


def test_json_is_the_answer_and_the_table_reads_as_people_write():
    r = CliRunner().invoke(app, ARGS + ["--json"])
    assert r.exit_code == 0, r.output
    want = min_chips("llama-3.1-8b", "h100-sxm", use_case="chat,rag", max_chips=8).payload()
    assert json.loads(r.stdout)["rows"] == json.loads(json.dumps(want["rows"]))
    t = CliRunner().invoke(app, ["--wide"] + ARGS)
    assert t.exit_code == 0 and "SLO" in t.stdout and "TPOT" in t.stdout  # headers fold at their spaces
    assert "min_chips" not in t.stdout and "tpot_slo_s" not in t.stdout


def test_bad_use_case_is_one_line_exit_2():
    r = CliRunner().invoke(app, ["min-chips", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--use-case", "x"])
    err = r.stderr.strip().splitlines()
    assert r.exit_code == 2 and len(err) == 1 and err[0].startswith("error: --use-case: x; allowed: chat"), r.stderr
