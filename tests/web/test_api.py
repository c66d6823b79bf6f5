"""The JSON API answers exactly what the CLI's --json prints, bounds its inputs, and names bad fields (422)."""

from __future__ import annotations

import base64
import json
import zlib
from pathlib import Path

import pytest
from cli_runner import CliRunner

from tokenomy.catalog import loader
from tokenomy.cli import commands  # noqa: F401  (registers the commands)
from tokenomy.cli.app import app

CONFIGS = Path(loader.ROOT) / "models"


def cli_json(*args: str) -> str:
    """What a user's `tokenomy ... --json` prints: the command line run as the tokenomy process runs it
    (tests/cli_runner), its stdout apart from its stderr."""
    r = CliRunner().invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.stderr
    return r.stdout


def field_of(resp) -> str:
    assert resp.status_code == 422, resp.text
    d = resp.json()["detail"][0]
    assert d["msg"]
    return d["loc"][-1]


@pytest.mark.parametrize("url, args", [
    ("/api/models", ["models"]),
    ("/api/model?model=deepseek-v3&kv_dtype=fp8", ["model", "deepseek-v3", "--kv-dtype", "fp8"]),
    ("/api/hardware", ["hardware"]),
    ("/api/hardware?hardware=gb200-nvl72", ["hardware", "gb200-nvl72"]),
    ("/api/decode?model=deepseek-v3&hardware=gb200-nvl72&batch=1,64,4096&context=2048,131072",
     ["decode", "--model", "deepseek-v3", "--hardware", "gb200-nvl72", "--batch", "1,64,4096",
      "--context", "2048,131072"]),
    ("/api/decode?model=llama-3.1-70b&hardware=hgx-h100-8&chips=4&batch=1..256&weight_dtype=fp8&kv_dtype=fp8"
     "&efficiency=roofline",
     ["decode", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--chips", "4", "--batch", "1..256",
      "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--efficiency", "roofline"]),
    ("/api/decode?model=deepseek-v3&hardware=hgx-h100-8&chips=16&ep=16&redundant_experts=16&batch=64",
     ["decode", "--model", "deepseek-v3", "--hardware", "hgx-h100-8", "--chips", "16", "--ep", "16",
      "--redundant-experts", "16", "--batch", "64"]),
    ("/api/decode?model=llama-3.1-70b&hardware=hgx-h100-8&layout=ideal&batch=8",
     ["decode", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--layout", "ideal", "--batch", "8"]),
    ("/api/plan?model=llama-3.1-70b&hardware=hgx-h100-8&top=5",
     ["plan", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--top", "5"]),
    ("/api/prefill?model=gemma-3-27b-it&hardware=hgx-h100-8&batch=1,8&context=8192",
     ["prefill", "--model", "gemma-3-27b-it", "--hardware", "hgx-h100-8", "--batch", "1,8", "--context", "8192"]),
    ("/api/prefill?model=qwen3-30b-a3b&hardware=b200&batch=4&context=32768&len_pass=512",
     ["prefill", "--model", "qwen3-30b-a3b", "--hardware", "b200", "--batch", "4", "--context", "32768",
      "--len-pass", "512"]),
])
def test_api_equals_cli_json(client, url, args):
    resp = client.get(url)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("application/json")
    assert resp.text.strip() == cli_json(*args).strip()  # byte for byte, not just the same numbers


def test_non_fitting_rows_carry_no_times(client):
    rows = client.get("/api/decode?model=llama-3.1-405b&hardware=h100-sxm&batch=1").json()
    assert rows[0]["fits"] is False and rows[0]["step_s"] is None and rows[0]["tokens_per_s"] is None
    assert "usable HBM" in rows[0]["why"]


def test_upload_round_trip_equals_cli_with_the_file(client, tmp_path):
    raw = (CONFIGS / "mistralai--Mixtral-8x7B-v0.1.json").read_bytes()
    up = client.post("/api/upload", content=raw, headers={"content-type": "application/json"})
    assert up.status_code == 200, up.text
    token = up.json()["config"]
    cli_model = json.loads(cli_json("model", str(CONFIGS / "mistralai--Mixtral-8x7B-v0.1.json")))
    assert {**up.json()["model"], "name": None} == {**cli_model, "name": None}
    assert up.json()["model"]["name"].startswith("uploaded:")
    api = client.get(f"/api/decode?config={token}&hardware=hgx-h100-8&batch=1,32&context=4096").json()
    cli = json.loads(cli_json("decode", "--model", str(CONFIGS / "mistralai--Mixtral-8x7B-v0.1.json"),
                              "--hardware", "hgx-h100-8", "--batch", "1,32", "--context", "4096"))
    assert api == cli
    assert client.get(f"/api/model?config={token}").json()["total_params"] == cli_model["total_params"]


@pytest.mark.parametrize("url, field", [
    ("/api/decode?model=nope&hardware=h100-sxm", "model"),
    ("/api/decode?hardware=h100-sxm", "model"),
    ("/api/decode?model=llama-3.1-8b", "hardware"),
    ("/api/decode?model=/etc/passwd&hardware=h100-sxm", "model"),  # a path is never opened
    ("/api/decode?model=llama-3.1-8b&hardware=../../etc/passwd", "hardware"),
    ("/api/decode?model=llama-3.1-8b&hardware=h100-sxm&batch=abc", "batch"),
    ("/api/decode?model=llama-3.1-8b&hardware=h100-sxm&batch=0", "batch"),
    ("/api/decode?model=llama-3.1-8b&hardware=h100-sxm&batch=1.5", "batch"),
    ("/api/decode?model=llama-3.1-8b&hardware=h100-sxm&batch=1..2048:1", "batch"),  # 2,048 points > 1,024
    ("/api/decode?model=llama-3.1-8b&hardware=h100-sxm&batch=" + ",".join(map(str, range(1, 65)))
     + "&context=1..65536", "batch"),  # 64 x 17 grid points > 1024
    ("/api/decode?model=llama-3.1-8b&hardware=h100-sxm&batch=2097152", "batch"),  # > 2^20
    ("/api/decode?model=llama-3.1-8b&hardware=h100-sxm&context=99999999", "context"),
    ("/api/decode?model=llama-3.1-8b&hardware=h100-sxm&chips=0", "chips"),
    ("/api/decode?model=llama-3.1-8b&hardware=h100-sxm&kv_dtype=fp3", "kv_dtype"),
    ("/api/decode?model=llama-3.1-8b&hardware=h100-sxm&flops_fraction=0", "flops_fraction"),
    ("/api/decode?model=llama-3.1-8b&hardware=h100-sxm&hbm_fraction=1.5", "hbm_fraction"),
    ("/api/decode?model=llama-3.1-8b&hardware=h100-sxm&overhead_s=nan", "overhead_s"),
    ("/api/decode?model=llama-3.1-8b&hardware=h100-sxm&len_pass=3", "len_pass"),  # decode has no len_pass
    ("/api/decode?model=llama-3.1-8b&hardware=h100-sxm&bacth=3", "bacth"),  # typos are errors, not ignored
    ("/api/prefill?model=llama-3.1-8b&hardware=h100-sxm&context=100&len_pass=200", "len_pass"),
    ("/api/model?model=llama-3.1-8b&kv_dtype=x", "kv_dtype"),
    ("/api/hardware?hardware=tpu-v99", "hardware"),
    ("/api/decode?config=!!!&hardware=h100-sxm", "config"),
    ("/api/decode?config=" + "A" * 24001 + "&hardware=h100-sxm", "config"),
    ("/api/decode?model=" + "x" * 300 + "&hardware=h100-sxm", "model"),
])
def test_bad_input_is_422_naming_the_field(client, url, field):
    assert field_of(client.get(url)) == field


def token_of(raw: bytes) -> str:
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")


def test_config_token_is_bounded_after_decompression(client):
    bomb = token_of(b'{"a":"' + b"x" * 10_000_000 + b'"}')  # ~10 kB of token, 10 MB of JSON
    assert len(bomb) < 24_000
    r = client.get(f"/api/model?config={bomb}")
    assert field_of(r) == "config" and "more than" in r.json()["detail"][0]["msg"]


@pytest.mark.parametrize("body, needle", [
    (b"not json", "not valid JSON"),
    (b"[1, 2]", "JSON object"),
    (b'{"model_type": "gpt9"}', "not supported"),
    (b"[" * 100_000 + b"]" * 100_000, "larger than"),
    (b"[" * 20_000 + b"]" * 20_000, "not valid JSON"),  # too deep: refused, not a crash
    (b'{"model_type": "llama"}', "config"),
])
def test_upload_refuses_bad_configs(client, body, needle):
    r = client.post("/api/upload", content=body)
    assert field_of(r) == "config"
    assert needle in r.json()["detail"][0]["msg"]


def test_upload_is_parsed_never_executed(client):
    evil = {"model_type": "llama", "auto_map": {"AutoConfig": "evil.Config"}, "trust_remote_code": True,
            "hidden_size": "__import__('os').system('touch /tmp/tokenomy-pwned')"}
    r = client.post("/api/upload", content=json.dumps(evil).encode())
    assert field_of(r) == "config"
    assert not Path("/tmp/tokenomy-pwned").exists()


def test_static_files_are_a_fixed_set(client):
    assert client.get("/static/plotly.min.js").status_code == 200
    assert b"htmx" in client.get("/static/htmx.min.js").content
    for bad in ("/static/README.md", "/static/..%2Fapp.py", "/static/%2e%2e/%2e%2e/catalog/loader.py"):
        assert client.get(bad).status_code == 404, bad


def test_openapi_lists_the_api_and_no_cdn_docs(client):
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/api/models", "/api/model", "/api/hardware", "/api/decode", "/api/prefill", "/api/upload"} <= set(paths)
    assert client.get("/docs").status_code == 404  # the Swagger UI would load scripts from a CDN


# ---- commands answered through the CLI itself (web/cli_bridge.py) -----------------------------------------

BRIDGED = [
    ("/api/plan?model=deepseek-v3&hardware=gb200-nvl72&top=5&min_tokens_per_user=20",
     ["plan", "--model", "deepseek-v3", "--hardware", "gb200-nvl72", "--top", "5", "--min-tokens-per-user", "20"]),
    ("/api/train?model=llama-3.1-70b&hardware=h100-sxm&chips=1024&tp=8&pp=4&global_batch=256,512&tokens=15e12",
     ["train", "--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--chips", "1024", "--tp", "8", "--pp", "4",
      "--global-batch", "256,512", "--tokens", "15e12"]),
    ("/api/lifecycle?demand_tokens_per_s=5e8&period_days=60", ["lifecycle", "--demand-tokens-per-s", "5e8",
                                                               "--period-days", "60"]),
    ("/api/lifecycle?infer=true&active_params=1e11", ["lifecycle", "--infer", "--active-params", "1e11"]),
    ("/api/lifecycle?run=deepseek-v3&serve_hardware=hgx-b200-8&inference_concurrency=64",
     ["lifecycle", "--run", "deepseek-v3", "--serve-hardware", "hgx-b200-8", "--inference-concurrency", "64"]),
    ("/api/batch?model=deepseek-v3&hardware=gb200-nvl72&kv_dtype=fp8&batch=1..4096",
     ["batch", "--model", "deepseek-v3", "--hardware", "gb200-nvl72", "--kv-dtype", "fp8", "--batch", "1..4096"]),
    ("/api/context?model=llama-3.1-70b&hardware=hgx-h100-8&batch=64",
     ["context", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--batch", "64"]),
    ("/api/cache?model=deepseek-v3&hardware=hgx-h200-8&kv_dtype=fp8&hold=300,3600",
     ["cache", "--model", "deepseek-v3", "--hardware", "hgx-h200-8", "--kv-dtype", "fp8", "--hold", "300,3600"]),
    ("/api/lecture", ["lecture"]),
    ("/api/lecture?real=true&ids=L1,L2", ["lecture", "--real", "--ids", "L1,L2"]),
    ("/api/decode?model=deepseek-v3&hardware=gb200-nvl72&ep=64&batch=256,1024&context=8192",
     ["decode", "--model", "deepseek-v3", "--hardware", "gb200-nvl72", "--ep", "64", "--batch", "256,1024",
      "--context", "8192"]),
    ("/api/prefill?model=llama-3.1-70b&hardware=hgx-h100-8&tp=8&batch=2&context=8192",
     ["prefill", "--model", "llama-3.1-70b", "--hardware", "hgx-h100-8", "--tp", "8", "--batch", "2",
      "--context", "8192"]),
]


@pytest.mark.parametrize("url, args", BRIDGED)
def test_bridged_api_equals_cli_json(client, url, args):
    resp = client.get(url)
    assert resp.status_code == 200, resp.text
    assert resp.text.strip() == cli_json(*args).strip()


@pytest.mark.parametrize("url, field", [
    ("/api/plan?model=deepseek-v3&hardware=tpu-v7-pod", "chips"),  # a 9216-chip search: give a budget
    ("/api/plan?model=deepseek-v3&hardware=gb200-nvl72&chips=2048", "chips"),
    ("/api/plan?hardware=gb200-nvl72", "model"),  # the CLI's own "missing option"
    ("/api/plan?model=deepseek-v3&hardware=gb200-nvl72&context=-5", "context"),  # the CLI's own check
    ("/api/plan?model=deepseek-v3&hardware=gb200-nvl72&top=x", "top"),
    ("/api/cache?model=deepseek-v3&hardware=hgx-h200-8&hold=1,nan", "hold"),
    ("/api/cache?model=deepseek-v3&hardware=hgx-h200-8&hold=1..1025:1", "hold"),  # 1,025 points > 1,024
    ("/api/train?model=llama-3.1-70b&global_batch=1..1e30", "global_batch"),
    ("/api/train?model=llama-3.1-70b&published=../../../etc/passwd", "published"),  # no value can be a path
    ("/api/train?model=llama-3.1-70b&tokens=inf", "tokens"),
    ("/api/lifecycle?infer=maybe", "infer"),
    ("/api/lifecycle?demand=5e7", "demand"),  # query keys are the flags' names, not the Python ones
    ("/api/lifecycle?run=nope", "run"), ("/api/lifecycle?run=deepseek-v3&serve_hardware=zz", "serve_hardware"),
    ("/api/lifecycle?run=deepseek-v3&pretrain_tokens=-1", "pretrain_tokens"),
    ("/api/speculate?model=llama-3.1-8b&hardware=h100-sxm&draft_tokens=1e9", "draft_tokens"),
    ("/api/decode?model=deepseek-v3&hardware=gb200-nvl72&ep=64&len_pass=3", "len_pass"),
    ("/api/decode?config=abc&hardware=h100-sxm&tp=8", "config"),
    ("/api/decode?model=llama-3.1-8b&hardware=h100-sxm&batch=inf", "batch"),
    ("/api/decode?model=llama-3.1-8b&hardware=h100-sxm&chips=1e400", "chips"),
    ("/api/decode?model=llama-3.1-8b&hardware=h100-sxm&tp=abc", "tp"),
    ("/api/decode?model=llama-3.1-8b&hardware=h100-sxm&batch=-4", "batch"),
    ("/api/decode?model=nope&hardware=h100-sxm", "model"),
    ("/api/decode?model=llama-3.1-8b&hardware=h100-sxm&tp=3", "tp"),  # the answer's own check ("tp, ep, pp, dp: ...": the first)
    ("/api/decode?model=llama-3.1-8b&hardware=h100-sxm&efficiency=fast", "efficiency"),
    ("/api/decode?model=llama-3.1-8b&hardware=h100-sxm&layout=best", "layout"),
])
def test_bridged_bad_input_is_422_naming_the_field(client, url, field):
    assert field_of(client.get(url)) == field


def test_bridged_output_never_mixes_between_concurrent_requests(client):
    from concurrent.futures import ThreadPoolExecutor

    urls = ["/api/lecture?ids=L1", "/api/batch?model=llama-3.1-8b&hardware=h100-sxm&batch=1,2",
            "/api/lifecycle", "/api/plan?model=llama-3.1-8b&hardware=hgx-h100-8&top=2"]
    expected = {u: client.get(u).text for u in urls}
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda u: (u, client.get(u).text), urls * 6))
    assert all(text == expected[u] for u, text in got)


def test_the_url_is_bounded(client):
    r = client.get("/api/models?" + "x" * 40_000)
    assert field_of(r) == "query"


def test_names_as_people_type_them_on_the_web(client):
    # aliases resolve on the web as on the CLI; anything else (a path included) is a 422 naming the field
    a = client.get("/api/decode?model=llama-4-scout&hardware=H100&batch=1&context=2048")
    b = client.get("/api/decode?model=llama-4-scout&hardware=h100-sxm&batch=1&context=2048")
    assert a.status_code == 200 and a.json() == b.json()
    for q in ("model=../../etc/passwd&hardware=h100", "model=llama-3.1-8b&hardware=../chips/h100-sxm"):
        r = client.get(f"/api/decode?{q}")
        assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] in ("model", "hardware")
