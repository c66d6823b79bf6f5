"""Request parsing for the web: every input is a query parameter, checked, bounded, and named when wrong.

Nothing here touches the file system: models and hardware are looked up by catalog name only, and an
uploaded config.json travels inside the URL as ``config=<base64url(zlib(json))>``, parsed (never executed).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping

from tokenomy.arch.model import ModelArch
from tokenomy.catalog import loader
from tokenomy.cli.app import int_list
from tokenomy.specs import Hardware
from tokenomy.units import DTYPE_BYTES

MAX_VALUE_CHARS = 200  # any one query value, except the config token
MAX_CONFIG_TOKEN_CHARS = 24_000  # fits comfortably in a URL (uvicorn/h11 accept ~64 kB of request line)
MAX_CONFIG_BYTES = 64_000  # an uploaded config.json; real ones are 1-5 kB
MAX_LIST = 64  # values in a batch or context list
MAX_GRID = 1024  # batch x context points in one request
MAX_BATCH = 2**20
MAX_CONTEXT = 2**24
MAX_CHIPS = 2**20
MAX_OVERHEAD_S = 10.0


class FieldError(ValueError):
    """Bad input, tied to the query field that carries it; answered with 422 and shown inline."""

    def __init__(self, field: str, msg: str):
        super().__init__(f"{field}: {msg}")
        self.field, self.msg = field, msg


def field_of(e: ValueError, fields: tuple[str, ...]) -> str:
    """The field a library ValueError is about (its message starts with the name, CLI-style), else 'input'."""
    if isinstance(e, FieldError):
        return e.field
    head = re.split(r"[\s:]", str(e).lstrip("-"), maxsplit=1)[0].replace("-", "_")
    return head if head in fields else "input"


class Query:
    """The query string of one request; refuses parameters the endpoint does not know (typos are errors)."""

    def __init__(self, params: Mapping[str, str], allowed: tuple[str, ...]):
        unknown = sorted(set(params) - set(allowed))
        if unknown:
            raise FieldError(unknown[0], f"unknown parameter; allowed: {', '.join(allowed)}")
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

    def number(self, name: str, default: float | None, lo: float, hi: float, *, lo_open: bool = False) -> float | None:
        v = self.text(name)
        if v is None:
            return default
        try:
            x = float(v)
        except ValueError:
            raise FieldError(name, f"{v!r} is not a number") from None
        if not (lo < x if lo_open else lo <= x) or not x <= hi:
            raise FieldError(name, f"{v} is out of range {'(' if lo_open else '['}{lo:g}, {hi:g}]")
        return x

    def integer(self, name: str, default: int | None, lo: int, hi: int) -> int | None:
        x = self.number(name, default, lo, hi)
        if x is None:
            return None
        if x != int(x):
            raise FieldError(name, f"{self.p[name]} is not an integer")
        return int(x)

    def int_list(self, name: str, default: str, hi: int) -> list[int]:
        """CLI syntax ('1,8,64' or '1..4096' powers of two), bounded in count and value."""
        text = self.text(name, default)
        try:
            values = int_list(name, text)
        except ValueError as e:
            raise FieldError(name, str(e).split(": ", 1)[-1]) from None
        if len(values) > MAX_LIST:
            raise FieldError(name, f"{len(values)} values; at most {MAX_LIST}")
        if max(values) > hi:
            raise FieldError(name, f"{max(values)} exceeds the bound {hi}")
        return values

    def dtype(self, name: str, default: str | None) -> str | None:
        return self.choice(name, tuple(DTYPE_BYTES), default)


def model_by_name(name: str) -> ModelArch:
    """A catalog model by its short name only (never a path)."""
    if name.lower() not in loader.model_names():
        raise FieldError("model", f"unknown model {name!r}; allowed: {', '.join(loader.model_names())}")
    return loader.model(name.lower())


def hardware_names() -> list[str]:
    return loader.chip_names() + loader.system_names()


def hardware_by_name(name: str) -> Hardware:
    if name.lower() not in hardware_names():
        raise FieldError("hardware", f"unknown hardware {name!r}; allowed: {', '.join(hardware_names())}")
    return loader.hardware(name.lower())


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


@dataclass(frozen=True)
class PassOptions:
    """The knobs ``tokenomy decode|prefill`` shares with the Serve page."""

    chips: int | None
    weight_dtype: str | None
    kv_dtype: str
    flops_fraction: float
    hbm_fraction: float
    overhead_s: float


def pass_options(q: Query) -> PassOptions:
    return PassOptions(
        chips=q.integer("chips", None, 1, MAX_CHIPS), weight_dtype=q.dtype("weight_dtype", None),
        kv_dtype=q.dtype("kv_dtype", "bf16"),
        flops_fraction=q.number("flops_fraction", 1.0, 0.0, 1.0, lo_open=True),
        hbm_fraction=q.number("hbm_fraction", 1.0, 0.0, 1.0, lo_open=True),
        overhead_s=q.number("overhead_s", 0.0, 0.0, MAX_OVERHEAD_S))


PASS_FIELDS = ("model", "config", "hardware", "chips", "batch", "context", "len_pass", "weight_dtype", "kv_dtype",
               "flops_fraction", "hbm_fraction", "overhead_s")


def pass_grid(q: Query) -> tuple[list[int], list[int], int | None]:
    """--batch and --context lists (bounded, grid too) and --len-pass, as the CLI reads them."""
    batch = q.int_list("batch", "1,8,64", MAX_BATCH)
    context = q.int_list("context", "2048", MAX_CONTEXT)
    if len(batch) * len(context) > MAX_GRID:
        raise FieldError("batch", f"{len(batch)} x {len(context)} grid points; at most {MAX_GRID}")
    return batch, context, q.integer("len_pass", None, 1, MAX_CONTEXT)


KNOWN_FIELDS = PASS_FIELDS + ("kind", "usd_per_chip_hour", "tp", "ep", "pp", "dp", "hop_latency")  # naming fields
