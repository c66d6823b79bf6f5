"""Bad input that used to get through (issue 30, CLI and Python API): each is now one line naming the field, exit 2.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest
from cli_runner import CliRunner

from tokenomy.answers import inputs
from tokenomy.cli import app, commands  # noqa: F401

R = CliRunner()
SERVE = ["serve", "--model", "llama-3.1-8b", "--hardware", "h100-sxm"]
DECODE = ["decode", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--batch", "1"]


def refused(args, *words):
    r = R.invoke(app, args)
    out = r.output.strip()
    assert r.exit_code == 2 and len(out.splitlines()) == 1, (args, r.exit_code, out)
    assert all(w in out for w in words), (args, out)
    return out


def test_a_thousands_separator_is_not_two_contexts():
    refused(DECODE + ["--context", "8,192"], "--context", "did you mean 8192?")
    r = R.invoke(app, DECODE + ["--context", "8, 192", "--json"])  # the list, written as one
    assert r.exit_code == 0 and [x["context"] for x in json.loads(r.output)] == [8, 192]


def test_a_load_beside_a_trace_is_refused(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens\n0.0,100,10\n0.5,120,12\n1.0,90,8\n")
    refused(SERVE + ["--trace", str(trace), "--rate", "4"], "--rate", "not with trace")
    refused(SERVE + ["--trace", str(trace), "--concurrency", "4"], "--concurrency", "not with trace")
    assert R.invoke(app, SERVE + ["--trace", str(trace), "--json"]).exit_code == 0


def test_negative_seed_and_hop_latency_name_their_field():
    refused(SERVE + ["--concurrency", "4", "--method", "simulate", "--seed", "-1"], "--seed", "[0, 4,294,967,295]")
    refused(DECODE + ["--hop-latency", "-1"], "--hop-latency", "[0, 10]")


def test_requests_beyond_the_table_and_beyond_the_machine(monkeypatch):
    refused(SERVE + ["--concurrency", "4", "--method", "simulate", "--requests", "1e9"], "--requests",
            "[1, 100,000,000]")
    monkeypatch.setattr(inputs, "available_memory_bytes", lambda: 2.0**30)  # a machine with 1 GiB free
    refused(SERVE + ["--concurrency", "4", "--method", "simulate", "--requests", "4M"], "--requests",
            "need about 2.0 GiB", "at most 2,097,152")


def test_decode_and_serve_share_the_context_window_rule():
    refused(DECODE + ["--context", "200k"], "--context", "max_position_embeddings", "131,072")
    refused(["serve", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--concurrency", "1", "--isl", "128k",
             "--osl", "8k"], "--isl", "max_position_embeddings", "131,072")
    assert R.invoke(app, DECODE + ["--context", "128k", "--json"]).exit_code == 0  # the window itself is inside


def test_numbers_take_the_grammar_everywhere():
    r = R.invoke(app, SERVE + ["--concurrency", "1..4", "--isl", "4k", "--osl", "1k", "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    assert [x["concurrency"] for x in rows] == [1, 2, 4]


def test_web_refuses_a_port_in_use_before_its_banner():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        code = "from tokenomy.cli import main; main()"
        r = subprocess.run([sys.executable, "-c", code, "web", "--port", str(port), "--workers", "1"],
                           capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout, r.stderr)
    assert r.stderr.strip().splitlines() == [f"error: --port: cannot listen on 127.0.0.1:{port} (Address already in use)"]
