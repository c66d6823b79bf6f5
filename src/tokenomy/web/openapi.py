"""``/openapi.json`` made self-describing: every query parameter of every ``/api`` endpoint, with its type, bounds,
allowed values, default and a line of help.

The endpoints read their query themselves (web/params.py parses it into the answer's keywords), so FastAPI sees no
parameters; this module declares them from the same tables the parser uses (``api.endpoint_options``: an answer's
keywords and their kinds, ``params.NUMBERS`` bounds, ``params.CHOICES``), so the schema cannot drift from what is
accepted. Help lines: ``views.HELP`` (the forms' help), else ``HELP`` below.
"""

from __future__ import annotations

import inspect
from typing import Callable

from tokenomy.catalog import loader
from tokenomy.units import DTYPE_BYTES
from tokenomy.web import api
from tokenomy.web import params as P

HELP = {  # parameters the forms do not show (views.HELP has the rest)
    "workload": "steady (requests of isl/osl) | multiturn | agentic: sessions with growing contexts and KV tiers "
                "(concurrency = concurrent sessions, rate = sessions/s)",
    "kv_tiering": "sessions: the tiered KV cache policy (catalog/kv_tiering, e.g. lmcache); empty: HBM only",
    "routing": "sessions: compare routers across replicas: round-robin, session-sticky, prefix-aware (llm-d), kv-router (Dynamo)",
    "usd_per_kwh": "electricity price, $ per kWh; empty: catalog/power/facility.toml's (0.08, US industrial)",
    "facility": "deployment class for the facility overhead (PUE): hyperscale (default), colocation, ai-liquid",
    "objective": "what a serving plan maximises under the SLOs: goodput-per-usd (default), tokens-per-joule, tco",
    "config": "an uploaded config.json: the token POST /api/upload returns (stands for model)",
    "torus": "torus dimensions of a TPU slice, e.g. 16x16x16; empty: the system's own",
    "sparse_const": "c in the sparse-attention keys read per query, c * context^p",
    "sparse_exponent": "p in c * context^p (0 < p <= 1)",
    "band": "Goldilocks: both terms within this factor of each other",
    "step_context": "context at which the step-time table is read",
    "models": "catalog models to compare, comma-separated",
    "max_batch": "largest running batch (an engine's cap, or the context answer's operating batch)",
    "concurrency": "closed loop: users each with one request in flight; a list sweeps",
    "rate": "open loop: requests per second arriving; a list sweeps",
    "isl": "input (prompt) tokens per request",
    "osl": "output tokens per request",
    "isl_dist": "input-length distribution: fixed:N, uniform:a:b or lognormal:mu:sigma",
    "osl_dist": "output-length distribution: fixed:N, uniform:a:b or lognormal:mu:sigma",
    "cache_hit": "share of the prompt's tokens found in the prefix cache",
    "engine": "serving-engine profile from the catalog (token budget, batch cap, KV share); default vllm, or emit's",
    "emit": "launch commands for the chosen plan: vllm, sglang, trtllm or dynamo (flags from catalog/engines/flags)",
    "max_num_tokens": "tokens the engine schedules per step; omit: the profile's",
    "batch_wait_iters": "trtllm: delayed batching, iterations new prompts are held while others decode; omit: off",
    "batch_wait_tokens_ratio": "trtllm: delayed batching, ... or until they fill this share of max_num_tokens; "
                               "omit: off",
    "ttft_slo": "SLO: longest time to first token, seconds (goodput counts requests within it)",
    "tpot_slo": "SLO: longest time per output token, seconds",
    "method": "analytic: the steady state; simulate: the iteration-level simulator",
    "arrivals": "closed loop: staggered (steady state) or together (all at t = 0)",
    "protocol": "the benchmark tool whose run the figures reproduce (steady: the steady state users plan with)",
    "requests": "simulate: requests to run; analytic open loop (rate): a finite run of that many (omit: endless)",
    "seed": "simulate: random seed of the lengths and arrivals",
    "mode": "agg: prefill and decode on the same chips; disagg: separate pools",
    "prefill_chips": "disagg: chips of the prefill pool; empty: searched",
    "decode_chips": "disagg: chips of the decode pool; empty: searched",
    "real": "yes: the claims on real hardware (calibrated efficiency) instead of the lecture's ideal",
    "ids": "claim ids to show, comma-separated (L1,L2); empty: all",
    "ep_overlap": "share of compute hiding the EP all-to-alls (0..1; 1 = Megatron's --overlap-moe-expert-parallel-comm; "
                  "dualpipe hides them all)",
    "attention_kernel": "core-attention kernel: fused (cuDNN / FA3 class: Megatron, NeMo, DeepSeek) or fa2 (PyTorch "
                        "SDPA's FlashAttention-2, torchtitan)",
    "fp8_scaling": "FP8 operand casts with compute_dtype fp8: fused (Transformer Engine, per-tensor or block-scaled as "
                   "DeepSeek-V3) or tensorwise (torchao's dynamic per-tensor casts as HBM passes of their own)",
    "tp_overlap": "share of compute hiding the TP collectives (0..1; 1 = Megatron's --tp-comm-overlap)",
    "fsdp": "yes: fully sharded data parallel (ZeRO-3)",
    "no_sp": "yes: no sequence parallelism over tp",
    "virtual_stages": "interleaved schedule: model chunks per pipeline stage",
    "flops_fraction": "share of the chip's peak FLOP/s a GEMM reaches",
    "attention": "attention FLOPs counted: causal (half), full, or none",
    "compute_dtype": "element type of the matmuls",
    "grad_dtype": "element type of the gradients",
    "optimizer_dtype": "element type of the optimizer state",
    "activation_dtype": "element type of the activations stored for backward (fp8: DeepSeek-V3's FP8 caching)",
    "moe_kernels": "unfused, or fused (grouped GEMM with fused activation and quantisation, one CUDA graph)",
    "bf16_layers_at_end": "The recipe's last layers whose GEMMs stay in BF16 under FP8 / NVFP4 (Megatron-Core num_layers_at_end_in_bf16)",
    "recompute_modules": ("With recompute selective: Megatron-Core's recompute_modules, comma-separated: core_attn, "
                          "moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts (empty: core_attn)"),
    "offload_layers": ("Layers whose activations go to host memory between forward and backward (Megatron-Core "
                       "cpu_offloading_num_layers)"),
    "moe_dispatcher": "MoE token dispatcher: alltoall or deepep (wait for the host each MoE layer), hybridep, token_drop",
    "search": "yes: the fastest layouts that fit for the chips and global batch (tp, cp, pp, ep, schedule searched)",
    "flash_attention": "yes: no attention scores stored for backward",
    "dropout": "yes: dropout masks stored for backward",
    "published": "a published training run to compare against, by id",
    "rollouts": "RL rollouts per step",
    "prompt_len": "tokens per rollout prompt",
    "output_len": "tokens generated per rollout",
    "flops_factor": "FLOPs per parameter per RL token: 2 (score only) .. 6 (train on all)",
    "train_mfu": "MFU of the training part of the RL step",
}


def help_of(name: str) -> str:
    from tokenomy.web.views import HELP as FORM_HELP

    pool, _, field = name.partition("_")
    if name in P.POOL_FIELDS and name not in HELP:  # a disaggregated pool's own chips or degree
        return f"disagg: the {pool} pool's " + (FORM_HELP.get(field) or "chips").split(";")[0]
    return FORM_HELP.get(name) or HELP.get(name, "")


def _default(value) -> object:
    if isinstance(value, (list, tuple)):
        return ",".join(f"{x:g}" if isinstance(x, float) else str(x) for x in value)
    return value if isinstance(value, (bool, int, float, str)) else None


def schema_of(name: str, opt: P.Option) -> dict:
    """The JSON schema of one query value, from the parser's kind and bounds."""
    b = P.NUMBERS.get(name)
    if opt.kind in ("int", "float", "number"):
        out = {"type": "integer" if opt.kind == "int" else "number", "minimum": b.lo, "maximum": b.hi}
        if b.lo_open:
            out |= {"exclusiveMinimum": b.lo}
            del out["minimum"]
        return out
    if opt.kind == "bool":
        return {"type": "boolean"}
    if opt.kind in ("dtype", "choice", "model", "hardware"):
        values = {"dtype": lambda: list(DTYPE_BYTES), "choice": lambda: list(P.CHOICES[name]),
                  "model": loader.model_names, "hardware": P.hardware_names}[opt.kind]()
        return {"type": "string", "enum": values}
    if opt.kind == "config":
        return {"type": "string", "pattern": "^[A-Za-z0-9_-]+$", "maxLength": P.MAX_CONFIG_TOKEN_CHARS}
    if opt.kind == "set":
        return {"type": "string", "pattern": f"^{P.SET_SAFE.pattern}$", "maxLength": P.MAX_VALUE_CHARS}
    return {"type": "string", "maxLength": P.MAX_VALUE_CHARS}


def parameter(name: str, opt: P.Option, options: dict[str, P.Option]) -> dict:
    """One OpenAPI query parameter; ``model`` is optional where ``config`` can stand for it."""
    schema = schema_of(name, opt)
    if (d := _default(opt.default)) is not None:
        schema["default"] = d
    text = help_of(name)
    if opt.kind == "int_list":
        text += (f" (a comma list, e.g. 1,8,64, or a range: 1..4096 powers of two, 1..4096:64 a step, 1k..1M:8log "
                 f"log-spaced; each in {P.NUMBERS[name]}; 128k = 131,072; at most {P.MAX_GRID:,} points a request)")
    elif opt.kind == "float_list":
        text += (f" (a comma list, e.g. 1,4,16, or a range as above; each in {P.NUMBERS[name]}; at most "
                 f"{P.MAX_GRID:,} points a request)")
    elif opt.kind in ("int", "float", "number"):
        text += " (k, M, G: 2^10, 2^20, 2^30, e.g. 128k)"
    required = opt.required and not (name == "model" and "config" in options)
    if name == "model" and "config" in options:
        text += "; required unless config is given"
    return {"name": name, "in": "query", "required": required, "schema": schema, "description": text}


def description_of(name: str) -> str:
    """The answer's docstring (its first paragraph), else the endpoint's."""
    fn: Callable = getattr(api, name, None) if name in api.OWN_OPTIONS else P.answer_fn(name)
    doc = inspect.getdoc(fn) or f"What `tokenomy {name} --json` prints."
    return doc.split("\n\n")[0]


def declare(schema: dict) -> dict:
    """The FastAPI schema with each /api endpoint's query parameters and description filled in."""
    for path, ops in schema.get("paths", {}).items():
        if not path.startswith("/api/"):
            continue
        name = path.removeprefix("/api/")
        options = api.endpoint_options(name)
        for op in ops.values():
            op["parameters"] = [parameter(k, o, options) for k, o in options.items()]
            op["description"] = description_of(name)
            if name == "upload":
                op["requestBody"] = {"required": True, "description": "a Hugging Face config.json",
                                     "content": {"application/json": {"schema": {"type": "object"}}}}
            op.setdefault("responses", {})["422"] = {"description": "bad input: the field and what is allowed",
                                                     "content": {"application/json": {}}}
    return schema


def install(app) -> None:
    """Make ``app.openapi()`` return the declared schema (built once, on first ask)."""
    base = app.openapi

    def openapi() -> dict:
        if app.openapi_schema is None:
            app.openapi_schema = declare(base())
        return app.openapi_schema

    app.openapi = openapi
