"""tokenomy: the blackboard math of LLM training and serving, checkable against reality.

    import tokenomy as tk
    m, hw = tk.model("deepseek-v3"), tk.hardware("gb200-nvl72")
    r = tk.decode(m, hw, batch=[1, 64, 2048], context=[2048, 32768])    # 3 x 2 points: the lists cross
    r.rows(), r.to_pandas(), r.to_xarray(), r.explain()

Every question (decode, prefill, plan, serve, batch, latency, context, pricing, speculate, cache, train, rl,
lifecycle, lecture) is a function of tokenomy.answers returning a Result, with its command's options as keywords
(dashes -> underscores; context optional, as on the CLI); batch and context lists cross, as on the CLI, whatever
their lengths. to_xarray() puts the rows on named dimensions (model, hardware, plan, batch, context, ...) with units
in attrs. Names load on first use, so ``import tokenomy`` stays cheap; rows and derivations are written on first
use, so a large sweep returns in its compute time.
"""

from __future__ import annotations

import importlib

_NAMES = {
    "model": "tokenomy.catalog.loader", "hardware": "tokenomy.catalog.loader", "CatalogError": "tokenomy.catalog.loader",
    "count_params": "tokenomy.arch.params", "kv_bytes_per_token": "tokenomy.arch.params",
    "kv_bytes_at_context": "tokenomy.arch.params", "weight_bytes": "tokenomy.arch.params",
    "Efficiency": "tokenomy.core.efficiency", "Layout": "tokenomy.core.layout", "Deployment": "tokenomy.core.deployment",
    **{q: "tokenomy.answers" for q in ("decode", "prefill", "plan", "batch", "latency", "context", "pricing",
                                       "speculate", "cache", "train", "rl", "lifecycle", "lecture", "validate", "calibrate",
                                       "context_compare", "serve", "sweep", "what_if")},
}

__all__ = sorted(_NAMES)


def __getattr__(name: str):
    if name not in _NAMES:
        raise AttributeError(f"module 'tokenomy' has no attribute {name!r}")
    return getattr(importlib.import_module(_NAMES[name]), name)
