"""Launch commands for a plan: each pool of the chosen plan as the command (and config file) one engine runs it with.

    emit     vllm | sglang | trtllm: that engine's own server per pool, and for a disaggregated plan its documented
             prefill/decode transfer and router; dynamo: Dynamo's frontend (its router) in front of workers running
             the plan's engine (``python -m dynamo.<engine>``) with that engine's flags
    flags    every flag name, config key and value format comes from catalog/engines/flags/<engine>.toml, read from
             the engine's documented CLI at the engine profile's version (catalog/engines/<engine>.toml ``version``)
    values   the plan's layout (answers/launch_layout.degrees), dtypes (weights, activations, KV) and the engine
             profile it ran under: token budget, batch cap, KV memory share, chunked prefill
    blocks   one per pool (serve; or prefill, decode) plus a router block for disaggregated plans: ``text`` ready to
             paste (placeholders HOST/PORT... assigned on its first line), ``argv`` and ``config`` (the YAML file's
             settings) for machines, ``replicas`` (identical servers of that command the pool runs)
A plan the engine cannot run raises ValueError("emit: <why>") in one line before anything is written.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from tokenomy.answers.launch_layout import degrees, dtypes, scheduler
from tokenomy.answers.launch_text import put, render, shell_text, split
from tokenomy.catalog import loader

EMIT = ("vllm", "sglang", "trtllm", "dynamo")
ENGINES = ("vllm", "sglang", "trtllm")


@dataclass(frozen=True)
class LaunchRequest:
    """What a plan fixes for its deployment: pools are (role, layout dict, chips) with role serve/prefill/decode."""

    emit: str
    serving_engine: str
    model: object  # ModelArch
    weight_dtype: str | None
    kv_dtype: str
    max_num_tokens: int | None
    max_batch: int | None
    pools: tuple
    # TensorRT-LLM's delayed batching the plan ran under: (batch_wait_iters, batch_wait_tokens_ratio); 0: off
    batch_wait: tuple[int, float] = (0, 0.0)


def check_emit(emit, serving_engine: str) -> None:
    """``emit`` is one of EMIT and runs the plan's engine (dynamo runs it as workers)."""
    if emit not in EMIT:
        raise ValueError(f"emit: {emit!r}; allowed: {', '.join(EMIT)}")
    if emit != "dynamo" and emit != serving_engine:
        raise ValueError(f"emit: {emit} commands for a plan modelled under {serving_engine}'s scheduler and memory "
                         f"share; plan with engine {emit} (or emit {serving_engine} or dynamo)")


def launch(req: LaunchRequest) -> tuple[dict, ...]:
    """The blocks (module docstring) of every pool, the router's last."""
    check_emit(req.emit, req.serving_engine)
    table = loader.engine_flags(req.serving_engine)
    disagg = len(req.pools) > 1
    blocks = [_pool(req, table, role, lay, chips, disagg) for role, lay, chips in req.pools]
    if disagg:
        blocks.append(_router(req, table, blocks))
    elif req.emit == "dynamo":
        blocks.insert(0, _frontend())
    return tuple(blocks)


def settings(req: LaunchRequest, table, lay: dict) -> tuple[dict, int]:
    """(setting -> value, replicas) of one pool's server: layout, dtypes and the engine profile's scheduler."""
    from tokenomy.answers.workloads import engine_profile

    values, replicas = degrees(req.serving_engine, lay)
    if "redundant_experts" in values and req.serving_engine == "trtllm":  # its load balancer counts slots, not replicas
        values["redundant_experts"] += int(req.model.num_experts)
    prof = engine_profile(req.serving_engine, int(lay["tp"]), req.max_num_tokens, req.max_batch)
    ckpt = req.model.quantization.dense
    weights = req.weight_dtype or ckpt
    values.update(dtypes(req.serving_engine, table, weights, ckpt, req.kv_dtype, prof.kv_dtype_for(weights)))
    values.update(scheduler(req.serving_engine, prof))
    if req.batch_wait[0] > 0 and req.batch_wait[1] > 0:  # only trtllm takes them (answers.engines.delayed_batching)
        values.update(batch_wait_iters=int(req.batch_wait[0]), batch_wait_tokens_ratio=float(req.batch_wait[1]))
    return values, replicas


def _model_id(m) -> str:
    return loader.hf_repo(m.name) or m.name


def _pool(req: LaunchRequest, table, role: str, lay: dict, chips: int, disagg: bool) -> dict:
    values, replicas = settings(req, table, lay)
    replicas *= max(int(chips) // max(int(lay["chips"]), 1), 1)
    up = role.upper() if disagg else ""
    host, port = f"{up}_HOST" if up else "HOST", f"{up}_PORT" if up else "PORT"
    if disagg:
        values.update({"vllm": {"kv_transfer": {"kv_connector": "NixlConnector", "kv_role": "kv_both"}},
                       "sglang": {"disagg_role": role, "kv_transfer": "nixl"},
                       "trtllm": {"kv_transfer": "DEFAULT"}}[req.serving_engine])
    model = _model_id(req.model)
    if req.emit == "dynamo":
        w = loader.engine_flags("dynamo").workers[req.serving_engine]
        if req.serving_engine == "sglang" and disagg:
            values.pop("disagg_role")
        argv, config = split(table, values, yaml_only=req.serving_engine == "trtllm")
        argv = w.launch.split() + [w.model, model] + argv + ([w.role, role] if disagg else [])
        cfg_flag, place = w.config_flag, {}
    else:
        if req.serving_engine == "trtllm":
            values["backend"] = "pytorch"
        argv, config = split(table, values | {"host": f"${host}", "port": f"${port}"})
        argv = table.launch.split() + ([table.model] if table.model else []) + [model] + argv
        cfg_flag, place = table.config_flag, {host: "0.0.0.0", port: str(_PORTS[role])}
    cfg_file = f"{req.serving_engine}-{role}.yaml" if config else None
    if config:
        argv += [cfg_flag, cfg_file]
    what = f"{role} pool" if disagg else "the plan"
    head = (f"# {what}: {int(chips)} chip{'s' if int(chips) > 1 else ''}, {replicas} server{'s' if replicas > 1 else ''} of this command "
            f"({lay['label'] if 'label' in lay else ''}); {table.engine} {table.version} flags "
            f"(catalog/engines/flags/{table.engine}.toml)")
    return {"pool": role, "engine": req.emit, "backend": req.serving_engine, "version": table.version,
            "replicas": replicas,
            "chips": int(chips), "argv": argv, "config": config or None, "config_file": cfg_file,
            "placeholders": place, "text": shell_text(head, place, argv, config, cfg_file)}


_PORTS = {"serve": 8000, "prefill": 8100, "decode": 8200, "router": 8000}


def _frontend() -> dict:
    d = loader.engine_flags("dynamo")
    argv = d.launch.split() + render(d.flags["port"], "$PORT")
    place = {"PORT": "8000"}
    head = f"# dynamo {d.version} frontend (OpenAI HTTP server and router; catalog/engines/flags/dynamo.toml)"
    return {"pool": "router", "engine": "dynamo", "backend": None, "version": d.version, "replicas": 1, "chips": 0,
            "argv": argv, "config": None, "config_file": None, "placeholders": place,
            "text": shell_text(head, place, argv, None, None)}


def _router(req: LaunchRequest, table, pools: list[dict]) -> dict:
    """The router of a disaggregated plan: dynamo's frontend, or the engine's documented PD router."""
    if req.emit == "dynamo":
        return _frontend()
    r = table.router
    url = {role: f"http://${role.upper()}_HOST:${role.upper()}_PORT" for role in ("prefill", "decode")}
    n = {p["pool"]: p["replicas"] for p in pools}
    values = {"vllm": {"port": "$ROUTER_PORT", "prefill_hosts": "$PREFILL_HOST", "prefill_ports": "$PREFILL_PORT",
                       "decode_hosts": "$DECODE_HOST", "decode_ports": "$DECODE_PORT"},
              "sglang": {"port": "$ROUTER_PORT", "prefill_urls": url["prefill"], "decode_urls": url["decode"]},
              "trtllm": {"port": 8000, "prefill_count": n["prefill"], "prefill_urls": [url["prefill"][7:]],
                         "decode_count": n["decode"], "decode_urls": [url["decode"][7:]]}}[req.serving_engine]
    argv, config = r.launch.split(), {}
    for name, v in values.items():
        f = r.flags[name]
        if f.name:
            argv += render(f, v)
        else:
            put(config, f.key, v)
    cfg_file = f"{req.serving_engine}-router.yaml" if config else None
    if config:
        argv += render(r.flags["config"], cfg_file)
    place = {"ROUTER_PORT": "8000"} if not config else {}
    place |= {"PREFILL_HOST": "127.0.0.1", "PREFILL_PORT": "8100", "DECODE_HOST": "127.0.0.1", "DECODE_PORT": "8200"}
    head = f"# router: {r.note} ({table.engine} {table.version}; {r.source.split(' ')[0]})"
    return {"pool": "router", "engine": req.emit, "backend": req.serving_engine, "version": table.version,
            "replicas": 1,
            "chips": 0, "argv": argv, "config": config or None, "config_file": cfg_file, "placeholders": place,
            "text": shell_text(head, place, argv, config, cfg_file)}


_LAYOUT_KEYS = ("tp", "ep", "pp", "dp", "attn_dp", "kv_batch", "redundant_experts", "ideal", "chips")


def pools_of(result) -> tuple[tuple, ...]:
    """(role, layout dict, chips) of each pool of a plan or serve Result's chosen plan: serve's layout, the plan's
    best row (else the closest to its SLOs), a disaggregated row's prefill and decode pools."""
    x = result.extra
    if isinstance(x.get("plan"), dict):
        return (("serve", x["plan"], x["plan"]["chips"]),)
    rows = result.rows()
    row = x.get("best") or x.get("closest") or (rows[0] if rows else None)
    if row is None:
        raise ValueError("emit: no plan to launch")
    if "prefill_plan" in row:
        return (("prefill", row["prefill_plan"], row["prefill_chips"]), ("decode", row["decode_plan"],
                                                                         row["decode_chips"]))
    return (("serve", {k: row[k] for k in _LAYOUT_KEYS if k in row} | {"label": row["plan"]}, row["chips"]),)


def with_launch(result, req: LaunchRequest):
    """``result`` with ``extra["launch"]`` (the blocks of ``launch``) and a note naming the plan they launch."""
    from dataclasses import replace

    req = replace(req, pools=pools_of(result))
    blocks = launch(req)
    x = result.extra
    which = ("the closest plan (it misses the SLOs)" if not x.get("best") and x.get("closest") else "the chosen plan")
    note = (f"launch: {req.emit} commands for {which}: {len(blocks)} block(s) (--json: launch); "
            "flags from catalog/engines/flags")
    # serve's payload is its rows alone: with launch blocks it becomes {..., "rows": [...], "launch": [...]}
    return replace(result, extra={**x, "launch": list(blocks)}, notes=tuple(result.notes) + (note,),
                   rows_key=result.rows_key or "rows")


def launch_commands(model, *, emit: str, layout: dict, engine: str | None = None, weight_dtype: str | None = None,
                    kv_dtype: str | None = None, max_batch: int | None = None,
                    max_num_tokens: int | None = None) -> list[dict]:
    """The launch blocks (module docstring) of one aggregated server on ``layout`` (Layout.as_dict, e.g. a decode
    answer's ``extra["plan"]``) under ``engine`` (default: the engine ``emit`` names, vllm for dynamo)."""
    from tokenomy.answers.resolve import model_of, weight_dtype_of
    from tokenomy.answers.workloads import serving_kv_dtype

    engine = engine or (emit if emit in ENGINES else "vllm")
    check_emit(emit, engine)
    req = LaunchRequest(emit, engine, model_of(model), weight_dtype_of(weight_dtype),
                        serving_kv_dtype(model, engine, weight_dtype, kv_dtype), max_num_tokens, max_batch,
                        (("serve", layout, layout["chips"]),))
    return list(launch(req))


def emits(answer):
    """An answer taking ``emit`` (plan, serve): its Result with the launch blocks of the plan it chose. ``engine``
    left out (or None) is the engine ``emit`` names (vllm for dynamo or no emit); ``emit`` is checked first."""
    @functools.wraps(answer)
    def wrapper(*args, **kw):
        emit = kw.get("emit")
        if kw.get("engine") is None and ("engine" in kw or emit is not None):
            kw["engine"] = emit if emit in ENGINES else "vllm"
        if emit is None:
            return answer(*args, **kw)
        check_emit(emit, kw["engine"])
        r = answer(*args, **kw)
        return with_launch(r, _request(args, kw, r.extra))
    return wrapper


def _request(args: tuple, kw: dict, extra: dict) -> LaunchRequest:
    """The LaunchRequest of an answer's call (its pools filled in by with_launch from the Result). A bare layout
    search (no workload: ``extra["constraints"]``) ran a bf16 cache unless asked otherwise, at its best batch: the
    batch cap; a serving answer ran the engine's cache dtype for the weights and its own batch cap."""
    from tokenomy.answers.resolve import model_of, weight_dtype_of
    from tokenomy.answers.workloads import serving_kv_dtype

    model = args[0] if args else kw["model"]
    serving_engine, wd, kv, cap = kw["engine"], kw.get("weight_dtype"), kw.get("kv_dtype"), kw.get("max_batch")
    if "constraints" in extra:
        kv, cap = ("bf16" if kv in (None, "auto") else kv), (extra.get("best") or {}).get("batch")
    else:
        kv = serving_kv_dtype(model, serving_engine, wd, kv)
    return LaunchRequest(kw["emit"], serving_engine, model_of(model), weight_dtype_of(wd), kv, kw.get("max_num_tokens"),
                         cap, ())
