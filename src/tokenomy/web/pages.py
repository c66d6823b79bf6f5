"""Server-rendered pages. A page's inputs are its query string; htmx asks for the same URL with
``HX-Request`` and gets only the results fragment, then pushes the URL, so every state is a link."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping

import plotly.io
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.templating import Jinja2Templates
from markupsafe import Markup

from tokenomy.cli.render import fmt_cell
from tokenomy.web import catalog_view, serve
from tokenomy.web.params import KNOWN_FIELDS, FieldError, field_of, hardware_names
from tokenomy.catalog import loader
from tokenomy.units import DTYPE_BYTES

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=Path(__file__).parent / "templates")
NAV = [("/serve", "Serve"), ("/catalog", "Catalog")]


def fig_json(fig) -> Markup:
    """A figure as JSON safe inside <script type="application/json">."""
    text = plotly.io.to_json(fig, validate=False)
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


templates.env.filters["fmt"] = lambda v, key: fmt_cell(key, v)
templates.env.filters["fig_json"] = fig_json


def is_fragment(request: Request) -> bool:
    return request.headers.get("hx-request") == "true" and "hx-history-restore-request" not in request.headers


def error_of(e: ValueError) -> dict:
    return {"field": field_of(e, KNOWN_FIELDS), "msg": e.msg if isinstance(e, FieldError) else str(e).splitlines()[0]}


def render(request: Request, page: str, fragment: str, context: dict, compute: Callable[[], dict]):
    """Full page, or the results fragment for htmx; a ValueError becomes an inline error and a 422."""
    try:
        context |= compute()
        error = None
    except ValueError as e:
        error = error_of(e)
    context |= {"error": error, "nav": NAV, "path": request.url.path}
    return templates.TemplateResponse(request, fragment if is_fragment(request) else page, context,
                                      status_code=422 if error else 200, headers={"Vary": "HX-Request"})


@router.get("/")
def index() -> RedirectResponse:
    return RedirectResponse("/serve")


def serve_choices(values: Mapping[str, str]) -> dict:
    return {"models": loader.model_names(), "chips": loader.chip_names(), "systems": loader.system_names(),
            "dtypes": list(DTYPE_BYTES), "values": values, "hardware_names": hardware_names()}


@router.get("/serve", response_class=HTMLResponse)
def serve_page(request: Request):
    values = serve.form_values(request.query_params)
    return render(request, "serve.html", "_serve_results.html", serve_choices(values),
                  lambda: serve.serve_view(serve.parse_serve(request.query_params)))


@router.get("/catalog", response_class=HTMLResponse)
def catalog_page(request: Request):
    return render(request, "catalog.html", "catalog.html", {}, lambda: catalog_view.catalog(request.query_params))
