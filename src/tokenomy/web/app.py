"""The FastAPI application: pages (Jinja2 + htmx), the JSON API, and static files held in memory.

Static files are a fixed set read once at start-up (htmx vendored here, plotly.js from the plotly wheel), so
no request path reaches the file system; the catalog is reached by name only (web/params.py).

Serving: answers over 1 kB go gzip-compressed to clients that accept it (static files compressed once, on first
ask: plotly.min.js is 4.8 MB, ~1.4 MB gzipped); a request whose Host header is not one of ``allowed_hosts``
(localhost and 127.0.0.1 unless told otherwise: ``tokenomy web --host``/``--allow-host``) gets 400, so a page
bound to every interface cannot be reached under a name nobody configured (DNS rebinding).
"""

from __future__ import annotations

import gzip
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.middleware.gzip import GZipMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware

from tokenomy.web import api, openapi, pages
from tokenomy.web.params import field_of, message_of
from tokenomy.web.view_cache import ViewCache

HERE = Path(__file__).parent
MEDIA = {".js": "application/javascript", ".css": "text/css"}
STATIC_FILES = ("htmx.min.js", "app.js", "style.css")
MAX_QUERY_CHARS = 32_000  # a config token (<= 24,000) and the rest of a page's inputs
LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")  # as the Host header writes them
GZIP_MIN_BYTES = 1024  # below this the gzip header costs more than it saves
GZIP_LEVEL = 6  # zlib's default: ~all of level 9's ratio on JSON/HTML at a third of its CPU


def _static_bundle() -> dict[str, tuple[bytes, str]]:
    import plotly.offline

    files = {n: ((HERE / "static" / n).read_bytes(), MEDIA[Path(n).suffix]) for n in STATIC_FILES}
    files["plotly.min.js"] = (plotly.offline.get_plotlyjs().encode(), MEDIA[".js"])
    return files


def accepts_gzip(request: Request) -> bool:
    return any(part.split(";")[0].strip() == "gzip" for part in request.headers.get("accept-encoding", "").split(","))


def allowed_hosts_of(hosts: Iterable[str] = ()) -> list[str]:
    """The Host names the app answers: the loopback names and those given (a wildcard bind address is no name)."""
    extra = [h.strip().lower() for h in hosts if h.strip() and h.strip() not in ("0.0.0.0", "::")]
    extra = [f"[{h}]" if ":" in h and not h.startswith("[") else h for h in extra]  # an IPv6 literal
    return list(dict.fromkeys([*LOCAL_HOSTS, *extra]))


def error_body(field: str, msg: str) -> dict:
    """FastAPI's own 422 shape, so clients handle ours and the framework's alike."""
    return {"detail": [{"loc": ["query", field], "msg": msg, "type": "value_error"}]}


def create_app(allowed_hosts: Iterable[str] = ()) -> FastAPI:
    """The app; it answers requests for localhost, 127.0.0.1, [::1] and ``allowed_hosts`` only."""
    app = FastAPI(title="tokenomy", docs_url=None, redoc_url=None,  # the docs UIs load scripts from a CDN
                  description="What it costs to train and serve an LLM, and why. Same answers as the CLI's --json.")
    static = _static_bundle()
    app.state.views = ViewCache()  # the pages' results by path and query (pages.render)

    @lru_cache(maxsize=None)
    def gzipped(name: str) -> bytes:
        return gzip.compress(static[name][0], GZIP_LEVEL, mtime=0)

    @app.exception_handler(ValueError)
    async def value_error(request: Request, e: ValueError) -> JSONResponse:
        return JSONResponse(error_body(field_of(e, request.query_params), message_of(e)), status_code=422)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, e: RequestValidationError) -> JSONResponse:
        err = e.errors()[0]
        return JSONResponse(error_body(str(err["loc"][-1]), err["msg"]), status_code=422)

    @app.get("/static/{name}", include_in_schema=False)
    def static_file(name: str, request: Request) -> Response:
        if name not in static:
            return Response("not found", status_code=404, media_type="text/plain")
        body, media = static[name]
        headers = {"Cache-Control": "public, max-age=3600", "Vary": "Accept-Encoding"}
        if accepts_gzip(request):  # compressed once; GZipMiddleware passes an encoded body through
            body, headers["Content-Encoding"] = gzipped(name), "gzip"
        return Response(body, media_type=media, headers=headers)

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
    openapi.install(app)
    app.add_middleware(GZipMiddleware, minimum_size=GZIP_MIN_BYTES, compresslevel=GZIP_LEVEL)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts_of(allowed_hosts), www_redirect=False)
    return app
