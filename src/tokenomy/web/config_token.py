"""An uploaded config.json carried in the URL: ``config=<base64url(zlib(json))>``, bounded before and after
decompression, parsed (never executed) into a model; a page's model from that token or a catalog name."""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from functools import lru_cache

from tokenomy.arch.model import ModelArch
from tokenomy.catalog import loader
from tokenomy.web.query import MAX_CONFIG_BYTES, MAX_CONFIG_TOKEN_CHARS, FieldError, Query, model_by_name


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

