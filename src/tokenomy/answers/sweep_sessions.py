"""tk.sweep over session workloads: concurrency (or session rate) x think time x DRAM tier bytes as an xarray Dataset.

``tk.sweep(model, hardware, workload="agentic", concurrency=[...], think_s=[...], dram_bytes=[...],
kv_tiering="lmcache")``: the grid serve's session answer computes in one vectorised pass per DRAM size
(answers/session_serve.py), with its numeric columns as variables over the dims (concurrency | rate, think_s,
dram_bytes). Loop axes of the pass sweep (model, hardware, dtypes) are single values here.
"""

from __future__ import annotations

SESSION_KEYS = ("workload", "turns", "think_s", "kv_tiering", "dram_bytes", "nvme_bytes")
VARIABLES = ("hit_rate", "ttft_s", "tpot_s", "e2e_s", "requests_per_s", "tokens_per_s_per_chip",
             "usd_per_mtok_input_miss", "usd_per_mtok_input_hit", "usd_per_mtok_output", "hit_rate_for_10x",
             "load_wait_s")


def session_sweep(model, hardware, *, concurrency=None, rate=None, serving_engine="vllm", **kw):
    """The Dataset (module docstring); ``kw``: serve's session keywords and layout keywords."""
    import numpy as np
    import pandas as pd

    from tokenomy.answers.workloads import serve

    if model is None or hardware is None:
        raise ValueError("model: a session sweep takes one model and one hardware")
    res = serve(model, hardware, concurrency=concurrency, rate=rate, engine=serving_engine, **kw)
    load = "concurrency" if concurrency is not None else "rate"
    df = pd.DataFrame([{k: r.get(k) for k in (load, "think_s", "dram_bytes") + VARIABLES} for r in res.rows()])
    df["dram_bytes"] = df["dram_bytes"].fillna(np.nan)
    ds = df.set_index([load, "think_s", "dram_bytes"]).astype(float).to_xarray()
    ds.attrs.update(title=res.title, workload=str(kw.get("workload")), kv_tiering=str(res.extra.get("kv_tiering")))
    return ds
