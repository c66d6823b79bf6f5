"""Request parsing for the web: every input is a query parameter, checked, bounded, and named when wrong.

A query for ``/api/<command>`` (or a page over it) becomes the keyword arguments of the answer function
(tokenomy.answers): the parameters offered are the answer's own keywords (its signature), each parsed by kind —
a list of ints ('1,8,64' or '1..4096'; at most MAX_GRID points a request), a list of floats, an int, a float (finite,
bounded per name), a yes/no flag, or text (letters, digits and . , : + - only). Nothing here touches the file
system: models and hardware are looked up by catalog name only, and an uploaded config.json travels inside the
URL as ``config=<base64url(zlib(json))>``, parsed (never executed): query.py (a query, its values and errors)
and config_token.py (that token) beside this, re-exported here.
"""

from __future__ import annotations

import importlib
import inspect
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Mapping

from tokenomy import answers
from tokenomy.answers import input_names, inputs
from tokenomy.answers.door import LISTS, takes_list
from tokenomy.answers.inputs import MAX_BATCH, MAX_CHIPS, MAX_CONTEXT, readable  # noqa: F401  (the pages' bounds)
from tokenomy.catalog import loader
from tokenomy.specs import Hardware
from tokenomy.units import CHECKPOINT
from tokenomy.web.config_token import (  # noqa: F401  (re-exported: the pages write P.<name>)
    encode_config, model_from, model_from_token, parse_config_bytes)
from tokenomy.web.query import (  # noqa: F401
    MAX_CONFIG_BYTES, MAX_CONFIG_TOKEN_CHARS, MAX_GRID, MAX_LIST, MAX_MODELS, MAX_OVERHEAD_S, MAX_VALUE_CHARS, NUMBERS,
    POOL_FIELDS, POOL_KINDS, WEB_BUDGETS, FieldError, budget, Query, _field_error, field_of, hardware_by_name, hardware_names,
    message_of, model_by_name, model_list, refuse_emptied)

# ---- a query -> an answer's keyword arguments ------------------------------------------------------------

ANSWERS = answers.SERVED  # the questions /api/<command> answers (the answer layer's own table)
NOT_OFFERED = {"decode": {"len_pass"},  # decode passes one new token: the CLI has no --len-pass for it
               "serve": {"trace", "pools"}}  # a trace is a file; the pools a dict (the CLI's --prefill-chips ...)
KINDS = {  # parameters whose default (None) does not say their kind (numbers: their FIELDS row and the door's lists)
    "weight_dtype": "dtype", "kv_dtype": "dtype", "compute_dtype": "dtype", "grad_dtype": "dtype",
    "optimizer_dtype": "dtype", "activation_dtype": "dtype", "model": "model", "hardware": "hardware",
    "serve_hardware": "hardware", "torus": "text", "ids": "text", "published": "text", "attn_dp": "bool",
    "kv_batch": "bool", "isl_dist": "text", "osl_dist": "text", "use_case": "text", "run": "text", "kv_tiering": "text",
}
ALWAYS = {"ids": "str_list", "models": "model_list",  # lists whatever the default (numbers: answers/door.LISTS)
          **{n: "int_list" if inputs.FIELDS[n].whole else "float_list" for n in LISTS}}
CHOICES = input_names.choices()  # the one table of names (answers/input_names.py)
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
    if name in inputs.FIELDS:  # a number: a list exactly where the answer's door reads one (answers/door.takes_list)
        whole = inputs.FIELDS[name].whole
        return ("int_list" if whole else "float_list") if takes_list(name, default) else ("int" if whole else "float")
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
    lists = {k: len(v) for k, v in kw.items() if isinstance(v, list) and opts.get(k, Option("")).kind != "model_list"}
    if lists:
        budget(next(iter(lists)), list(lists.values()))
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
