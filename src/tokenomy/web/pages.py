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

from tokenomy.web import catalog_view, compare_page, context_page, kv_tiers_page, serve, views, workload_page
from tokenomy.web import lecture_page as lecture_steps
from tokenomy.formatting import band_suffix, fmt_human
from tokenomy.headers import header
from tokenomy.web.params import CHOICES, field_of, message_of
from tokenomy.catalog import loader
from tokenomy.specs import OVERRIDABLE
from tokenomy.units import DTYPE_BYTES

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=Path(__file__).parent / "templates")
NAV = [("/serve", "Serve"), ("/compare", "Compare"), ("/workload", "Workload"), ("/latency", "Latency"),
       ("/pricing", "Pricing"), ("/speculate", "Speculative"), ("/cache", "Cache tiers"), ("/kv-tiers", "KV tiers"), ("/plan", "Plan"), ("/min_chips", "Min chips"), ("/train", "Train"),
       ("/lifecycle", "Lifecycle"), ("/context-compare", "Context"), ("/lecture", "Lecture"), ("/catalog", "Catalog")]
# names people read for the Lifecycle answer's keys; every other field's header is tokenomy.headers' (the CLI's)
LABELS = {"d_pre": "pre-training tokens", "d_rl": "RL tokens", "d_inf": "inference tokens",
          "n_active_params": "model size N (active params)", "tokens_per_param": "tokens per parameter",
          "overtraining": "over-training vs Chinchilla (x)", "usd_per_pretraining_flop": "$ per pre-training FLOP",
          "ignoring_inference_n_active_params": "N if inference were ignored",
          "ignoring_inference_total_usd": "total $ if inference were ignored", "saving_fraction": "saving",
          "target_loss": "quality target (Chinchilla loss)", "pretraining_usd": "pre-training cost", "rl_usd": "RL cost",
          "inference_usd": "inference cost", "total_usd": "total cost", "pretraining_fraction": "pre-training share",
          "rl_fraction": "RL share", "inference_fraction": "inference share", "pretraining_flops": "pre-training compute",
          "rl_flops": "RL compute", "inference_flops": "inference compute", "hardware": "priced on",
          "run": "published run", "serve_hardware": "serves rollouts and inference",
          "lecture_pretraining_fraction": "pre-training share (lecture's constants)",
          "lecture_rl_fraction": "RL share (lecture's constants)",
          "lecture_inference_fraction": "inference share (lecture's constants)"}


def label(key: str) -> str:
    return LABELS.get(key) or header(key)


def fig_json(fig) -> Markup:
    """A figure as JSON safe inside <script type="application/json">."""
    text = plotly.io.to_json(fig, validate=False)
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


templates.env.filters["fmt"] = lambda v, key: fmt_human(key, v)
templates.env.filters["band"] = lambda row, key: band_suffix(key, row)  # '(-9%/+14%)' or ''
templates.env.filters["label"] = label
templates.env.filters["fig_json"] = fig_json


def placeholder(default) -> str:
    """An answer's default as a form placeholder: 1e+11 not 100000000000.0, lists as the CLI writes them."""
    if default is None:
        return ""
    if isinstance(default, (list, tuple)):
        return ",".join(placeholder(x) for x in default)
    if isinstance(default, float):
        return f"{default:.4g}"
    return str(default)


templates.env.filters["placeholder"] = placeholder
templates.env.globals["workload_link"] = views.workload_link
# the custom-chip panel's inputs (templates/_custom_chip.html): the what-if fields people reach for first
SET_FIELDS = ("hbm_bytes_per_s", "hbm_bytes", "bf16_flops_per_s", "fp8_flops_per_s", "fp4_flops_per_s",
              "peak_flops_per_s", "scale_up_bytes_per_s", "scale_out_bytes_per_s", "usd_per_chip_hour", "tdp_w")
templates.env.globals["set_fields"] = [(f, OVERRIDABLE[f]) for f in SET_FIELDS]


def is_fragment(request: Request) -> bool:
    return request.headers.get("hx-request") == "true" and "hx-history-restore-request" not in request.headers


def error_of(e: ValueError, given=()) -> dict:
    return {"field": field_of(e, given), "msg": message_of(e)}


def render(request: Request, page: str, fragment: str, context: dict, compute: Callable[[], dict]):
    """Full page, or the results fragment for htmx; a ValueError becomes an inline error and a 422. The results
    of one path and query are computed once per app (web/view_cache.py), for the fragment, the page and Back."""
    try:
        context |= request.app.state.views.get((request.url.path, tuple(request.query_params.multi_items())),
                                               compute)
        error = None
    except ValueError as e:
        error = error_of(e, request.query_params)
    context |= {"error": error, "nav": NAV, "path": request.url.path}
    # Back/Forward into an error's URL: htmx restores history from the server only from a 2xx answer (else it
    # keeps the page on screen, the old results under the error's URL), so a restore gets the error page as 200
    restore = "hx-history-restore-request" in request.headers
    return templates.TemplateResponse(request, fragment if is_fragment(request) else page, context,
                                      status_code=422 if error and not restore else 200,
                                      headers={"Vary": "HX-Request, HX-History-Restore-Request"})


@router.get("/")
def index() -> RedirectResponse:
    return RedirectResponse("/serve")


def serve_choices(values: Mapping[str, str]) -> dict:
    return {"models": loader.model_names(), "chip_names": loader.chip_names(), "system_names": loader.system_names(),
            "dtypes": list(DTYPE_BYTES), "values": values, "help": views.HELP}


@router.get("/serve", response_class=HTMLResponse)
def serve_page(request: Request):
    values = serve.form_values(request.query_params)
    return render(request, "serve.html", "_serve_results.html", serve_choices(values),
                  lambda: serve.serve_view(*serve.parse_serve(request.query_params)))


def _bridged_page(name: str, page: views.Page):
    def route(request: Request):
        values = page.values(request.query_params)
        form = {"page": page, "values": values, "options": page.options(), "dtypes": list(DTYPE_BYTES),
                "models": loader.model_names(), "chip_names": loader.chip_names(),
                "system_names": loader.system_names(), "choices": {**CHOICES, **views.PAGE_CHOICES}}
        return render(request, "bridged.html", f"_{name}_results.html", form,
                      lambda: page.view(request.query_params))

    route.__name__ = f"{name}_page"
    router.add_api_route(f"/{name}", route, methods=["GET"], response_class=HTMLResponse)


for _name, _page in views.PAGES.items():
    _bridged_page(_name, _page)


@router.get("/workload", response_class=HTMLResponse)
def workload(request: Request):
    values = workload_page.form_values(request.query_params)
    return render(request, "workload.html", "_workload_results.html", {**serve_choices(values), "w": workload_page},
                  lambda: workload_page.view(request.query_params))


@router.get("/kv-tiers", response_class=HTMLResponse)
def kv_tiers(request: Request):
    values = kv_tiers_page.form_values(request.query_params)
    return render(request, "kv_tiers.html", "_kv_tiers_results.html", {**serve_choices(values), "p": kv_tiers_page},
                  lambda: kv_tiers_page.view(request.query_params))


@router.get("/lecture", response_class=HTMLResponse)
def lecture_page(request: Request):
    return render(request, "lecture.html", "lecture.html", {}, lambda: lecture_steps.lecture_view(request.query_params))


@router.get("/catalog", response_class=HTMLResponse)
def catalog_page(request: Request):
    return render(request, "catalog.html", "catalog.html", {}, lambda: catalog_view.catalog(request.query_params))


@router.get("/context-compare", response_class=HTMLResponse)
def context_compare_page(request: Request):
    values = context_page.form_values(request.query_params)
    form = {"values": values, "models": loader.model_names(), "chip_names": loader.chip_names(),
            "system_names": loader.system_names(), "dtypes": list(DTYPE_BYTES)}
    return render(request, "context_compare.html", "_context_compare_results.html", form,
                  lambda: context_page.view(request.query_params))


@router.get("/compare", response_class=HTMLResponse)
def compare(request: Request):
    values = compare_page.form_values(request.query_params)
    form = {**serve_choices(values), "all_columns": compare_page.COLUMNS, "optional_columns": compare_page.OPTIONAL}
    return render(request, "compare.html", "_compare_results.html", form,
                  lambda: compare_page.view(request.query_params))
