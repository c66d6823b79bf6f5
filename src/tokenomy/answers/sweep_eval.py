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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenomy.answers import error_bars
from tokenomy.answers.energy_cols import pass_energy, power_of, serving_energy
from tokenomy.answers.resolve import beyond_window, deployment
from tokenomy.answers import objectives
from tokenomy.answers.layout_search import step_columns
from tokenomy.answers.objectives import FASTEST_STEP
from tokenomy.answers.requests import EngineRequest
from tokenomy.answers.serve_layout import candidates, per_point, ranking_batch
from tokenomy.answers.workloads import engine_profile, serving_kv_dtype
from tokenomy.answers.sweep_axes import DEGREES, Grid, _label
from tokenomy.core import engine
from tokenomy.core.deployment import Deployment, usd_per_mtok
from tokenomy.core.layout import Layout
from tokenomy.parallel.search import candidate_layouts
from tokenomy.serving.steady import steady
from tokenomy.units import CHECKPOINT

SWEEP_REASONS = ("len_pass exceeds the context", "no valid layout uses exactly the chips",
                 "no room for the KV cache of one sequence beside the weights",
                 "beyond the model's context window (max_position_embeddings)")
REASONS = engine.REASONS + SWEEP_REASONS
LEN_PASS_REASON, NO_LAYOUT_REASON, NO_KV_REASON, WINDOW_REASON = (len(engine.REASONS) + i for i in range(4))
PASS_VARS = {"step_s": "s", "compute_s": "s", "memory_s": "s", "comms_s": "s", "overhead_s": "s",
             "tokens_per_s_per_chip": "tokens/s", "tokens_per_s_per_user": "tokens/s", "usd_per_mtok": "USD/Mtok",
             "memory_per_chip_bytes": "bytes", "mfu": "1", "j_per_token_all_in": "J/token",
             "tokens_per_s_per_mw": "tokens/s/MW", "tco_usd_per_mtok": "USD/Mtok"}
PASS_ENERGY = ("j_per_token_all_in", "tokens_per_s_per_mw", "tco_usd_per_mtok")  # answers/energy_cols.py
SERVE_VARS = {"ttft_s": "s", "tpot_s": "s", "e2e_s": "s", "requests_per_s": "requests/s",
              "tokens_per_s_per_chip": "tokens/s", "tokens_per_s_per_user": "tokens/s",
              "usd_per_mtok_input": "USD/Mtok", "usd_per_mtok_output": "USD/Mtok", "kv_occupancy": "1",
              "capacity_limited": "1", "j_per_output_token": "J/token", "tokens_per_s_per_mw": "tokens/s/MW",
              "tco_usd_per_mtok_output": "USD/Mtok"}
SERVE_ENERGY = ("j_per_output_token", "tokens_per_s_per_mw", "tco_usd_per_mtok_output")
# each point's error band (answers/error_bars.py): the 10th and 90th percentile of the measured value
PASS_BANDS = {f"{k}_p{q}": u for k, u in (("step_s", "s"), ("tokens_per_s_per_chip", "tokens/s")) for q in (10, 90)}
SERVE_BANDS = {f"{k}_p{q}": u for k, u in (("ttft_s", "s"), ("tpot_s", "s"), ("tokens_per_s_per_chip", "tokens/s"))
               for q in (10, 90)}
CODES = {"bound": "index into engine.BOUNDS", "reason": "index into REASONS (0: valid and fits)"}
PLAN_VARS = ("plan_tp", "plan_ep", "plan_pp", "plan_dp", "plan_redundant_experts", "plan_attn_dp", "plan_kv_batch")


@dataclass(frozen=True)
class Spec:
    """Everything a worker needs to evaluate any chunk: the grid and the settings that are not axes."""

    grid: Grid
    plan: bool  # no layout degrees given: each point on its best layout
    budget: int  # points per engine call (plan: candidates x points)
    usd_per_chip_hour: float | None = None
    serving_engine: str = "vllm"  # vllm | sglang | trtllm: the serving engine whose profile runs a serving sweep
    max_num_tokens: int | None = None
    max_batch: int | None = None
    cache_hit: float = 0.0
    arrivals: str = "staggered"
    keep: tuple[str, ...] | None = None  # the variables to return (None: all); reason always

    def all_variables(self) -> dict[str, str]:
        """Variable -> unit (codes and plan degrees have no unit)."""
        out = dict(SERVE_VARS | SERVE_BANDS if self.grid.serving else PASS_VARS | PASS_BANDS)
        out.update({k: "" for k in CODES})
        if self.plan:
            out.update({k: "" for k in PLAN_VARS})
        return out

    def variables(self) -> dict[str, str]:
        out = self.all_variables()
        return out if self.keep is None else {k: u for k, u in out.items() if k in self.keep or k == "reason"}

    def computes(self, name: str) -> bool:
        """Whether a chunk computes variable ``name``: every one without ``variables=``; else the kept ones, the
        reason, and the values a kept error band scales (a sweep of step_s alone forms no energy, price or band)."""
        if self.keep is None or name in self.keep or name == "reason":
            return True
        bands = SERVE_BANDS if self.grid.serving else PASS_BANDS  # error_bars.band_arrays reads every banded field
        return any(b in self.keep for b in bands) and any(b.startswith(name + "_p") for b in bands)


_BASE: dict = {}


def base(spec: Spec, point: dict) -> Deployment:
    """The deployment of a loop point (layout left at 1 chip), cached per process (workers keep theirs)."""
    wd = point.get("weight_dtype", CHECKPOINT)
    key = tuple(_label(point.get(k, "")) for k in ("model", "hardware", "kv_dtype", "efficiency")) + (
        wd, spec.usd_per_chip_hour, spec.serving_engine)
    if key not in _BASE:
        kv = point.get("kv_dtype", "bf16")
        if kv == "auto":  # a serving sweep's default: the engine's KV dtype for the weights (tk.serve's)
            kv = serving_kv_dtype(point["model"], spec.serving_engine, wd)
        _BASE[key] = deployment(point["model"], point["hardware"], layout=Layout(),
                                weight_dtype=wd, kv_dtype=kv,
                                efficiency=point.get("efficiency", "calibrated"),
                                usd_per_chip_hour=spec.usd_per_chip_hour, serving_engine=spec.serving_engine)
    return _BASE[key]


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


def _marked(vals: dict, where, reason: int) -> dict:
    """The points ``where`` a sweep's door refuses them: NaN, with their ``reason`` (the other doors raise)."""
    if not np.any(where):
        return vals
    out = {k: np.where(where, np.nan, v) if k not in ("reason", "bound") else v for k, v in vals.items()}
    out["reason"] = np.where(where, reason, vals["reason"])
    return out


def _serve_layout(spec: Spec, dep: Deployment, point: dict, load, isl, osl):
    """Per point: the degrees given, else tk.serve's default at that point alone (answers.serve_layout: candidates
    ranked once per batch, ISL and OSL; each point's best of one steady call per candidate over its group)."""
    if not spec.plan:
        lay = Layout(*(int(point.get(d, 1)) for d in DEGREES))
        return [(lay, np.arange(load.size))]
    chips = int(point.get("chips") or dep.hardware.num_chips)
    eng = EngineRequest(spec.serving_engine, spec.max_num_tokens, spec.max_batch)
    cap = float(spec.max_batch or eng.profile().max_batch)  # as tk.serve: the engine's batch cap
    closed = "concurrency" in spec.grid.names
    b0 = np.minimum(load, cap)
    found: dict = {}
    keys = np.stack([b0 if closed else np.zeros_like(b0), isl, osl], -1)  # an open loop ranks at one batch
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = np.ravel(inv)
    for j, (b, i, o) in enumerate(uniq):
        idx = np.flatnonzero(inv == j)
        first, rest, fallback = candidates(dep, chips, ranking_batch(b if closed else None, cap), i, o, eng)
        if not first:  # none holds a sequence: the search's first, which says why
            lays, pick = [fallback], np.zeros(idx.size, dtype=int)
        else:  # each point's best, from one steady call per candidate over the group's points
            w = {"concurrency" if closed else "rate": load[idx], "cache_hit": spec.cache_hit,
                 "arrivals": spec.arrivals}
            lays, pick = per_point(dep, first, rest, eng, i, o, w)
        for k in np.unique(pick):
            lay = lays[k]
            found.setdefault(lay.label(), [lay, []])[1].extend(idx[pick == k].tolist())
    return [(lay, np.array(sorted(ix), dtype=int)) for lay, ix in found.values()]


def _serve_group(spec: Spec, point: dict, arrays: dict, shape) -> dict:
    dep0 = base(spec, point)
    closed = "concurrency" in spec.grid.names
    flat = lambda x: np.ravel(np.broadcast_to(x, shape)).astype(float)  # noqa: E731
    load = flat(arrays["concurrency" if closed else "rate"])
    isl, osl = flat(arrays.get("isl", 1024.0)), flat(arrays.get("osl", 1024.0))
    keys = (*SERVE_VARS, *SERVE_BANDS, "bound", "reason") + (PLAN_VARS if spec.plan else ())
    out = {k: np.full(load.size, np.nan) for k in keys if spec.computes(k) or k in PLAN_VARS}
    for lay, idx in _serve_layout(spec, dep0, point, load, isl, osl):
        dep = dep0.with_(layout=lay)
        prof = engine_profile(spec.serving_engine, int(lay.tp), spec.max_num_tokens, spec.max_batch)
        ld = {"concurrency" if closed else "rate": load[idx]}
        s = steady(dep, prof, isl=isl[idx], osl=osl[idx], cache_hit=spec.cache_hit, arrivals=spec.arrivals, **ld)
        with np.errstate(divide="ignore", invalid="ignore"):
            vals = {"ttft_s": s.ttft_s, "tpot_s": s.tpot_s, "e2e_s": s.e2e_s, "requests_per_s": s.requests_per_s,
                    "tokens_per_s_per_chip": s.output_tokens_per_s / dep.chips, "tokens_per_s_per_user": 1.0 / s.tpot_s,
                    "usd_per_mtok_input": s.usd_per_mtok_input, "usd_per_mtok_output": s.usd_per_mtok_output,
                    "kv_occupancy": s.kv_occupancy, "capacity_limited": s.capacity_limited, "bound": s.bound}
            if any(spec.computes(k) for k in SERVE_ENERGY):
                e = serving_energy(power_of(dep.hardware), s, dep.chips, isl[idx])
                vals.update({k: e[k] for k in SERVE_ENERGY})
        if any(spec.computes(k) for k in SERVE_BANDS):
            vals |= error_bars.band_arrays(error_bars.regime_of(dep, spec.serving_engine, error_bars.SERVE), vals, s.batch,
                                           isl[idx] + osl[idx] / 2.0, idx.shape)
        structure = int(np.asarray(dep.work(float(lay.dp), 1.0).structure))
        vals["reason"] = np.where(s.fits, 0, structure if structure and structure < engine.FIRST_POINT_REASON
                                  else NO_KV_REASON)
        if spec.plan:
            d = lay.as_dict()
            vals.update({f"plan_{k}": float(d[k]) for k in ("tp", "ep", "pp", "dp", "redundant_experts", "attn_dp",
                                                               "kv_batch")})
        for k, v in vals.items():
            if k in out:
                out[k][idx] = np.broadcast_to(np.asarray(v, float), idx.shape)
    return _marked({k: v.reshape(shape) for k, v in out.items()},
                   beyond_window(dep0.model, (isl + osl).reshape(shape)), WINDOW_REASON)


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
