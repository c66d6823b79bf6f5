"""tk.sweep over session workloads: concurrency (or session rate) x think time x DRAM x NVMe tier bytes as an
xarray Dataset.

``tk.sweep(model, hardware, workload="agentic", concurrency=[...], think_s=[...], dram_bytes=[...],
nvme_bytes=[...], kv_tiering="lmcache")``: the grid serve's session answer computes in one vectorised pass per DRAM
size (answers/session_serve.py), once per NVMe size, with its numeric columns as variables over the dims
(concurrency | rate, think_s, dram_bytes, nvme_bytes); an axis not given is one point (NaN: the answer's default —
the workload's think time, the host's DRAM share, all of the NVMe). Loop axes of the pass sweep (model, hardware,
dtypes) are single values here. ``out``: the Dataset written as the pass sweep writes (.parquet, .csv long
format; .nc NetCDF-4).
"""

from __future__ import annotations

from tokenomy.answers.session_request import SESSION_KEYS as SERVE_SESSION_KEYS

# serve's session keywords but routing (a session sweep compares no routers); sweeps.SESSION_AXES less workload
SESSION_KEYS = tuple(k for k in SERVE_SESSION_KEYS if k != "routing")
DIMS = ("think_s", "dram_bytes", "nvme_bytes")  # after the load
VARIABLES = ("hit_rate", "ttft_s", "tpot_s", "e2e_s", "requests_per_s", "tokens_per_s_per_chip",
             "usd_per_mtok_input_miss", "usd_per_mtok_input_hit", "usd_per_mtok_output", "hit_rate_for_10x",
             "load_wait_s")


def session_sweep(model, hardware, *, concurrency=None, rate=None, serving_engine="vllm", out=None, **kw):
    """The Dataset (module docstring), or the path it was written to; ``kw``: serve's session keywords and layout
    keywords, ``nvme_bytes`` a list too."""
    from tokenomy.answers import inputs
    from tokenomy.answers.sweep_io import check_out
    from tokenomy.answers.workloads import serve

    if model is None or hardware is None:
        raise ValueError("model: a session sweep takes one model and one hardware")
    path = None if out is None else check_out(out)
    nvme = kw.pop("nvme_bytes", None)
    nvmes = [None] if nvme is None else inputs.numbers("nvme_bytes", nvme)
    load = "concurrency" if concurrency is not None else "rate"
    rows, res = [], None
    for n in nvmes:
        res = serve(model, hardware, concurrency=concurrency, rate=rate, engine=serving_engine, nvme_bytes=n, **kw)
        rows += [{**{k: r.get(k) for k in (load,) + DIMS[:2] + VARIABLES}, "nvme_bytes": n} for r in res.rows()]
    ds = _dataset(rows, (load,) + DIMS)
    ds.attrs.update(title=res.title, workload=str(kw.get("workload")), kv_tiering=str(res.extra.get("kv_tiering")))
    if path is None:
        return ds
    if path.suffix == ".nc":
        ds.to_netcdf(path, engine="h5netcdf")
    else:
        table = ds.to_dataframe().reset_index()
        table.to_parquet(path, index=False) if path.suffix == ".parquet" else table.to_csv(path, index=False)
    return str(path)


def _dataset(rows: list[dict], dims: tuple):
    """The rows as a Dataset over ``dims``, each dim's coordinates in the order first seen (None: NaN, the answer's
    default; a MultiIndex would drop NaN labels)."""
    import numpy as np
    import xarray as xr

    key = lambda v: "default" if v is None else float(v)  # noqa: E731
    coords = {d: list(dict.fromkeys(key(r[d]) for r in rows)) for d in dims}
    shape = tuple(len(coords[d]) for d in dims)
    data = {v: np.full(shape, np.nan) for v in VARIABLES}
    for r in rows:
        at = tuple(coords[d].index(key(r[d])) for d in dims)
        for v in VARIABLES:
            data[v][at] = np.nan if r.get(v) is None else float(r[v])
    axis = {d: [np.nan if c == "default" else c for c in coords[d]] for d in dims}
    return xr.Dataset({v: (dims, a) for v, a in data.items()}, coords=axis)
