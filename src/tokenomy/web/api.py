"""The JSON API under /api/: each endpoint answers what a CLI command's ``--json`` prints for the same inputs.

    /api/models                          tokenomy models --json
    /api/model?model=NAME|config=TOKEN   tokenomy model NAME --json   (kv_dtype)
    /api/hardware[?hardware=NAME]        tokenomy hardware [NAME] --json
    /api/decode?model=..&hardware=..     tokenomy decode --model .. --hardware .. --json   (every option, '-' -> '_')
    /api/prefill, /api/plan, /api/train, /api/lifecycle, /api/rl, /api/batch, /api/latency, /api/context,
    /api/pricing, /api/speculate, /api/cache, /api/lecture: likewise (web/cli_bridge.py runs the command)
    POST /api/upload  (body: config.json) -> {"config": TOKEN, "model": <tokenomy model --json>}

models/model/hardware and decode/prefill of an uploaded config (``config=TOKEN``, which the CLI would read from
a file) call the CLI's functions directly and serialise with its ``render.to_json``, so the bytes match too.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from tokenomy.catalog import loader
from tokenomy.cli.foundation import hardware_summary, model_summary, pass_grid
from tokenomy.cli.render import to_json
from tokenomy.core.roofline import Efficiency
from tokenomy.web import params as P
from tokenomy.web.cli_bridge import SPECS, run_json

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
    eff = Efficiency(o.flops_fraction, o.hbm_fraction, o.overhead_s)
    return pass_grid(kind, m, hw, batch, context, len_pass, o.chips, o.weight_dtype, o.kv_dtype, eff)[2]


def _pass_endpoint(kind: str):
    def endpoint(request: Request) -> Response:
        if "config" not in request.query_params:
            return bridged(kind, request)
        fields = P.PASS_FIELDS if kind == "prefill" else tuple(f for f in P.PASS_FIELDS if f != "len_pass")
        return json_response(pass_rows(kind, query(request, fields)))

    endpoint.__name__ = kind
    endpoint.__doc__ = (f"tokenomy {kind} --json. With config=TOKEN (an uploaded config.json): the same rows, "
                        "without parallel-layout options (tp, ep, pp, dp), which need a catalog model.")
    return endpoint


def bridged(command: str, request: Request) -> Response:
    return Response(run_json(SPECS[command], request.query_params), media_type="application/json")


def _bridged_endpoint(command: str):
    def endpoint(request: Request) -> Response:
        return bridged(command, request)

    endpoint.__name__ = command
    endpoint.__doc__ = f"What `tokenomy {command} --json` prints; query keys are its options with '-' -> '_'."
    return endpoint


for _name in SPECS:
    router.add_api_route(f"/{_name}", _pass_endpoint(_name) if _name in ("decode", "prefill")
                         else _bridged_endpoint(_name), methods=["GET"], summary=f"tokenomy {_name} --json")


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
