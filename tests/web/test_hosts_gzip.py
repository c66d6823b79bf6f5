"""Serving: gzip for clients that accept it, Host names checked, `tokenomy web`'s warning, hosts and workers."""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import httpx
import pytest
from cli_runner import CliRunner
from web_process import start_web, stop

from tokenomy.cli import commands  # noqa: F401  (registers the commands)
from tokenomy.cli import web as cli_web
from tokenomy.cli.app import app as cli_app

TOKENOMY = Path(sys.executable).with_name("tokenomy")


@pytest.mark.parametrize("path", ["/static/plotly.min.js", "/api/models", "/catalog",
                                  "/api/decode?model=llama-3.1-8b&hardware=h100-sxm&batch=1..1024"])
def test_gzip_when_accepted_and_the_bytes_are_the_same(client, path):
    plain = client.get(path, headers={"Accept-Encoding": "identity"})
    assert plain.status_code == 200 and "content-encoding" not in plain.headers
    with client.stream("GET", path, headers={"Accept-Encoding": "gzip, deflate"}) as packed:
        wire = b"".join(packed.iter_raw())  # the bytes as sent, before httpx would decode them
    assert packed.headers["content-encoding"] == "gzip" and "Accept-Encoding" in packed.headers["vary"]
    assert gzip.decompress(wire) == plain.content
    assert len(wire) < len(plain.content) / 2


def test_plotly_is_big_enough_to_matter(client):
    assert len(client.get("/static/plotly.min.js", headers={"Accept-Encoding": "identity"}).content) > 3_000_000


def test_foreign_host_names_are_refused(app):
    from fastapi.testclient import TestClient

    from tokenomy.web.app import create_app

    strict = create_app(allowed_hosts=("tokenomy.example.org",))
    for base, code in (("http://localhost:8000", 200), ("http://127.0.0.1", 200), ("http://[::1]:8000", 200),
                       ("http://tokenomy.example.org", 200), ("http://evil.example", 400), ("http://[::2]", 400),
                       ("http://localhost.evil.example", 400), ("http://testserver", 400)):
        r = TestClient(strict, base_url=base).get("/api/models")
        assert r.status_code == code, (base, r.status_code)
    assert TestClient(create_app(), base_url="http://0.0.0.0").get("/api/models").status_code == 400


def run_web(monkeypatch, *args):
    calls = []
    monkeypatch.setattr(cli_web, "serve", lambda *a: calls.append(a))
    result = CliRunner().invoke(cli_app, ["web", *args])
    return result, calls


def test_web_binds_every_interface_only_with_a_warning(monkeypatch):
    result, calls = run_web(monkeypatch, "--host", "0.0.0.0", "--allow-host", "box.lan", "--allow-host", "10.0.0.5")
    assert result.exit_code == 0, result.output
    assert "warning" in result.output and "every network interface" in result.output
    host, port, workers, hosts = calls[0]
    assert (host, port, hosts) == ("0.0.0.0", 8000, ("box.lan", "10.0.0.5"))
    assert workers == cli_web.default_workers() >= 1
    quiet, calls = run_web(monkeypatch, "--workers", "3", "--host", "192.168.1.4")
    assert quiet.exit_code == 0 and "warning" not in quiet.output and calls[0][2:] == (3, ("192.168.1.4",))


@pytest.mark.parametrize("args, needle", [(["--workers", "0"], "--workers"), (["--port", "0"], "--port"),
                                          (["--allow-host", "a/b"], "--allow-host")])
def test_web_refuses_bad_options(monkeypatch, args, needle):
    result, calls = run_web(monkeypatch, *args)
    assert result.exit_code == 2 and needle in result.output and not calls


def test_web_runs_the_workers_asked_for():
    """The real command with 2 workers: both processes start (the app factory travels to them) and answer."""
    proc, port = start_web([str(TOKENOMY), "web", "--workers", "2"])
    try:
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        workers = [c for c in children if "spawn_main" in Path(f"/proc/{c}/cmdline").read_text()]
        assert len(workers) == 2
        assert httpx.get(f"http://127.0.0.1:{port}/api/models", headers={"Host": "evil.example"}).status_code == 400
    finally:
        stop(proc)
