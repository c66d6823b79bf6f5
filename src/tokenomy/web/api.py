"""The JSON API under /api/: each endpoint answers what a CLI command's ``--json`` prints for the same inputs.

    /api/models                          tokenomy models --json
    /api/model?model=NAME|config=TOKEN   tokenomy model NAME --json   (kv_dtype)
    /api/hardware[?hardware=NAME]        tokenomy hardware [NAME] --json
    /api/decode?model=..&hardware=..     tokenomy decode --json       (batch, context, chips, dtypes, fractions)
    /api/prefill?...                     tokenomy prefill --json      (+ len_pass)
    POST /api/upload  (body: config.json) -> {"config": TOKEN, "model": <tokenomy model --json>}

The bodies are serialised by the CLI's own ``render.to_json``, so the bytes match too.
"""

from __future__ import annotations

import numpy as np
from fastapi import APIRouter, Request
from fastapi.responses import Response

from tokenomy.catalog import loader
from tokenomy.cli.foundation import hardware_summary, model_summary
from tokenomy.cli.render import to_json
from tokenomy.core.coeffs import coefficients
from tokenomy.core.inference import run_pass
from tokenomy.core.roofline import Efficiency
from tokenomy.web import params as P

router = APIRouter(prefix="/api")


def json_response(obj) -> Response:
    return Response(to_json(obj), media_type="application/json")


def query(request: Request, allowed: tuple[str, ...]) -> P.Query:
    return P.Query(request.query_params, allowed)


@router.get("/models")
def models(request: Request) -> Response:
    query(request, ())
    return json_response([model_summary(n) for n in loader.model_names()])


@router.get("/model")
def model(request: Request) -> Response:
    q = query(request, ("model", "config", "kv_dtype"))
    kv = q.dtype("kv_dtype", "bf16")
    return json_response(model_summary(P.model_from(q), kv))


@router.get("/hardware")
def hardware(request: Request) -> Response:
    q = query(request, ("hardware",))
    name = q.text("hardware")
    if name:
        P.hardware_by_name(name)
        return json_response(hardware_summary(name.lower()))
    rows = [hardware_summary(n) for n in P.hardware_names()]
    for r in rows:
        r["bf16_flops_per_s"] = r["peak_flops_per_s"].get("bf16")
    return json_response(rows)


def pass_rows(kind: str, q: P.Query) -> list[dict]:
    """``tokenomy decode|prefill --json``: the same grid (batch rows x context columns) through run_pass."""
    m = P.model_from(q)
    hw_name = q.text("hardware")
    if hw_name is None:
        raise P.FieldError("hardware", "required: a chip or system name")
    hw = P.hardware_by_name(hw_name)
    batch, context, len_pass = P.pass_grid(q)
    o = P.pass_options(q)
    B = np.array(batch, dtype=float)[:, None]
    C = np.array(context, dtype=float)[None, :]
    S = 1 if kind == "decode" else (C if len_pass is None else len_pass)
    eff = Efficiency(o.flops_fraction, o.hbm_fraction, o.overhead_s)
    r = run_pass(m, hw, batch=B, context=C, len_pass=S, chips=o.chips, weight_dtype=o.weight_dtype,
                 kv_dtype=o.kv_dtype, eff=eff, coeffs=coefficients(m))
    return r.rows()


@router.get("/decode")
def decode(request: Request) -> Response:
    return json_response(pass_rows("decode", query(request, tuple(f for f in P.PASS_FIELDS if f != "len_pass"))))


@router.get("/prefill")
def prefill(request: Request) -> Response:
    return json_response(pass_rows("prefill", query(request, P.PASS_FIELDS)))


async def read_limited(request: Request, limit: int) -> bytes:
    """The request body, refusing (422) more than ``limit`` bytes without reading past it."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise P.FieldError("config", f"larger than {limit} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > limit:
            raise P.FieldError("config", f"larger than {limit} bytes")
    return bytes(body)


@router.post("/upload")
async def upload(request: Request) -> Response:
    """A config.json in the body (raw JSON): parsed, validated, and returned as a token for ``config=``."""
    query(request, ())
    data = P.parse_config_bytes(await read_limited(request, P.MAX_CONFIG_BYTES))
    token = P.encode_config(data)
    return json_response({"config": token, "model": model_summary(P.model_from_token(token))})
