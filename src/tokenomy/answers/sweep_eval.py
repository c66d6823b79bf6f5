"""One chunk of a sweep through the one engine: a block of the grid in, one array per variable out.

Passes (decode, prefill): per value of the loop axes one ``engine.work`` + ``engine.times`` call over the chunk's
array axes broadcast (layout degrees, batch, context, len_pass), under the named efficiency set (the chip's
calibrated set by default), exactly as ``tk.decode`` / ``tk.prefill`` run one point. Decode runs one new token;
prefill runs ``len_pass`` new tokens (default: the whole context). ``plan`` (no degrees given): every valid layout
over ``chips`` is evaluated against every point of the chunk and each point keeps the one objectives.FASTEST_STEP
chooses for it alone (as decode would for that point); its degrees are returned beside the numbers.
Serving (concurrency or rate): per deployment ``serving.steady.steady`` over (load, ISL, OSL) points, as
``tk.serve`` runs them; ``plan`` takes ``tk.serve``'s layout for each point.
Points that are invalid or do not fit are NaN, with a code in ``reason`` (engine.REASONS, then SWEEP_REASONS).
sweep_spec.py holds the variables, reasons and Spec (re-exported here), sweep_serve.py the serving chunk.
"""

from __future__ import annotations

import numpy as np

from tokenomy.answers import error_bars, objectives
from tokenomy.answers.energy_cols import pass_energy, power_of
from tokenomy.answers.layout_search import step_columns
from tokenomy.answers.objectives import FASTEST_STEP
from tokenomy.answers.resolve import beyond_window
from tokenomy.answers.sweep_axes import DEGREES
from tokenomy.answers.sweep_serve import _serve_group, _serve_layout  # noqa: F401
from tokenomy.answers.sweep_spec import (  # noqa: F401  (re-exported: callers write sweep_eval.<name>)
    CODES, LEN_PASS_REASON, NO_KV_REASON, NO_LAYOUT_REASON, PASS_BANDS, PASS_ENERGY, PASS_VARS, PLAN_VARS, REASONS,
    SERVE_BANDS, SERVE_ENERGY, SERVE_VARS, SWEEP_REASONS, WINDOW_REASON, Spec, _marked, base)
from tokenomy.core import engine
from tokenomy.core.deployment import Deployment, usd_per_mtok
from tokenomy.core.layout import Layout
from tokenomy.parallel.search import candidate_layouts


def _run(dep: Deployment, lay: Layout, B, C, S) -> engine.PassTerms:
    w = engine.work(dep.shape, dep.topo, lay, dep.precision, engine.Pass(B, C, S))
    return engine.times(w, dep.topo, dep.peaks, dep.eff)


def _pass_values(spec: Spec, dep: Deployment, r: engine.PassTerms) -> dict:
    """The pass variables the spec computes (Spec.computes): each read from the engine's terms only when asked for
    (PassTerms forms its rates, bound and busy shares on first read)."""
    vals = {k: getattr(r, k) for k in PASS_VARS if k != "usd_per_mtok" and k not in PASS_ENERGY and spec.computes(k)}
    tokens = r.batch * r.len_pass
    if spec.computes("usd_per_mtok"):
        vals["usd_per_mtok"] = usd_per_mtok(r.step_s, tokens, r.chips, dep.price)
    if any(spec.computes(k) for k in PASS_ENERGY):
        e = pass_energy(power_of(dep.hardware), r.busy_shares(), r.step_s, r.chips, tokens)
        vals.update({k: e[k] for k in PASS_ENERGY if spec.computes(k)})
    if spec.computes("bound"):
        vals["bound"] = r.bound
    vals["reason"] = r.reason
    return vals


def _pass_explicit(spec, dep, arrays, B, C, S):
    lay = Layout(*(arrays.get(d, 1.0) for d in DEGREES))
    return _pass_values(spec, dep, _run(dep, lay, B, C, S))


_CANDIDATES: dict = {}


def _candidates(dep: Deployment, chips: int) -> Layout:
    key = (dep.model.name, dep.hardware.name, chips)
    if key not in _CANDIDATES:
        _CANDIDATES[key] = candidate_layouts(dep.shape, chips, dep.topo.domain_size, exact=True)
    return _CANDIDATES[key]


def _pass_plan(spec, dep, chips, B, C, S, shape):
    """Each point on the layout objectives.FASTEST_STEP picks for it alone (decode's rule at one point)."""
    P = _candidates(dep, chips)
    n_p = int(np.size(P.tp))
    Bf, Cf, Sf = (np.ravel(np.broadcast_to(x, shape)) for x in (B, C, S))
    out = {k: np.empty(Bf.size) for k in (*PASS_VARS, "bound", "reason", *PLAN_VARS) if spec.computes(k)
           or k in PLAN_VARS}
    if n_p == 0:
        for k in out:
            out[k][:] = np.nan
        out["reason"][:] = NO_LAYOUT_REASON
        return {k: v.reshape(shape) for k, v in out.items()}
    col = lambda x: np.asarray(x)[:, None]  # noqa: E731
    lay = Layout(col(P.tp), col(P.ep), col(P.pp), col(P.dp), col(P.attn_dp), col(P.kv_batch),
                 redundant_experts=col(P.redundant_experts))
    degrees = {"plan_tp": P.tp, "plan_ep": P.ep, "plan_pp": P.pp, "plan_dp": P.dp,
               "plan_redundant_experts": P.redundant_experts, "plan_attn_dp": P.attn_dp, "plan_kv_batch": P.kv_batch}
    step = max(1, spec.budget // n_p)
    for lo in range(0, Bf.size, step):
        sl = slice(lo, min(lo + step, Bf.size))
        r = _run(dep, lay, Bf[None, sl], Cf[None, sl], Sf[None, sl])
        best = objectives.best_each(FASTEST_STEP, step_columns(r, each_point=True))  # each point alone
        full = (n_p, sl.stop - sl.start)
        for k, v in _pass_values(spec, dep, r).items():
            out[k][sl] = np.take_along_axis(np.broadcast_to(v, full), best[None, :], 0)[0]
        for k, v in degrees.items():
            out[k][sl] = np.asarray(v, float)[best]
    return {k: v.reshape(shape) for k, v in out.items()}


def _pass_group(spec: Spec, point: dict, arrays: dict, shape) -> dict:
    dep = base(spec, point)
    B, C = arrays.get("batch", 1.0), arrays.get("context", 2048.0)
    S = np.ones(()) if point.get("kind", "decode") == "decode" else arrays.get("len_pass", C)
    if spec.plan:
        chips = int(point.get("chips") or dep.hardware.num_chips)
        vals = _pass_plan(spec, dep, chips, B, C, S, shape)
    else:
        vals = _pass_explicit(spec, dep, arrays, B, C, S)
    kind = point.get("kind", "decode")
    if any(spec.computes(k) for k in PASS_BANDS):
        reg = error_bars.regime_of(dep, None, error_bars.DECODE if kind == "decode" else error_bars.PREFILL)
        vals.update({k: np.full(shape, np.nan) for k in PASS_BANDS} | error_bars.band_arrays(reg, vals, B, C, shape))
    vals = _marked(vals, np.broadcast_to(np.asarray(S) > np.asarray(C), shape), LEN_PASS_REASON)
    return _marked(vals, np.broadcast_to(beyond_window(dep.model, C), shape), WINDOW_REASON)


def evaluate_block(spec: Spec, block: tuple[slice, ...], into: dict | None = None) -> dict[str, np.ndarray]:
    """The variables over one chunk (``block``: one slice per axis of ``spec.grid``), each of the block's shape;
    with ``into`` (variable -> an array of the whole grid, filled in as variables appear) written straight into
    ``into[k][block]`` instead, and those views returned: an in-memory sweep copies each value once, not twice."""
    g = spec.grid
    nloop = g.loop_axes()
    arr_names, arr_sl = g.names[nloop:], block[nloop:]
    sub = tuple(s.stop - s.start for s in arr_sl)
    arrays = {}
    for i, (n, s) in enumerate(zip(arr_names, arr_sl)):
        shp = [1] * len(sub)
        shp[i] = sub[i]
        arrays[n] = np.asarray(g.values[nloop + i][s], dtype=float).reshape(shp)
    loop_shape = tuple(s.stop - s.start for s in block[:nloop])
    group = _serve_group if g.serving else _pass_group
    kept = (lambda k: True) if spec.keep is None else (lambda k: k in spec.keep or k == "reason")  # noqa: E731
    out: dict[str, np.ndarray] = {}
    for idx in np.ndindex(*loop_shape):
        point = {g.names[i]: g.values[i][block[i].start + idx[i]] for i in range(nloop)}
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            vals = group(spec, point, arrays, sub)
        for k, v in vals.items():
            if not kept(k):
                continue
            if k not in out:
                out[k] = _destination(k, into, g.shape, block, loop_shape + sub)
            out[k][idx] = np.broadcast_to(v, sub)
    if "bound" in out:
        np.putmask(out["bound"], out["reason"] != 0, -1)  # a bound only where the point is valid
    return out


def _destination(k: str, into: dict | None, grid_shape, block, shape) -> np.ndarray:
    """Where variable ``k`` of a block is written: a fresh array, or the block's view of ``into[k]``."""
    dtype = np.int8 if k in CODES else float
    if into is None:
        return np.empty(shape, dtype=dtype)
    if k not in into:
        into[k] = np.empty(grid_shape, dtype=dtype)
    return into[k][block]
