"""Reversible (Feistel-coupled) networks whose backward pass rebuilds activations.

Optional ``[torch]`` extra. Names are loaded lazily so that the torch-free parts
(:mod:`tokenomy.reversible.memory_model`) import without PyTorch installed.

    y1 = x1 + F(x2),  y2 = x2 + G(y1);   x2 = y2 - G(y1),  x1 = y1 - F(x2)

(Gomez et al. 2017; lecture section 2.15.)
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "AdditiveCoupling": "coupling",
    "reversible_forward": "engine",
    "ReversibleSequence": "stack",
    "StandardTwin": "stack",
    "CausalSelfAttention": "transformer",
    "MLP": "transformer",
    "ReversibleTransformerBlock": "transformer",
    "RevGPT": "gpt",
    "RevGPTConfig": "gpt",
    "activation_bytes_per_layer": "memory_model",
    "activation_bytes_total": "memory_model",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        module = importlib.import_module(f"tokenomy.reversible.{_EXPORTS[name]}")
        return getattr(module, name)
    raise AttributeError(f"module 'tokenomy.reversible' has no attribute {name!r}")
