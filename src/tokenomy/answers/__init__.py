"""The answer layer: one function per question, each returning a Result (rows(), payload(), to_pandas(),
to_xarray(), explain()).

The CLI, the web and the HTML report call these and only format what they return. Modules load on first use, so
importing tokenomy.answers costs nothing until a question is asked.
"""

from __future__ import annotations

import importlib

_WHERE = {
    "decode": "passes", "prefill": "passes", "plan": "layouts",
    "batch": "economics", "latency": "economics", "context": "economics", "pricing": "economics",
    "context_compare": "architectures", "serve": "workloads",
    "speculate": "speculation", "cache": "prefix_cache", "lecture": "economics",
    "train": "training", "rl": "training", "lifecycle": "life",
    "validate": "fidelity", "calibrate": "fidelity", "what_if": "hardware_sweep", "models": "catalog",
    "model": "catalog", "hardware": "catalog", "sweep": "sweeps", "min_chips": "sizing",
}

__all__ = sorted(_WHERE)
SERVED = tuple(q for q in _WHERE if q not in ("validate", "calibrate", "models", "model", "hardware", "sweep",
                                              "what_if"))  # the web's /api/<q>; reading the user's files is no web door


def module_of(name: str) -> str:
    """The module (under tokenomy.answers) that answers question ``name``."""
    return f"tokenomy.answers.{_WHERE[name]}"


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'tokenomy.answers' has no attribute {name!r}")
    return getattr(importlib.import_module(f"tokenomy.answers.{_WHERE[name]}"), name)
