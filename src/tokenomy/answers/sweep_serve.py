"""A serving sweep's chunk (concurrency or rate): per deployment ``serving.steady.steady`` over (load, ISL, OSL)
points, as ``tk.serve`` runs them; ``plan`` takes ``tk.serve``'s layout for each point (answers/serve_layout.py)."""

from __future__ import annotations

import numpy as np

from tokenomy.answers import error_bars
from tokenomy.answers.energy_cols import power_of, serving_energy
from tokenomy.answers.requests import EngineRequest
from tokenomy.answers.resolve import beyond_window
from tokenomy.answers.serve_layout import candidates, per_point, ranking_batch
from tokenomy.answers.sweep_axes import DEGREES
from tokenomy.answers.sweep_spec import (NO_KV_REASON, PLAN_VARS, SERVE_BANDS, SERVE_ENERGY, SERVE_VARS, WINDOW_REASON,
                                         Spec, _marked, base)
from tokenomy.answers.workloads import engine_profile
from tokenomy.core import engine
from tokenomy.core.deployment import Deployment
from tokenomy.core.layout import Layout
from tokenomy.serving.steady import Prefix, Sending, steady


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
            w = {"concurrency" if closed else "rate": load[idx], "prefix": Prefix(spec.cache_hit),
                 "sending": Sending(spec.arrivals)}
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
        s = steady(dep, prof, isl=isl[idx], osl=osl[idx], sending=Sending(spec.arrivals),
                   prefix=Prefix(spec.cache_hit), **ld)
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
