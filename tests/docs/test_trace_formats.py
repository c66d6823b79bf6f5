"""docs/serving.md documents the trace formats `serve --trace` reads; every example it shows is read by the reader
it names (the request CSV by serving.workload.read_trace, the session rows by serving.session_trace), and
`serve --help` points there instead of naming the request CSV alone."""

import re
from pathlib import Path

from cli_runner import CliRunner

from tokenomy.cli import commands  # noqa: F401
from tokenomy.cli.app import app
from tokenomy.serving.session_trace import read_session_trace
from tokenomy.serving.workload import read_trace

DOC = Path(__file__).resolve().parents[2] / "docs" / "serving.md"


def _section() -> str:
    text = DOC.read_text()
    start = text.index("## Trace formats")
    return text[start:text.index("\n## ", start + 1)]


def _blocks(lang: str) -> list[str]:
    return [re.sub(r"^ {3}", "", b, flags=re.M) for b in re.findall(rf"```{lang}\n(.*?)```", _section(), re.S)]


def test_every_documented_example_is_read(tmp_path):
    req, sessions = _blocks("text")
    (tmp_path / "r.csv").write_text(req)
    assert list(read_trace(tmp_path / "r.csv").isl) == [2048, 512]
    (tmp_path / "s.csv").write_text(sessions)
    plan = read_session_trace(tmp_path / "s.csv")
    assert len(plan) == 3 and plan.parent.tolist().count(-1) == 1  # sub1 forks from main
    (jsonl,) = _blocks("json")
    (tmp_path / "s.jsonl").write_text(jsonl)
    assert len(read_session_trace(tmp_path / "s.jsonl")) == 2


def test_the_section_names_the_three_session_formats():
    sec = _section()
    for words in ("session_id, parent_id, timestamp_s", "mooncake_trace", "hash_ids", "fork_tokens"):
        assert words in sec


def test_serve_help_describes_the_session_trace():
    out = " ".join(CliRunner().invoke(app, ["serve", "--help"]).output.split())
    assert "session_id" in out and "Mooncake" in out and "Trace formats" in out
