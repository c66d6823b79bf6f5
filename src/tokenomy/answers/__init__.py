"""The answer layer: one function per question, each returning a Result (rows(), payload(), to_pandas(), explain()).

The CLI, the web and the HTML report call these and only format what they return. Modules load on first use, so
importing tokenomy.answers costs nothing until a question is asked.
"""

from __future__ import annotations

import importlib

_WHERE = {
    "decode": "passes", "prefill": "passes", "plan": "plan",
    "batch": "economics", "latency": "economics", "context": "economics", "pricing": "economics",
    "speculate": "economics", "cache": "economics", "lecture": "economics",
    "train": "training", "rl": "training", "lifecycle": "training",
    "validate": "validate", "models": "catalog", "model": "catalog", "hardware": "catalog",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'tokenomy.answers' has no attribute {name!r}")
    return getattr(importlib.import_module(f"tokenomy.answers.{_WHERE[name]}"), name)
