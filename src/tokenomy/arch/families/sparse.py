"""Adapters: see arch/families/__init__.py. Each adapter states its formulas and the config fields it reads."""

from __future__ import annotations

from typing import Callable

ADAPTERS: dict[str, Callable] = {}
