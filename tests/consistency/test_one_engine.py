"""One engine behind every door: for 200 random (model, hardware, layout, batch, context, dtype) points the Python
API, every CLI command that answers the question (decode, prefill, and estimate, its alias) and the web API give the
same step time and memory per chip to 1e-9 relative (issue 12, deliver 6)."""

import json

import numpy as np
import pytest
from fastapi.testclient import TestClient
from cli_runner import CliRunner

import tokenomy as tk
import tokenomy.cli.commands  # noqa: F401  (registers every command)
from tokenomy.catalog import loader
from tokenomy.cli.app import app
from tokenomy.core.coeffs import shape_of
from tokenomy.parallel.search import candidate_layouts
from tokenomy.web.app import create_app

POINTS = 200
runner = CliRunner()


def _points():
    """Seeded draws: a catalog model, a system, a structurally valid layout over all its chips, and a pass."""
    rng = np.random.default_rng(12)
    models = loader.model_names()
    systems = [s for s in loader.system_names() if loader.hardware(s).num_chips <= 1024]  # the web's bounds
    out = []
    while len(out) < POINTS:
        m, hw = rng.choice(models), loader.hardware(str(rng.choice(systems)))
        lays = candidate_layouts(shape_of(loader.model(m)), hw.num_chips, hw.scale_up_domain_size, exact=True)
        n = np.size(lays.tp)
        if n == 0:
            continue
        lay = lays.at((n,), int(rng.integers(n)))
        kind = str(rng.choice(["decode", "prefill"]))
        out.append(dict(kind=kind, model=str(m), hardware=hw.name, tp=int(lay.tp), ep=int(lay.ep), pp=int(lay.pp),
                        dp=int(lay.dp), redundant_experts=int(lay.redundant_experts),
                        batch=int(rng.choice([1, 3, 8, 64, 512])) * int(lay.dp * lay.pp),
                        context=int(rng.choice([512, 2048, 8192, 32768])),
                        weight_dtype=rng.choice([None, "fp8", "bf16"]), kv_dtype=str(rng.choice(["bf16", "fp8"]))))
    return out


def _cli_args(p: dict, command: str) -> list[str]:
    args = [command, "--model", p["model"], "--hardware", p["hardware"], "--batch", str(p["batch"]),
            "--context", str(p["context"]), "--kv-dtype", p["kv_dtype"], "--json"]
    for k in ("tp", "ep", "pp", "dp", "redundant_experts"):
        args += [f"--{k.replace('_', '-')}", str(p[k])]
    if p["weight_dtype"]:
        args += ["--weight-dtype", p["weight_dtype"]]
    return args


def _api_query(p: dict) -> dict:
    q = {k: p[k] for k in ("model", "hardware", "batch", "context", "kv_dtype", "tp", "ep", "pp", "dp",
                           "redundant_experts")}
    if p["weight_dtype"]:
        q["weight_dtype"] = p["weight_dtype"]
    return q


def _same(a: dict, b: dict, where: str):
    for k in ("step_s", "roofline_step_s", "memory_per_chip_bytes"):
        x, y = a[k], b[k]
        assert (x is None) == (y is None), (where, k)
        if x is not None:
            assert x == pytest.approx(y, rel=1e-9), (where, k)
    assert a["plan"] == b["plan"] and a["fits"] == b["fits"], where


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(allowed_hosts=("testserver",)))  # the TestClient's Host name


def test_api_cli_and_web_agree_on_200_random_points(client):
    seen_ok = seen_unfit = 0
    for p in _points():
        kw = {k: p[k] for k in ("tp", "ep", "pp", "dp", "redundant_experts", "weight_dtype", "kv_dtype")}
        try:
            res = getattr(tk, p["kind"])(p["model"], p["hardware"], batch=[p["batch"]], context=[p["context"]], **kw)
        except ValueError as e:  # an invalid layout is refused by every door alike
            cli = runner.invoke(app, _cli_args(p, p["kind"]))
            web = client.get(f"/api/{p['kind']}", params=_api_query(p))
            assert cli.exit_code == 2 and web.status_code == 422 and str(e).split(":")[0] in cli.output
            continue
        (row,) = res.rows()
        commands = [p["kind"]] + (["estimate"] if p["kind"] == "decode" else [])
        for command in commands:
            cli = runner.invoke(app, _cli_args(p, command))
            assert cli.exit_code == 0, (command, p, cli.output)
            _same(row, json.loads(cli.stdout)[0], f"cli {command} {p}")
        web = client.get(f"/api/{p['kind']}", params=_api_query(p))
        assert web.status_code == 200, (p, web.text)
        _same(row, web.json()[0], f"web {p}")
        seen_ok += row["fits"]
        seen_unfit += not row["fits"]
    assert seen_ok > 50 and seen_unfit > 5  # both kinds of answer were compared
