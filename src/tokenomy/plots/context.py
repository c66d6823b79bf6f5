"""Context-per-architecture figures (answers.context_compare payload) as plain plotly figure dicts. No computation:
the points are the payload's bytes per sequence and its MFU curves, drawn as they are.

    payload rows (kv_<ctx>_bytes at payload["contexts"])   -> kv_vs_context (log-log, one line per model)
    payload["curves"][model] (context, mfu, batch)         -> mfu_vs_context_compare (one line per model)
"""

from __future__ import annotations

from tokenomy.plots.serving import _layout, _line, _marks


def kv_vs_context(payload: dict, title: str = "KV + state bytes per sequence vs context") -> dict:
    """Bytes one sequence holds at each context, per architecture; the lecture's 200k marked."""
    ctx, names = payload["contexts"], ("1k", "8k", "32k", "128k", "256k", "1m")
    data = [_line(ctx, [r[f"kv_{n}_bytes"] for n in names], r["model"]) for r in payload["rows"]]
    return {"data": data, "layout": _layout(title, "context (tokens)", "bytes per sequence",
                                            **_marks({"200k (lecture)": payload.get("claim_context")}))}


def mfu_vs_context_compare(payload: dict, title: str = "Decode MFU vs context at the operating batch") -> dict:
    """MFU at each context at that context's operating batch (hover: the batch), per architecture."""
    data = []
    for model, curve in payload["curves"].items():
        ok = [p for p in curve if p.get("mfu") is not None]
        data.append(_line([p["context"] for p in ok], [p["mfu"] for p in ok], model,
                          text=[f"batch {p['batch']}" for p in ok]))
    lay = _layout(title, "context (tokens)", "MFU", ylog=False, **_marks({"200k (lecture)": payload.get("claim_context")}))
    return {"data": data, "layout": lay}
