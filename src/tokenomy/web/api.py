"""The JSON API under /api/: each endpoint returns the answer's ``payload()``, what the CLI's ``--json`` prints.

    /api/models                          tokenomy models --json
    /api/model?model=NAME|config=TOKEN   tokenomy model NAME --json   (kv_dtype)
    /api/hardware[?hardware=NAME]        tokenomy hardware [NAME] --json
    /api/decode?model=..&hardware=..     tokenomy decode --model .. --hardware .. --json   (every option, '-' -> '_')
    /api/prefill, /api/plan, /api/batch, /api/latency, /api/context, /api/pricing, /api/speculate, /api/cache,
    /api/lecture, /api/train, /api/rl, /api/lifecycle: likewise
    POST /api/upload  (body: config.json) -> {"config": TOKEN, "model": <tokenomy model --json>}

The query is parsed into the answer's keyword arguments by web/params.py (``config=TOKEN`` stands for the model
where the CLI would read a file); the answer's ValueError becomes a 422 naming the field (web/app.py).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from tokenomy.answers import catalog
from tokenomy.web import params as P
from tokenomy.formatting import to_json

router = APIRouter(prefix="/api")
OWN_OPTIONS = {  # the parameters of the endpoints that are not an answer's keywords (web/openapi.py declares them)
    "models": {},
    "model": {"model": P.Option("model", required=True), "config": P.Option("config"),
              "kv_dtype": P.Option("dtype", "bf16")},
    "hardware": {"hardware": P.Option("hardware"), "set": P.Option("set")},
    "upload": {},
}


def endpoint_options(name: str) -> dict[str, P.Option]:
    """What ``/api/<name>`` accepts in its query: an answer's keywords, or the endpoint's own."""
    return OWN_OPTIONS[name] if name in OWN_OPTIONS else P.options(name)


def json_response(obj) -> Response:
    return Response(to_json(obj), media_type="application/json")


def query(request: Request, allowed: tuple[str, ...]) -> P.Query:
    return P.Query(request.query_params, allowed)


@router.get("/models")
def models(request: Request) -> Response:
    """The catalog's models: what `tokenomy models --json` prints."""
    query(request, tuple(OWN_OPTIONS["models"]))
    return json_response(catalog.models().payload())


@router.get("/model")
def model(request: Request) -> Response:
    """One model's architecture, parameters and KV bytes per token: what `tokenomy model NAME --json` prints."""
    q = query(request, tuple(OWN_OPTIONS["model"]))
    return json_response(catalog.model(P.model_from(q), q.dtype("kv_dtype", "bf16")).payload())


@router.get("/hardware")
def hardware(request: Request) -> Response:
    """The catalog's chips and systems, or one of them: what `tokenomy hardware [NAME] --json` prints."""
    q = query(request, tuple(OWN_OPTIONS["hardware"]))
    name, text = q.text("hardware"), q.text("set")
    if name:
        P.hardware_by_name(name)
    hw = P.hardware_with_set(name and name.lower(), P.set_text(text)) if text else None
    return json_response(catalog.hardware(hw or (name.lower() if name else None)).payload())


def _endpoint(command: str):
    def endpoint(request: Request) -> Response:
        q = request.query_params  # context= (empty) is a value, refused as the CLI and tk.* refuse it
        P.refuse_emptied(q, [k for k in q if k in P.NUMBERS])
        return json_response(P.answer(command, q).payload())

    endpoint.__name__ = command
    endpoint.__doc__ = (f"What `tokenomy {command} --json` prints (the answer's payload); query keys are its options "
                        "with '-' -> '_'. Bad input: 422 naming the field and what is allowed.")
    return endpoint


for _name in P.ANSWERS:
    router.add_api_route(f"/{_name}", _endpoint(_name), methods=["GET"], summary=f"tokenomy {_name} --json")


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
    query(request, tuple(OWN_OPTIONS["upload"]))
    data = P.parse_config_bytes(await read_limited(request, P.MAX_CONFIG_BYTES))
    token = P.encode_config(data)
    return json_response({"config": token, "model": catalog.model(P.model_from_token(token)).payload()})
