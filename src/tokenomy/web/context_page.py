"""The Context page: answers.context_compare for the models chosen (a multi-select: ``models=a&models=b``, or
``models=a,b``), one hardware and a KV dtype; the table, the verdicts and two figures drawn from the payload."""

from __future__ import annotations

from tokenomy.plots import context as cp
from tokenomy.web import params as P
from tokenomy.web.serve import plain

FIELDS = ("models", "hardware", "kv_dtype")
DEFAULTS = {"models": ["deepseek-v4-pro", "qwen3.5-397b-a17b", "kimi-k3", "llama-3.1-405b"],
            "hardware": "gb200-nvl72", "kv_dtype": "bf16"}


def _models(params) -> list[str]:
    given = params.getlist("models") if hasattr(params, "getlist") else [params["models"]] if "models" in params else []
    return [m.strip() for g in given for m in g.split(",") if m.strip()]


def form_values(params) -> dict:
    """What the form shows: the request's values over the defaults (kept as typed)."""
    return {**DEFAULTS, **{k: v for k, v in params.items() if k in FIELDS and k != "models"},
            "models": _models(params) or ([] if "models" in params else DEFAULTS["models"])}


def view(params) -> dict:
    q = P.Query(params, FIELDS)
    v = form_values(params)
    models = P.model_list("models", v["models"])
    hardware = q.text("hardware", DEFAULTS["hardware"])
    P.hardware_by_name(hardware)
    kv = q.dtype("kv_dtype", DEFAULTS["kv_dtype"])
    res = P.answer_fn("context_compare")(models=models, hardware=hardware.lower(), kv_dtype=kv)
    data = res.payload()
    return {"data": data, "title": res.title, "notes": list(res.notes), "explain": plain(res.explain()),
            "columns": res.columns, "figures": {"kv": cp.kv_vs_context(data), "mfu": cp.mfu_vs_context_compare(data)}}
