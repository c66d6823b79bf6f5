"""Request parsing for the web: every input is a query parameter, checked, bounded, and named when wrong.

A query for ``/api/<command>`` (or a page over it) becomes the keyword arguments of the answer function
(tokenomy.answers): the parameters offered are the answer's own keywords (its signature), each parsed by kind —
a list of ints ('1,8,64' or '1..4096', at most MAX_LIST values), a list of floats, an int, a float (finite,
bounded per name), a yes/no flag, or text (letters, digits and . , : + - only). Nothing here touches the file
system: models and hardware are looked up by catalog name only, and an uploaded config.json travels inside the
URL as ``config=<base64url(zlib(json))>``, parsed (never executed).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
import importlib
import inspect
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Callable, Iterable, Mapping

from tokenomy import answers
from tokenomy.answers import inputs
from tokenomy.answers.door import LISTS
from tokenomy.answers.inputs import MAX_BATCH, MAX_CHIPS, MAX_CONTEXT, readable  # noqa: F401  (the pages' bounds)
from tokenomy.answers.engines import ENGINES, PROTOCOLS
from tokenomy.answers.launch import EMIT
from tokenomy.answers.objectives import PLAN_OBJECTIVES
from tokenomy.arch.model import ModelArch
from tokenomy.catalog import loader
from tokenomy.core.memory import SCHEDULES, STRATEGIES
from tokenomy.core.training import ATTENTION_CONVENTIONS, MOE_KERNELS
from tokenomy.econ.speculative import DRAFT_KINDS
from tokenomy.specs import Hardware
from tokenomy.units import CHECKPOINT, DTYPE_BYTES

MAX_VALUE_CHARS = 200  # any one query value, except the config token
MAX_CONFIG_TOKEN_CHARS = 24_000  # fits comfortably in a URL (uvicorn/h11 accept ~64 kB of request line)
MAX_CONFIG_BYTES = 64_000  # an uploaded config.json; real ones are 1-5 kB
MAX_LIST = 64  # values in a batch or context list
MAX_GRID = 1024  # batch x context points in one request
MAX_OVERHEAD_S = 10.0
MAX_MODELS = 8  # models compared on one page


class FieldError(ValueError):
    """Bad input, tied to the query field that carries it; answered with 422 and shown inline."""

    def __init__(self, field: str, msg: str):
        super().__init__(f"{field}: {msg}")
        self.field, self.msg = field, msg


_NAME = r"(?:--)?[a-z][a-z0-9_-]*"
_HEAD = re.compile(rf"\s*({_NAME}(?:(?:, | and ){_NAME})*)(?::| x )")  # 'tp, ep, pp, dp: ...', 'a and b: ...'


def field_of(e: ValueError, given: Iterable[str] = ()) -> str:
    """The field a ValueError is about: the answers put it first ('batch: must be ...'), else 'input'. Of several
    ('rl_penalty and inference_penalty: ...') the first the request gave, else the first named."""
    if isinstance(e, FieldError):
        return e.field
    m = _HEAD.match(str(e))
    if not m:
        return "input"
    names = [n.removeprefix("--").replace("-", "_") for n in re.split(r", | and ", m.group(1))]
    return next((n for n in names if n in set(given)), names[0])


def message_of(e: ValueError) -> str:
    """The message without a leading single 'field:' (the field is shown beside it); a list of fields stays."""
    if isinstance(e, FieldError):
        return e.msg
    line = (str(e).splitlines() or [type(e).__name__])[0]
    m = _HEAD.match(line)
    single = m is not None and m.group(0).rstrip().endswith(":") and not re.search(r", | and ", m.group(1))
    return (line[m.end():].strip() or line) if single else line


class Query:
    """The query string of one request; refuses parameters the endpoint does not know (typos are errors)."""

    def __init__(self, params: Mapping[str, str], allowed: tuple[str, ...]):
        unknown = sorted(set(params) - set(allowed))
        if unknown:
            raise FieldError(unknown[0] or "query", f"unknown parameter {unknown[0]!r}; "
                             + (f"allowed: {', '.join(allowed)}" if allowed else "this takes no parameters"))
        self.p = params

    def text(self, name: str, default: str | None = None, limit: int = MAX_VALUE_CHARS) -> str | None:
        v = self.p.get(name)
        if v is None or v.strip() == "":
            return default
        if len(v) > limit:
            raise FieldError(name, f"longer than {limit} characters")
        return v.strip()

    def choice(self, name: str, allowed: list[str] | tuple[str, ...], default: str | None = None) -> str | None:
        v = self.text(name, default)
        if v is not None and v not in allowed:
            raise FieldError(name, f"{v!r} is not allowed; allowed: {', '.join(allowed)}")
        return v

    def number(self, name: str, default: float | None) -> float | int | None:
        """One number of field ``name`` in the grammar (answers/inputs), bounded by its FIELDS row; absent or
        blank: ``default``."""
        v = self.text(name)
        if v is None:
            return default
        x = _field_error(inputs.number, name, v)
        if not NUMBERS[name].admits(x):
            raise FieldError(name, f"{v} is out of range {NUMBERS[name]} (the web's budget)")
        return x

    def numbers(self, name: str, default: str) -> list:
        """A list of field ``name`` in the grammar (1,8,64, 1..4096, 1k..1M:8log), at most MAX_LIST values."""
        values = _field_error(inputs.numbers, name, self.text(name, default))
        if len(values) > MAX_LIST:
            raise FieldError(name, f"{len(values)} values; at most {MAX_LIST}")
        return values

    def dtype(self, name: str, default: str | None) -> str | None:
        return self.choice(name, tuple(DTYPE_BYTES), default)


def refuse_emptied(params: Mapping[str, str], prefilled: Iterable[str]) -> None:
    """A page's pre-filled number field sent back empty is refused by name (422), never silently its default."""
    for name in prefilled:
        if name in params and not params[name].strip():
            _field_error(inputs.number if name not in LISTS else inputs.numbers, name, "")


def model_by_name(name: str) -> ModelArch:
    """A catalog model by a name or alias only (never a path)."""
    known = loader.catalog_model(name)
    if known is None:
        raise FieldError("model", f"unknown model {name!r}; allowed: {', '.join(loader.model_names())}")
    return loader.model(known)


def model_list(name: str, texts: Iterable[str]) -> list[ModelArch]:
    """Catalog models by short name (``models=a,b`` or repeated ``models=``), the error naming ``name``."""
    names = [t.strip() for t in texts if t.strip()]
    if not names:
        raise FieldError(name, "give at least one catalog model")
    if len(names) > MAX_MODELS:
        raise FieldError(name, f"{len(names)} models; at most {MAX_MODELS}")
    try:
        return [model_by_name(n) for n in names]
    except FieldError as e:
        raise FieldError(name, e.msg) from None


def hardware_names() -> list[str]:
    return loader.chip_names() + loader.system_names()


def hardware_by_name(name: str, field: str = "hardware") -> Hardware:
    """A catalog chip or system by a name or alias only (h100, NVL72, ...; never a path); a refusal names ``field``."""
    stem = loader.resolve("systems", name) or loader.resolve("chips", name)
    if stem is None:
        raise FieldError(field, f"unknown hardware {name!r}; allowed: {', '.join(hardware_names())}")
    return loader.hardware(stem)


# ---- uploaded config.json, carried in the URL -----------------------------------------------------------


def parse_config_bytes(raw: bytes) -> dict:
    if len(raw) > MAX_CONFIG_BYTES:
        raise FieldError("config", f"larger than {MAX_CONFIG_BYTES} bytes")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise FieldError("config", f"not valid JSON ({type(e).__name__}: {str(e)[:120]})") from None
    if not isinstance(data, dict):
        raise FieldError("config", "expected a JSON object (a Hugging Face config.json)")
    return data


def encode_config(data: dict) -> str:
    raw = json.dumps(data, separators=(",", ":")).encode()
    token = base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")
    if len(token) > MAX_CONFIG_TOKEN_CHARS:
        raise FieldError("config", f"too large to carry in a link ({len(token)} > {MAX_CONFIG_TOKEN_CHARS} characters)")
    return token


def _label(data: dict) -> str:
    raw = data.get("_name_or_path") or data.get("model_type") or "config"
    safe = re.sub(r"[^A-Za-z0-9._/-]", "", str(raw))[-60:] or "config"
    return f"uploaded:{safe}"


@lru_cache(maxsize=64)
def model_from_token(token: str) -> ModelArch:
    """Decode a ``config=`` token (bounded before and after decompression) and build the model."""
    if len(token) > MAX_CONFIG_TOKEN_CHARS or not re.fullmatch(r"[A-Za-z0-9_-]+", token):
        raise FieldError("config", "not a config token (base64url, at most "
                                   f"{MAX_CONFIG_TOKEN_CHARS} characters); upload the config.json again")
    try:
        packed = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        d = zlib.decompressobj()
        raw = d.decompress(packed, MAX_CONFIG_BYTES + 1)
    except (binascii.Error, zlib.error, ValueError):
        raise FieldError("config", "corrupt config token; upload the config.json again") from None
    if d.unconsumed_tail or len(raw) > MAX_CONFIG_BYTES:
        raise FieldError("config", f"decompresses to more than {MAX_CONFIG_BYTES} bytes")
    data = parse_config_bytes(raw)
    try:
        return loader.model_from_dict(data, _label(data))
    except ValueError as e:
        raise FieldError("config", str(e)) from None


def model_from(q: Query, default: str | None = None) -> ModelArch:
    token = q.text("config", None, MAX_CONFIG_TOKEN_CHARS)
    if token:
        return model_from_token(token)
    name = q.text("model", default)
    if name is None:
        raise FieldError("model", "required: a catalog name, or upload a config.json")
    return model_by_name(name)


# ---- a query -> an answer's keyword arguments ------------------------------------------------------------

ANSWERS = answers.SERVED  # the questions /api/<command> answers (the answer layer's own table)
NOT_OFFERED = {"decode": {"len_pass"},  # decode passes one new token: the CLI has no --len-pass for it
               "serve": {"trace", "pools"}}  # a trace is a file; the pools a dict (the CLI's --prefill-chips ...)


WEB_BUDGETS = {"requests": 100_000,  # simulated requests per page or API call (the CLI: what the machine holds)
               "max_chips": 256}  # min_chips: chip counts tried per use case (1..256: nine serve answers each)
NUMBERS = {**inputs.FIELDS, **{k: replace(inputs.FIELDS[k], hi=v) for k, v in WEB_BUDGETS.items()}}  # the one
# table (answers/inputs.py), the web's budgets narrower
# serve's disaggregated pools: the answer takes them as one dict (``pools``), the query as flat fields, each pool's
# chips and layout degrees and flags by the pool's prefix (the CLI's --prefill-tp, ...; answers.workloads)
POOL_KINDS = {"chips": "int", "tp": "int", "ep": "int", "pp": "int", "dp": "int", "redundant_experts": "int",
              "attn_dp": "bool", "kv_batch": "bool"}
POOL_FIELDS = {f"{pool}_{k}": kind for pool in ("prefill", "decode") for k, kind in POOL_KINDS.items()}
NUMBERS |= {f"{pool}_{k}": NUMBERS[k] for pool in ("prefill", "decode") for k, kind in POOL_KINDS.items()
            if kind == "int" and f"{pool}_{k}" not in NUMBERS}
KINDS = {  # parameters whose default (None) does not say their kind
    "batch": "int_list", "context": "int_list", "global_batch": "int_list", "hold": "float_list", "chips": "int",
    "tp": "int", "ep": "int", "pp": "int", "dp": "int", "cp": "int", "redundant_experts": "int", "len_pass": "int",
    "top": "int", "weight_dtype": "dtype", "kv_dtype": "dtype", "compute_dtype": "dtype", "grad_dtype": "dtype",
    "optimizer_dtype": "dtype", "activation_dtype": "dtype", "model": "model", "hardware": "hardware",
    "torus": "text", "ids": "text",
    "published": "text", "attn_dp": "bool", "kv_batch": "bool", "base_batch": "int", "max_num_tokens": "int",
    "max_batch": "int", "requests": "int", "isl_dist": "text", "osl_dist": "text", "prefill_chips": "int",
    "decode_chips": "int", "flops_fraction": "float", "use_case": "text", "run": "text",
    "serve_hardware": "hardware", "pretrain_tokens": "float", "turns": "int", "nvme_bytes": "float",
    "kv_tiering": "text",
}
ALWAYS = {"ids": "str_list", "models": "model_list",  # lists whatever the default (numbers: answers/door.LISTS)
          **{n: "int_list" if inputs.FIELDS[n].whole else "float_list" for n in LISTS}}
CHOICES = {"efficiency": ("calibrated", "roofline"), "layout": ("ideal",), "schedule": SCHEDULES,
           "recompute": STRATEGIES, "moe_kernels": MOE_KERNELS, "attention": ATTENTION_CONVENTIONS,
           "draft": DRAFT_KINDS, "engine": ENGINES,
           "method": ("analytic", "simulate"), "arrivals": ("staggered", "together"), "mode": ("agg", "disagg"),
           "facility": ("hyperscale", "colocation", "ai-liquid"),  # catalog/power/facility.toml (a test keeps them equal)
           "objective": tuple(PLAN_OBJECTIVES),
           "emit": EMIT, "protocol": PROTOCOLS,
           "workload": ("steady", "multiturn", "agentic"),  # answers.workloads.serve (serving/sessions.WORKLOADS)
           "routing": ("round-robin", "session-sticky", "prefix-aware")}  # serving/routing.ROUTERS
TRUE, FALSE = ("1", "true", "on", "yes"), ("0", "false", "off", "no")
AUTO = object()  # kv_dtype=auto: leave the answer's default (serve and plan: the engine's KV dtype)
SAFE = re.compile(r"[A-Za-z0-9_.,:+\- ]*")  # no '/', '\\' or '~': a value can never name a file
SET_SAFE = re.compile(r"[A-Za-z0-9_.,+\-= ]*")  # set=field=value,...: what-if hardware (answers/variants.py)
MAX_SEARCH_CHIPS = 1024  # a layout search over 1024 chips takes ~1 s and ~100 MB; pods are searched by budget


@dataclass(frozen=True)
class Option:
    kind: str  # int_list, float_list, int, float, bool, text, dtype, model, hardware, choice
    default: object = None  # the answer's default (the form's placeholder)
    help: str = ""
    required: bool = False


def answer_fn(command: str) -> Callable:
    """The answer function of a command (its public door: answers/door.py), imported when first asked for."""
    if command not in ANSWERS:
        raise FieldError("command", f"{command!r} is not an answer; allowed: {', '.join(ANSWERS)}")
    return getattr(importlib.import_module(answers.module_of(command)), command)


def _kind(name: str, default) -> str:
    if name in CHOICES:
        return "choice"
    if name in ALWAYS:
        return ALWAYS[name]
    if default is None:
        return KINDS.get(name, "number")
    if isinstance(default, (tuple, list)):
        return "float_list" if any(isinstance(x, float) for x in default) else "int_list"
    return {bool: "bool", int: "int", float: "float", str: KINDS.get(name, "text")}.get(type(default), "number")


@lru_cache(maxsize=None)
def options(command: str) -> dict[str, Option]:
    """The parameters ``/api/<command>`` takes: the answer's keywords (``config`` too where it takes a model)."""
    out = {}
    for p in inspect.signature(answer_fn(command)).parameters.values():  # the door's: forwarded keywords included
        if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) or p.name in NOT_OFFERED.get(command, set()):
            continue
        default = None if p.default is p.empty else p.default
        out[p.name] = Option(_kind(p.name, default), default,
                             required=p.default is p.empty)
        if p.name == "model":
            out["config"] = Option("config")
    if "hardware" in out:  # what-if fields on the hardware: set=hbm_bytes_per_s=x2,... (the CLI's --set)
        out["set"] = Option("set")
    if command == "serve":  # the pools dict, field by field
        out |= {name: Option(kind) for name, kind in POOL_FIELDS.items()}
    return out


def set_text(text: str) -> str:
    """A ``set=`` value as typed, refused (naming ``set``) when it is long or holds a character no field=value has."""
    if len(text) > MAX_VALUE_CHARS or not SET_SAFE.fullmatch(text):
        raise FieldError("set", f"field=value pairs (letters, digits, . , + - = only, at most {MAX_VALUE_CHARS} "
                                "characters), e.g. hbm_bytes_per_s=x2,usd_per_chip_hour=3")
    return text


def hardware_with_set(hardware, text: str):
    """``hardware`` with ``set=`` applied (answers.variants.hardware_with), its errors tied to the field ``set``."""
    from tokenomy.answers.variants import hardware_with

    if hardware is None:
        raise FieldError("set", "needs a hardware to change; give hardware too")
    try:
        return hardware_with(hardware, text, door="set=")
    except ValueError as e:
        raise FieldError("set", str(e).removeprefix("set: ")) from None


def _field_error(parse, name: str, value):
    """``parse(name, value)`` with a refusal as the web's FieldError (shown beside the field, 422)."""
    try:
        return parse(name, value)
    except inputs.InputError as e:
        raise FieldError(e.field, e.msg) from None


def _value(name: str, opt: Option, text: str):
    if opt.kind == "config":
        return model_from_token(text)
    if opt.kind == "set":
        return set_text(text)
    if len(text) > MAX_VALUE_CHARS:
        raise FieldError(name, f"longer than {MAX_VALUE_CHARS} characters")
    if not SAFE.fullmatch(text) or text in (".", ".."):
        raise FieldError(name, "may hold letters, digits, spaces and . , : + - only")
    if opt.kind == "model":
        return model_by_name(text)
    if opt.kind == "model_list":
        return model_list(name, text.split(","))
    if opt.kind == "hardware":
        hardware_by_name(text, name)
        return text.lower()
    if opt.kind in ("int_list", "float_list"):
        return Query({name: text}, (name,)).numbers(name, text)
    if opt.kind == "str_list":
        return [x.strip() for x in text.split(",") if x.strip()][:MAX_LIST + 1]
    if opt.kind in ("int", "float", "number"):
        return Query({name: text}, (name,)).number(name, None)
    if opt.kind == "bool":
        if text.lower() not in TRUE + FALSE:
            raise FieldError(name, f"{text!r} is not a yes/no value; use true or false")
        return text.lower() in TRUE
    if opt.kind == "dtype":
        if name == "kv_dtype" and text.strip().lower() == "auto":
            return AUTO  # the answer's own default: the serving engine's KV dtype for the weights
        if name == "weight_dtype" and text.strip().lower() == CHECKPOINT:
            return CHECKPOINT  # the checkpoint's own quantization, by name (answers.resolve.weight_dtype_of)
        return Query({name: text}, (name,)).dtype(name, None)
    if opt.kind == "choice":
        return Query({name: text}, (name,)).choice(name, CHOICES[name])
    return text


def answer_kwargs(command: str, params: Mapping[str, str]) -> dict:
    """The query's non-empty values, each parsed and bounded, as the answer's keyword arguments."""
    opts = options(command)
    q = Query(params, tuple(opts))
    texts = {k: v for k in params if (v := q.text(k, limit=MAX_CONFIG_TOKEN_CHARS)) is not None}
    kw = {k: x for k, v in texts.items() if (x := _value(k, opts[k], v)) is not AUTO}
    if "config" in kw:
        kw["model"] = kw.pop("config")
    if "set" in kw:
        kw["hardware"] = hardware_with_set(kw.get("hardware", opts["hardware"].default), kw.pop("set"))
    if command == "serve" and (pools := {k: kw.pop(k) for k in POOL_FIELDS if k in kw}):
        kw["pools"] = pools
    missing = [k for k, o in opts.items() if o.required and k not in kw]
    if missing:
        raise FieldError(missing[0], "required" + (": a catalog name, or upload a config.json"
                                                   if missing[0] == "model" else ""))
    lists = {k: len(v) for k, v in kw.items() if isinstance(v, list)}
    if len(lists) > 1 and math.prod(lists.values()) > MAX_GRID:
        raise FieldError(next(iter(lists)), f"{' x '.join(map(str, lists.values()))} grid points; at most {MAX_GRID}")
    if command == "plan":
        _search_budget(kw)
    return kw


def _search_budget(kw: dict) -> None:
    if kw.get("chips") is not None:
        if kw["chips"] > MAX_SEARCH_CHIPS:
            raise FieldError("chips", f"the web searches at most {MAX_SEARCH_CHIPS} chips")
    elif kw.get("hardware"):
        hw = kw["hardware"] if isinstance(kw["hardware"], Hardware) else loader.hardware(kw["hardware"])
        if hw.num_chips > MAX_SEARCH_CHIPS:
            raise FieldError("chips", f"{hw.name} has {hw.num_chips} chips; give a budget of at most "
                                      f"{MAX_SEARCH_CHIPS} to search")


def answer(command: str, params: Mapping[str, str]):
    """The command's Result for a query."""
    return answer_fn(command)(**answer_kwargs(command, params))
