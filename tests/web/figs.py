"""Reading figure dictionaries: plotly encodes numpy arrays as {"dtype", "bdata"[, "shape"]}."""

from __future__ import annotations

import base64

import numpy as np


def arr(v) -> np.ndarray:
    if isinstance(v, dict) and "bdata" in v:
        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        shape = v.get("shape")
        if shape:
            a = a.reshape([int(x) for x in str(shape).split(",")])
        return a
    return np.asarray(v)


def trace(fig: dict, name: str) -> dict:
    hits = [t for t in fig["data"] if t.get("name") == name]
    assert len(hits) == 1, f"trace {name!r}: {[t.get('name') for t in fig['data']]}"
    return hits[0]
