"""Pages through the TestClient: the data each page shows, fragments for htmx, inline errors, the CLI command."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from tokenomy.catalog import loader
from tokenomy.cli import commands  # noqa: F401
from tokenomy.cli.app import app as cli_app

HX = {"HX-Request": "true"}


def figures(html: str) -> dict[str, dict]:
    return {m.group(1): json.loads(m.group(2)) for m in re.finditer(
        r'<script type="application/json" data-figure="fig-([\w-]+)">(.*?)</script>', html, re.S)}


def test_serve_page_shows_the_answer_and_its_derivation(client):
    r = client.get("/serve?model=llama-3.1-70b&hardware=hgx-h100-8&batch=64&context=8192")
    assert r.status_code == 200 and r.text.startswith("<!doctype html>")
    api = client.get("/api/decode?model=llama-3.1-70b&hardware=hgx-h100-8&batch=64&context=8192").json()[0]
    assert f'data-step-s="{api["step_s"]}"' in r.text and f'data-bound="{api["bound"]}"' in r.text
    assert "memory (binds)" in r.text and "fits" in r.text
    assert "compute_s = FLOPs / (n*peak_bf16)" in r.text  # the explain panel, without rich markup
    assert "[bold]" not in r.text
    assert "/static/plotly.min.js" in r.text and "cdn" not in r.text.lower()
    assert "roofline" in figures(r.text)


def test_serve_fragment_for_htmx(client):
    r = client.get("/serve?batch=8", headers=HX)
    assert r.status_code == 200 and "<html" not in r.text and 'id="summary"' in r.text
    assert r.headers["vary"] == "HX-Request"
    full = client.get("/serve?batch=8", headers={**HX, "HX-History-Restore-Request": "true"})
    assert "<html" in full.text  # a history miss gets the whole page


@pytest.mark.parametrize("query, field", [
    ("batch=abc", "batch"), ("model=nope", "model"), ("hardware=x", "hardware"), ("context=0", "context"),
    ("kind=train", "kind"), ("kind=prefill&context=10&len_pass=20", "len_pass"), ("zzz=1", "zzz"),
])
def test_serve_bad_input_is_shown_inline(client, query, field):
    for headers in ({}, HX):
        r = client.get(f"/serve?{query}", headers=headers)
        assert r.status_code == 422
        assert f'class="error" role="alert" data-field="{field}"' in r.text
    assert "<form" in client.get(f"/serve?{query}").text  # the full page keeps the form to fix it


def test_serve_does_not_fit_shows_why_and_no_times(client):
    r = client.get("/serve?model=llama-3.1-405b&hardware=h100-sxm&batch=1")
    assert r.status_code == 200 and "DOES NOT FIT" in r.text and 'id="step-time"' not in r.text
    assert "roofline" not in figures(r.text)


def test_serve_prefill_and_uploaded_config(client):
    raw = (loader.ROOT / "models" / "Qwen--Qwen3-32B.json").read_bytes()
    token = client.post("/api/upload", content=raw).json()["config"]
    r = client.get(f"/serve?kind=prefill&config={token}&hardware=b200&batch=2&context=4096&len_pass=1024")
    assert r.status_code == 200 and "uploaded:" in r.text and "using the uploaded config" in r.text
    assert "len_pass S=1024" in r.text


def test_catalog_page_lists_everything_with_sources(client):
    r = client.get("/catalog")
    assert r.status_code == 200
    for name in loader.chip_names() + loader.system_names() + loader.model_names() + loader.storage_names():
        assert f">{name}<" in r.text, name
    assert r.text.count('rel="noreferrer noopener"') > 3 * len(loader.chip_names())  # every chip cites sources
    assert "arxiv.org/abs/2204.02311" in r.text  # a model's provenance
    assert client.get("/catalog?x=1").status_code == 422


def test_root_redirects_to_serve(client):
    r = client.get("/", follow_redirects=False)
    assert r.status_code in (302, 307) and r.headers["location"] == "/serve"


def test_web_command_binds_loopback_unless_told(monkeypatch):
    import uvicorn

    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append(kw))
    assert CliRunner().invoke(cli_app, ["web"]).exit_code == 0
    assert CliRunner().invoke(cli_app, ["web", "--host", "0.0.0.0", "--port", "9000"]).exit_code == 0
    assert calls[0]["host"] == "127.0.0.1" and calls[0]["port"] == 8000
    assert calls[1]["host"] == "0.0.0.0" and calls[1]["port"] == 9000
    bad = CliRunner().invoke(cli_app, ["web", "--port", "70000"])
    assert bad.exit_code == 2 and "--port" in bad.output


def test_cli_start_up_does_not_import_the_web_stack():
    code = ("import sys, tokenomy.cli.commands; "
            "print(sorted(m for m in ('fastapi', 'uvicorn', 'plotly', 'jinja2') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
