"""The names a user gives, checked by one table at every door: the allowed values of each named choice (engines,
methods, schedules, ...), the dtypes, and the catalog's names (model, hardware, kv_tiering).

``name(field, value)`` refuses an unknown name with one line naming the field and what is allowed
(``kv_tiering: 'bogus' is not allowed; allowed: hicache, kvbm, lmcache, mooncake``), the same ``InputError`` the
numbers raise (answers/inputs), so the CLI prints ``--kv-tiering: ...`` (exit 2), the web answers 422 with the
field, and ``tk.*`` raises it as it is. answers/door.py calls it for every keyword given as text; web/params.py
offers CHOICES as its pick lists. Files stay with the doors that may read them: the CLI's ``--efficiency FILE.toml``
and a ``config.json`` path for ``--model`` pass through here to the answer, which opens them (the web never does).
"""

from __future__ import annotations

from functools import lru_cache

from tokenomy.answers.inputs import InputError, choice


@lru_cache(maxsize=None)
def choices() -> dict[str, tuple[str, ...]]:
    """field -> its allowed names (imported when first asked: the tables live beside the code that reads them)."""
    from tokenomy.answers.engines import ENGINES, PROTOCOLS
    from tokenomy.answers.launch import EMIT
    from tokenomy.answers.objectives import PLAN_OBJECTIVES
    from tokenomy.core.attention_kernel import ATTENTION_KERNELS
    from tokenomy.core.fp8_casts import FP8_SCALINGS
    from tokenomy.core.memory import SCHEDULES, STRATEGIES
    from tokenomy.core.moe_host import DISPATCHERS
    from tokenomy.core.training import ATTENTION_CONVENTIONS, MOE_KERNELS
    from tokenomy.econ.speculative import DRAFT_KINDS
    from tokenomy.serving.routing import ROUTERS
    from tokenomy.serving.sessions import WORKLOADS

    return {"efficiency": ("calibrated", "roofline"), "layout": ("ideal",), "schedule": tuple(SCHEDULES),
            "recompute": tuple(STRATEGIES), "moe_kernels": tuple(MOE_KERNELS),
            "attention": tuple(ATTENTION_CONVENTIONS), "attention_kernel": tuple(ATTENTION_KERNELS),
            "fp8_scaling": tuple(FP8_SCALINGS), "moe_dispatcher": tuple(DISPATCHERS), "draft": tuple(DRAFT_KINDS),
            "engine": tuple(ENGINES), "method": ("analytic", "simulate"), "arrivals": ("staggered", "together"),
            "mode": ("agg", "disagg"),
            "facility": ("hyperscale", "colocation", "ai-liquid"),  # catalog/power/facility.toml (a test keeps them equal)
            "objective": tuple(PLAN_OBJECTIVES), "emit": tuple(EMIT), "protocol": tuple(PROTOCOLS),
            "workload": ("steady", *WORKLOADS), "routing": tuple(ROUTERS)}


DTYPES = ("weight_dtype", "kv_dtype", "compute_dtype", "grad_dtype", "optimizer_dtype", "activation_dtype")
SPECIAL = {"weight_dtype": ("checkpoint",), "kv_dtype": ("auto",)}  # the checkpoint's own; the engine's default
CATALOG = {"model": "model", "hardware": "hardware", "serve_hardware": "hardware", "kv_tiering": "kv_tiering"}
FILES = {"efficiency": ".toml"}  # the CLI's and tk's terms file (the web offers names only)


def checked(field: str) -> bool:
    return field in CATALOG or field in DTYPES or field in choices() or field == "torus"


def name(field: str, value: str) -> str:
    """``value`` if field ``field`` allows it (module docstring), else an InputError naming the field."""
    v = value.strip()
    if field in FILES and v.endswith(FILES[field]):
        return v
    if field in DTYPES:
        from tokenomy.units import DTYPE_BYTES

        return choice(field, v.lower() if v.lower() in SPECIAL.get(field, ()) else v,
                      (*DTYPE_BYTES, *SPECIAL.get(field, ())))
    if field in CATALOG:
        return _catalog(field, v)
    if field == "torus":
        from tokenomy.parallel.topology import parse_torus

        try:
            parse_torus(v)
        except ValueError as e:
            raise InputError(field, str(e).removeprefix("torus: ")) from None
        return v
    return choice(field, v, choices()[field])


def _catalog(field: str, v: str) -> str:
    """A catalog name (or, for model and hardware, a file the CLI and tk may name) that the loader finds."""
    from tokenomy.catalog import loader

    if field == "kv_tiering" and v == "none":  # HBM only: the engine's own prefix cache (econ/session_tiers.py)
        return v
    try:
        {"model": loader.model, "hardware": loader.hardware, "kv_tiering": loader.kv_tiering}[CATALOG[field]](v)
    except ValueError as e:
        raise InputError(field, str(e).splitlines()[0]) from None
    return v
