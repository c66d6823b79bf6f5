"""A parsed config.json as the adapters read it: each field asked for by name, refused with a one-line
``ConfigError`` naming the field when it is missing, malformed or of no real model's size."""

from __future__ import annotations

from typing import Any


class ConfigError(ValueError):
    """A config.json that cannot describe a model: the message names the field and what is allowed."""


class _Cfg:
    """A config dict that names the missing or malformed field when asked for it."""

    def __init__(self, d: dict[str, Any], name: str):
        self.d, self.name = d, name

    def req(self, key: str) -> Any:
        if key not in self.d or self.d[key] is None:
            raise ConfigError(f"config {self.name}: missing field '{key}'")
        return self._check(key, self.d[key])

    def opt(self, key: str, default: Any) -> Any:
        v = self.d.get(key)
        return default if v is None else self._check(key, v)

    MAX_SIZE = 2**40  # no dimension, count or length of a real model comes near it (vocab ~2^18, context ~2^24)
    MAX_LAYERS = 100_000  # layer counts become per-layer op lists; real models have ~10-200 layers
    MAX_WIDTH = 2**20  # hidden/intermediate sizes and head dims: real ones are below 2^17
    WIDTHS = ("hidden_size", "intermediate_size", "head_dim")

    def _check(self, key: str, v: Any) -> Any:
        if isinstance(v, float) and (v != v or abs(v) == float("inf") or abs(v) > self.MAX_SIZE):
            raise ConfigError(f"config {self.name}: field '{key}' must be a finite number of sensible size, got {v!r}")
        if isinstance(v, bool) or not isinstance(v, int):
            return v
        if v < 0:
            raise ConfigError(f"config {self.name}: field '{key}' must be >= 0, got {v}")
        cap = self.MAX_LAYERS if "layers" in key else self.MAX_WIDTH if key.endswith(self.WIDTHS) else self.MAX_SIZE
        if v > cap:
            got = f"{v:,}" if v < 10**15 else f"{v:.2e}"
            raise ConfigError(f"config {self.name}: field '{key}' must be at most {cap:,}, got {got}")
        return v

    def pos(self, key: str, default: Any = None) -> int:
        v = self.req(key) if default is None else self.opt(key, default)
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ConfigError(f"config {self.name}: field '{key}' must be a positive integer, got {v!r}")
        return v
