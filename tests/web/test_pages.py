"""Pages through the TestClient: the data each page shows, fragments for htmx, inline errors, the CLI command."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest
from cli_runner import CliRunner

from tokenomy.catalog import loader
from tokenomy.cli import commands  # noqa: F401
from tokenomy.cli.app import app as cli_app

from .figs import arr, trace

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
    explain = re.search(r'<pre id="explain">(.*?)</pre>', r.text, re.S).group(1)
    assert "t_stage = GPU + host - h*min(GPU, host)" in " ".join(explain.split())  # Result.explain(), no rich markup
    assert f"{api['plan']}, batch 64, context 8192" in explain and "roofline bound" in explain
    assert "[bold]" not in r.text and "[/" not in explain
    assert f'id="layout">{api["plan"]}<' in r.text and api["plan"] == "tp8 ep1 pp1 dp1"  # the layout chosen
    assert "/static/plotly.min.js" in r.text and "cdn" not in r.text.lower()
    assert "roofline" in figures(r.text)


def test_serve_fragment_for_htmx(client):
    r = client.get("/serve?batch=8", headers=HX)
    assert r.status_code == 200 and "<html" not in r.text and 'id="summary"' in r.text
    assert "HX-Request" in [v.strip() for v in r.headers["vary"].split(",")]  # (and Accept-Encoding: gzip)
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
    explain = re.search(r'<pre id="explain">(.*?)</pre>', r.text, re.S).group(1)
    assert "batch 2, context 4096, 1024 new token(s) per sequence" in explain
    assert "pass latency = (M+pp-1)*t_stage" in explain  # prefill's formula, not decode's TPOT
    lat = figures(r.text)["latency"]
    assert lat["layout"]["title"]["text"].startswith("Prefill step time vs batch")


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
    from tokenomy.cli import web as cli_web

    calls = []
    monkeypatch.setattr(cli_web, "serve", lambda host, port, workers, hosts: calls.append({"host": host, "port": port}))
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


@pytest.mark.parametrize("path, marker, figs", [
    ("/plan", 'id="best-plan"', {"front"}), ("/train", 'id="train-rows"', {"terms", "memory"}),
    ("/lifecycle", 'id="total-usd"', {"split"}), ("/cache", 'id="envelope"', {"tiers"}),
    ("/lifecycle?run=llama-3.1-405b", 'id="inference-chip-hours"', {"split"}),
    ("/serve", 'id="step-time"', {"roofline", "latency", "cost", "mfu", "pareto"}),
])
def test_each_page_shows_its_data_and_figures(client, path, marker, figs):
    r = client.get(path)
    assert r.status_code == 200 and marker in r.text
    assert set(figures(r.text)) == figs
    fragment = client.get(path, headers=HX).text
    assert "<html" not in fragment and marker in fragment


@pytest.mark.parametrize("path, field", [("/plan?hardware=tpu-v7-pod", "chips"), ("/train?tp=abc", "tp"),
                                         ("/lifecycle?infer=maybe", "infer"), ("/cache?stall=2", "stall"),
                                         ("/lifecycle?run=deepseek-v3&serve_hardware=zz", "serve_hardware"),
                                         ("/lecture?x=1", "x")])
def test_bridged_pages_show_bad_input_inline(client, path, field):
    r = client.get(path)
    assert r.status_code == 422 and f'data-field="{field}"' in r.text


def test_plan_front_rows_open_on_the_serve_page_with_the_same_numbers(client):
    plan = client.get("/api/plan?model=deepseek-v3&hardware=gb200-nvl72&top=0").json()  # the whole front
    links = re.findall(r'<td><a href="(/serve\?[^"]+)"', client.get("/plan?top=0").text)
    assert len(links) == len(plan["front"]) >= 3 and all("tp=" in u and "ep=" in u for u in links)
    for row, link in zip(plan["front"], links):  # every layout the search finds opens as itself
        r = client.get(link.replace("&amp;", "&"))
        assert r.status_code == 200 and f'id="layout">{row["plan"]}<' in r.text, link
        assert f'data-step-s="{row["step_s"]}"' in r.text  # the page's point is the search's point


def test_serve_layout_mode_explains_the_layout(client):
    r = client.get("/serve?model=deepseek-v3&hardware=gb200-nvl72&ep=64&batch=256&kv_dtype=fp8")
    assert "EP dispatch+combine" in r.text and "EP dispatch + combine" in r.text  # explain, critical path
    assert 'id="layout">tp1 ep64 pp1 dp1 attn-dp<' in r.text and "(the layout given)" in r.text
    figs = figures(r.text)
    for name in ("latency", "cost", "mfu", "pareto"):  # the sweeps say what they are: the point's layout
        assert "on tp1 ep64 pp1 dp1 attn-dp, calibrated" in figs[name]["layout"]["title"]["text"], name


def test_serve_latency_figure_is_the_pass_rows(client):
    q = "model=llama-3.1-70b&hardware=hgx-h100-8&batch=64&context=8192"
    fig = figures(client.get(f"/serve?{q}").text)["latency"]
    rows = [r for r in client.get(f"/api/decode?{q.replace('batch=64', 'batch=1..65536')}&tp=8&ep=1&pp=1&dp=1"
                                  ).json() if r["fits"]]
    assert fig["layout"]["xaxis"]["type"] == "log" and fig["layout"]["yaxis"]["type"] == "log"
    names = [t["name"] for t in fig["data"]]
    assert names[:5] == ["step", "roofline bound", "compute", "weight fetch", "KV fetch"]
    assert "communication" in names and "overhead" in names  # tp8 all-reduces; a fixed step overhead
    step = trace(fig, "step")
    assert list(arr(step["x"])) == [r["batch"] for r in rows]
    assert np.allclose(arr(step["y"]), [1e3 * r["step_s"] for r in rows], rtol=1e-12)
    assert np.allclose(arr(trace(fig, "KV fetch")["y"]), [1e3 * r["kv_s"] for r in rows], rtol=1e-12)
    w = arr(trace(fig, "weight fetch")["y"])
    assert np.allclose(w, w[0], rtol=1e-9)  # the weights are read once per step, whatever the batch
    assert all(s >= b for s, b in zip(arr(step["y"]), arr(trace(fig, "roofline bound")["y"])))
    assert fig["layout"]["shapes"][0]["x0"] == 64  # "this batch"


def test_cache_lines_are_the_tiers_totals(client):
    data = client.get("/api/cache?model=deepseek-v3&hardware=hgx-h200-8&kv_dtype=fp8&hold=300").json()
    fig = figures(client.get("/cache?model=deepseek-v3&hardware=hgx-h200-8&kv_dtype=fp8&hold=300").text)["tiers"]
    from tokenomy.web.views import PAGES

    curves = PAGES["cache"].figures(data, {})["tiers"]
    assert curves["data"] == fig["data"]
    for t in data["tiers"]:
        if t.get("capacity_bytes"):  # the line drawn through (hold 300 s) is the tier's own total there
            line = t["retrieve_usd"] + t["hold_usd_per_s"] * 300
            assert line == pytest.approx(t["total_usd"], rel=1e-9), t["tier"]


def test_train_stack_is_the_step(client):
    rows = client.get("/api/train?model=llama-3.1-70b&hardware=h100-sxm&chips=1024&tp=8&pp=4&global_batch=256,1024"
                      ).json()
    for r in rows:  # the figure stacks compute + bubble + exposed comms: they must make the step
        assert r["compute_s"] + r["bubble_s"] + r["comm_exposed_s"] == pytest.approx(r["step_s"], rel=1e-9)


def test_every_lecture_claim_links_to_a_page_that_loads(client):
    from tokenomy.web.lecture_page import LECTURE_LINKS

    claims = client.get("/api/lecture").json()
    assert {c["id"] for c in claims} <= set(LECTURE_LINKS)  # a new claim without a preset fails here
    html = client.get("/lecture").text
    assert html.count('class="claim-link"') == len(claims)
    assert f"{sum(c['ok'] for c in claims)} of {len(claims)}" in html
    for link in sorted(set(re.findall(r'class="claim-link" href="([^"]+)"', html))):
        r = client.get(link.replace("&amp;", "&"))
        assert r.status_code == 200, (link, r.text[-300:])


def _pages() -> dict[str, tuple[str, ...]]:
    from tokenomy.web.serve import SERVE_FIELDS
    from tokenomy.web.views import PAGES

    return {**{k: p.fields for k, p in PAGES.items()}, "serve": SERVE_FIELDS}


@pytest.mark.parametrize("path", ["plan", "train", "lifecycle", "cache"])
def test_bridged_pages_help_each_input_and_show_the_answer(client, path):
    from tokenomy.web.views import PAGES

    page = PAGES[path]
    html = client.get(f"/{path}").text
    form, _, panel = html.partition('id="custom-chip"')  # the what-if panel follows the page's own inputs
    labels = re.findall(r'<label title="([^"]*)">', form)
    assert len(labels) == len(page.fields) and all(labels), labels  # every input says what it is
    assert bool(panel) == ("hardware" in page.fields)  # a custom chip wherever the page takes hardware
    assert all(re.findall(r'<label title="([^"]*)">', panel.partition("</details>")[0]))
    assert html.count("<small>") >= len(page.fields)
    assert 'id="title"' in html and '<pre id="explain">' in html and "[bold]" not in html  # Result.explain()
    assert not re.search(r"placeholder=\"\d+\.0\"|0\.666666", html)  # defaults read as people write them
    assert "B/sB/s" not in html and "-B/s" not in html


def test_plan_efficiency_is_a_choice_and_changes_the_search(client):
    html = client.get("/plan?model=llama-3.1-70b&hardware=hgx-h100-8&top=3").text
    assert re.search(r'<select name="efficiency">.*?<option>calibrated</option><option>roofline</option>', html, re.S)
    cal = client.get("/api/plan?model=llama-3.1-70b&hardware=hgx-h100-8&top=3").json()["best"]
    roof = client.get("/api/plan?model=llama-3.1-70b&hardware=hgx-h100-8&top=3&efficiency=roofline").json()["best"]
    page = client.get("/plan?model=llama-3.1-70b&hardware=hgx-h100-8&top=3&efficiency=roofline").text
    assert roof["tokens_per_s_per_chip"] > cal["tokens_per_s_per_chip"]  # the bound beats the estimate
    assert "roofline efficiency" in page


@pytest.mark.parametrize("path", ["serve", "plan", "train", "lifecycle", "cache"])
def test_no_input_gives_a_server_error_and_bad_ones_name_their_field(app, path):
    from fastapi.testclient import TestClient

    with TestClient(app, raise_server_exceptions=False) as c:
        for field in _pages()[path]:
            for value in ("abc", "-1", "0", "1e400", "nan", "2.5", "99999999999", "x" * 250):
                r = c.get(f"/{path}", params={field: value})
                assert r.status_code in (200, 422), (field, value, r.status_code)
                if r.status_code == 422:
                    got = re.search(r'class="error" role="alert" data-field="([^"]+)"', r.text).group(1)
                    assert got == field, (field, value, got)


def test_serve_inputs_say_what_they_are(client):
    html = client.get("/serve").text
    for name in ("kind", "chips", "batch", "len_pass", "tp", "ep", "redundant_experts", "layout", "hop_latency"):
        m = re.search(rf'<label title="([^"]+)"[^>]*>[^<]*<(?:input|select)[^>]*name="{name}"', html)
        assert m and len(m.group(1)) > 10, name
