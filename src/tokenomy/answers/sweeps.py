"""sweep: the one engine over named axes -> an xarray.Dataset, or a Parquet/CSV/NetCDF file written chunk by chunk.

    tk.sweep(model=["llama-3.1-70b", "qwen3-32b"], hardware="hgx-h100-8", tp=[1, 2, 4, 8], batch=[1, 8, 64],
             context=[2048, 32768])                                   # decode on the degrees given
    tk.sweep(model="kimi-k2-instruct", hardware="gb200-nvl72", chips=1152, batch=[1, 64, 1024])   # plan per point
    tk.sweep(model="llama-3.1-8b", hardware="h100-sxm", concurrency=[1, 16, 256], isl=[1024, 8192], osl=1024)
Axes (sweep_axes.py): model, hardware, weight_dtype, kv_dtype, efficiency, kind (decode | prefill), chips, tp, ep,
pp, dp, batch, context, len_pass; serving: concurrency or rate, isl, osl. A list is a dimension, a scalar a
coordinate. No degree given: each point on its best layout over ``chips`` (default: the system's), the degrees in
``plan_tp``... The numbers are the ones ``tk.decode`` / ``tk.prefill`` / ``tk.serve`` give for that point alone
(sweep_eval.py). Invalid layouts and points that do not fit are NaN with a ``reason`` code (attrs: ``reasons``).
The grid is evaluated in chunks of at most ``chunk_points`` points (sweep_axes.blocks); ``out=`` streams them to a
file (sweep_io.py) and returns its path; ``client=`` (a dask.distributed Client) evaluates the same chunks on a
cluster, a bounded window of them in flight, and gives the same numbers bit for bit; with a .parquet ``out`` each
worker writes its own chunks as parts of a folder (the client receives tallies, never the arrays). ``variables=`` keeps only the
named variables (and ``reason``): less memory, smaller files.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from pathlib import Path
from typing import Mapping

import numpy as np

from tokenomy.answers import inputs
from tokenomy.answers.door import public_signature
from tokenomy.answers.resolve import hardware_of, model_of
from tokenomy.answers.workloads import engine_profile
from tokenomy.answers.sweep_axes import CATEGORICAL, DEGREES, Grid, blocks, grid_of, labels
from tokenomy.answers.sweep_eval import REASONS, Spec, evaluate_block
from tokenomy.answers.sweep_io import check_out, check_parts, part_path, writer
from tokenomy.answers.sweep_sessions import SESSION_KEYS
from tokenomy.answers.sweep_tally import Tally
from tokenomy.core.engine import BOUNDS

CHUNK_POINTS = 1 << 18
MAX_IN_MEMORY = 1 << 25  # points held as a Dataset; beyond: out=
IN_FLIGHT_PER_WORKER = 2
HELD_PER_WORKER = 4  # chunks submitted and not yet yielded, per worker: what the client may hold out of order


# what a sweep takes beside its axes, with the defaults
SETTINGS = {"layout": None, "chunk_points": CHUNK_POINTS, "usd_per_chip_hour": None, "engine": "vllm",
            "max_num_tokens": None, "max_batch": None, "cache_hit": 0.0, "arrivals": "staggered", "variables": None}


def spec_of(axes: dict, settings: Mapping | None = None) -> Spec:
    """Checked axes and settings (SETTINGS; absent ones their default) -> the Spec every chunk is evaluated from."""
    unknown = sorted(set(settings or {}) - set(SETTINGS))
    if unknown:
        raise TypeError(f"spec_of: unknown setting {unknown[0]!r}; allowed: {', '.join(SETTINGS)}")
    s = {**SETTINGS, **(settings or {})}
    layout, chunk_points, engine, cache_hit, arrivals = (s[k] for k in ("layout", "chunk_points", "engine",
                                                                        "cache_hit", "arrivals"))
    axes = {k: v for k, v in axes.items() if v is not None}
    serving = any(k in axes for k in ("concurrency", "rate"))
    if not serving:
        axes.setdefault("kind", "decode")
        axes.setdefault("batch", 1)
        axes.setdefault("context", 2048)
    else:
        axes.setdefault("isl", 1024)
        axes.setdefault("osl", 1024)
    axes.setdefault("kv_dtype", "auto" if serving else "bf16")  # serving: the engine's KV dtype, as tk.serve
    axes.setdefault("efficiency", "calibrated")
    grid = grid_of(axes)
    for name, resolve in (("model", model_of), ("hardware", hardware_of)):
        for v in grid.axis(name):
            try:
                resolve(v)
            except ValueError as e:
                msg = str(e).splitlines()[0]
                raise ValueError(msg if msg.startswith(name + ":") else f"{name}: {msg}") from None
    if serving:
        engine_profile(engine, 1, s["max_num_tokens"], s["max_batch"])
    degrees = any(d in grid.names for d in DEGREES)
    if layout not in (None, "plan"):
        raise ValueError(f"layout: {layout!r}; allowed: 'plan' (each point on its best layout) or give tp, ep, pp, dp")
    if layout == "plan" and degrees:
        raise ValueError("layout: 'plan' and layout degrees (tp, ep, pp, dp) exclude each other; give one")
    if degrees and "chips" in grid.names:
        raise ValueError("chips: the layout degrees set the chips (tp*ep*pp*dp); give chips only to plan")
    if not (isinstance(chunk_points, (int, np.integer)) and chunk_points > 0):
        raise ValueError(f"chunk_points: must be a positive integer, got {chunk_points!r}")
    if arrivals not in ("staggered", "together"):
        raise ValueError(f"arrivals: {arrivals!r}; allowed: staggered, together")
    cache_hit = inputs.number("cache_hit", cache_hit)
    spec = Spec(grid, not degrees, int(chunk_points), s["usd_per_chip_hour"], engine, s["max_num_tokens"],
                s["max_batch"], float(cache_hit), arrivals)
    variables = s["variables"]
    if variables is None:
        return spec
    keep = (variables,) if isinstance(variables, str) else tuple(variables)
    bad = [v for v in keep if v not in spec.all_variables()]
    if bad or not keep:
        raise ValueError(f"variables: {bad[0] if bad else 'none given'!r}; allowed: {', '.join(spec.all_variables())}")
    return replace(spec, keep=keep)


def chunks(spec: Spec) -> list[tuple[slice, ...]]:
    """The sweep's chunks, in order (the same for every evaluator)."""
    return blocks(spec.grid.shape, spec.budget)


def evaluated(spec: Spec, client=None):
    """(block, values) for every chunk, in order: here, or on ``client``'s cluster with a bounded window in flight."""
    if client is None:
        for b in chunks(spec):
            yield b, evaluate_block(spec, b)
        return
    yield from _on_cluster(client, chunks(spec), lambda spec_f, b, k: (evaluate_block, spec_f, b), spec)


def _on_cluster(client, todo, task, spec):
    """(block, result) for every chunk, in order, ``task(spec_future, block, index)`` = (fn, *args) submitted to the
    cluster with at most IN_FLIGHT_PER_WORKER per worker in flight. A chunk is submitted as soon as any in flight
    finishes, not only the oldest: a worker that finishes early gets its next chunk at once instead of waiting behind
    a slower one's (the results are still yielded in order, at most HELD_PER_WORKER per worker held on the client)."""
    from distributed import wait

    workers = max(1, len(client.scheduler_info().get("workers", {})))
    window, held = IN_FLIGHT_PER_WORKER * workers, HELD_PER_WORKER * workers
    spec_f = client.scatter(spec, broadcast=True)
    pending: deque = deque()  # (block, future) in chunk order, not yet yielded
    it = iter(enumerate(todo))
    while True:
        in_flight = [f for _, f in pending if not f.done()]
        while len(in_flight) < window and len(pending) < held and (nxt := next(it, None)) is not None:
            k, b = nxt
            pending.append((b, client.submit(*task(spec_f, b, k), pure=False)))
            in_flight.append(pending[-1][1])
        if not pending:
            return
        if not pending[0][1].done() and len(pending) < held and len(in_flight) == window:
            wait(in_flight, return_when="FIRST_COMPLETED")  # a slot frees: refill before the oldest is done
            continue
        b, fut = pending.popleft()
        yield b, fut.result()


def write_part(spec: Spec, block: tuple[slice, ...], index: int, folder: Path, fronts: bool) -> Tally:
    """On a worker: evaluate one chunk, write it as its own Parquet part, return only its tally."""
    values = evaluate_block(spec, block)
    w = writer(part_path(folder, index), spec.grid, spec.variables(), _meta(spec))
    try:
        w.write(block, values)
    finally:
        w.close()
    t = Tally(spec.grid, fronts)
    t.add(block, values)
    return t


def _parts(spec: Spec, folder: Path, client, tally: Tally | None) -> Path:
    """The workers write the sweep as a folder of parts (sweep_io.check_parts); the client keeps the tallies."""
    folder.mkdir(exist_ok=True)
    fronts = tally is not None and tally.fronts is not None
    for _, t in _on_cluster(client, chunks(spec), lambda spec_f, b, k: (write_part, spec_f, b, k, folder, fronts),
                            spec):
        if tally is not None:
            tally.merge(t)
    return folder


def _meta(spec: Spec) -> dict:
    return {"reasons": list(REASONS), "bounds": list(BOUNDS), "layout": "plan" if spec.plan else "degrees",
            "efficiency_default": "calibrated", "engine": spec.serving_engine if spec.grid.serving else "",
            "kind": "serve" if spec.grid.serving else "pass"}


def _dataset(spec: Spec, values: dict):
    import xarray as xr

    g, units = spec.grid, spec.variables()
    coords = {n: labels(g, n) for n in g.names}
    data = {}
    for k, v in values.items():
        attrs = {"units": units[k]} if units.get(k) else {}
        if k == "reason":
            attrs.update(flag_values=list(range(len(REASONS))), flag_meanings=list(REASONS))
        if k == "bound":
            attrs.update(flag_values=list(range(len(BOUNDS))), flag_meanings=list(BOUNDS), missing=-1)
        data[k] = (g.names, v, attrs)
    meta = _meta(spec)
    ds = xr.Dataset(data, coords=coords, attrs={k: v for k, v in meta.items() if k not in ("reasons", "bounds")})
    ds.attrs["reasons"] = "; ".join(f"{i}: {r or 'valid and fits'}" for i, r in enumerate(REASONS))
    ds.attrs["bounds"] = "; ".join(f"{i}: {b}" for i, b in enumerate(BOUNDS))
    return ds.squeeze([n for n in g.names if n in g.scalar])


def run(spec: Spec, *, out=None, client=None, tally: Tally | None = None):
    """Evaluate every chunk; a Dataset, or (``out``) the path of the file written chunk by chunk — with ``client``
    and a .parquet ``out``, the folder of parts its workers wrote (the client writes no data). ``tally``
    (sweep_tally.Tally) counts every chunk's points by reason and keeps its fronts, wherever it was evaluated."""
    see = tally.add if tally is not None else (lambda b, v: None)
    if client is not None and out is not None and Path(out).suffix == ".parquet":
        return _parts(spec, check_parts(out), client, tally)
    if out is not None:
        path = check_out(out)
        w = writer(path, spec.grid, spec.variables(), _meta(spec))
        try:
            for b, values in evaluated(spec, client):
                see(b, values)
                w.write(b, values)
        finally:
            w.close()
        return path
    if spec.grid.size > MAX_IN_MEMORY:
        raise ValueError(f"out: a sweep of {spec.grid.size:,} points is over the {MAX_IN_MEMORY:,} held in memory; "
                         f"give out= a .parquet, .csv or .nc file to stream it")
    full: dict = {}
    if client is None:  # each chunk written straight into the whole grid's arrays
        for b in chunks(spec):
            see(b, evaluate_block(spec, b, into=full))
        keep = spec.variables()
        return _dataset(spec, {k: v for k, v in full.items() if k in keep})
    for b, values in evaluated(spec, client):
        see(b, values)
        for k, v in values.items():
            if k not in full:
                full[k] = np.empty(spec.grid.shape, dtype=v.dtype)
            full[k][b] = v
    return _dataset(spec, full)


# the axes a sweep names (sweep_axes.py), each not swept unless given; a keyword that is neither an axis nor a
# setting (SETTINGS) is refused naming it (spec_of)
AXES = ("kind", "weight_dtype", "kv_dtype", "efficiency", "chips", "tp", "ep", "pp", "dp", "batch", "context",
        "len_pass", "concurrency", "rate", "isl", "osl")


# the axes and settings a session sweep reads beside its own keywords: the load, the layout and the serving engine
SESSION_USES = ("concurrency", "rate", "chips", "tp", "ep", "pp", "dp", "engine")
# what a session sweep varies, as its refusal lists it (the CLI shows these names as its flags: cli/sweep.py)
SESSION_SWEEP_AXES = "concurrency or rate, think_s, dram_bytes, nvme_bytes (and chips, tp, ep, pp, dp, engine)"
# a session sweep's own keywords (answers/sweep_sessions.py SESSION_KEYS less workload), in tk.sweep's signature
SESSION_AXES = tuple(k for k in SESSION_KEYS if k != "workload")


def sweep(model=None, hardware=None, *, out=None, client=None, **kw):
    """The sweep (module docstring): an xarray.Dataset over the named axes (AXES) under the settings (SETTINGS),
    or the path of ``out``. A keyword that is no axis or setting is refused naming it. ``workload`` multiturn |
    agentic: a session sweep over concurrency (or rate), ``think_s``, ``dram_bytes`` and ``nvme_bytes``
    (answers/sweep_sessions.py; ``turns``, ``kv_tiering`` one value each)."""
    if kw.get("workload") not in (None, "steady"):
        if client is not None:  # it would be dropped unread
            raise ValueError(f"client: a session sweep (workload={kw['workload']!r}) runs in this process, not on "
                             "a dask cluster")
        return _session_sweep(model, hardware, {**kw, "out": out})
    kw.pop("workload", None)
    given = next((k for k in SESSION_AXES if kw.get(k) is not None), None)
    if given is not None:
        raise ValueError(f"{given}: an axis of a session sweep; give workload='multiturn' or 'agentic' with it")
    settings = {k: kw.pop(k) for k in SETTINGS if k in kw}
    return run(spec_of({**dict.fromkeys(AXES), **kw, "model": model, "hardware": hardware}, settings), out=out,
               client=client)


def _session_sweep(model, hardware, kw: dict):
    """tk.sweep(workload=...): the session sweep on the layout degrees given, the serving engine ``engine``."""
    from tokenomy.answers.sweep_sessions import session_sweep

    kw = dict(kw)
    extra = {k: kw.pop(k) for k in (*SESSION_KEYS, "out") if kw.get(k) is not None}
    named = {k: kw.pop(k) for k in (*AXES, *SETTINGS) if k in kw}  # the load, the layout and the engine used
    unused = next((k for k, v in named.items() if v is not None and k not in SESSION_USES), None)
    if unused is not None:  # a pass axis (batch, context, ...) or setting a session sweep would drop unread
        raise ValueError(f"{unused}: not an axis of a session sweep (workload={extra.get('workload')!r}); its "
                         f"axes: {SESSION_SWEEP_AXES}")
    layout_kw = {k: named[k] for k in ("chips", "tp", "ep", "pp", "dp") if named.get(k) is not None}
    return session_sweep(model, hardware, concurrency=named.get("concurrency"), rate=named.get("rate"),
                         serving_engine=named.get("engine", SETTINGS["engine"]), **extra, **layout_kw, **kw)


# help(tk.sweep): model, hardware, out and client, then the axes, the session keys and the settings by name (the doors' rule)
sweep.__signature__ = public_signature(sweep, {**dict.fromkeys(AXES + ("workload",) + SESSION_AXES), **SETTINGS})


__all__ = ["sweep", "spec_of", "run", "chunks", "CATEGORICAL", "Grid"]
