"""The FastAPI application: pages (Jinja2 + htmx), the JSON API, and static files held in memory.

Static files are a fixed set read once at start-up (htmx vendored here, plotly.js from the plotly wheel), so
no request path reaches the file system; the catalog is reached by name only (web/params.py).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response

from tokenomy.web import api, pages
from tokenomy.web.params import field_of, message_of

HERE = Path(__file__).parent
MEDIA = {".js": "application/javascript", ".css": "text/css"}
STATIC_FILES = ("htmx.min.js", "app.js", "style.css")
MAX_QUERY_CHARS = 32_000  # a config token (<= 24,000) and the rest of a page's inputs


def _static_bundle() -> dict[str, tuple[bytes, str]]:
    import plotly.offline

    files = {n: ((HERE / "static" / n).read_bytes(), MEDIA[Path(n).suffix]) for n in STATIC_FILES}
    files["plotly.min.js"] = (plotly.offline.get_plotlyjs().encode(), MEDIA[".js"])
    return files


def error_body(field: str, msg: str) -> dict:
    """FastAPI's own 422 shape, so clients handle ours and the framework's alike."""
    return {"detail": [{"loc": ["query", field], "msg": msg, "type": "value_error"}]}


def create_app() -> FastAPI:
    app = FastAPI(title="tokenomy", docs_url=None, redoc_url=None,  # the docs UIs load scripts from a CDN
                  description="What it costs to train and serve an LLM, and why. Same answers as the CLI's --json.")
    static = _static_bundle()

    @app.exception_handler(ValueError)
    async def value_error(request: Request, e: ValueError) -> JSONResponse:
        return JSONResponse(error_body(field_of(e, request.query_params), message_of(e)), status_code=422)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, e: RequestValidationError) -> JSONResponse:
        err = e.errors()[0]
        return JSONResponse(error_body(str(err["loc"][-1]), err["msg"]), status_code=422)

    @app.get("/static/{name}", include_in_schema=False)
    def static_file(name: str) -> Response:
        if name not in static:
            return Response("not found", status_code=404, media_type="text/plain")
        body, media = static[name]
        return Response(body, media_type=media, headers={"Cache-Control": "public, max-age=3600"})

    @app.middleware("http")
    async def headers(request: Request, call_next):
        if len(request.url.query) > MAX_QUERY_CHARS:  # every input is in the URL: bound the URL
            return JSONResponse(error_body("query", f"longer than {MAX_QUERY_CHARS} characters"), status_code=422)
        response = await call_next(request)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        response.headers.setdefault("X-Frame-Options", "DENY")
        return response

    app.include_router(api.router)
    app.include_router(pages.router)
    return app
